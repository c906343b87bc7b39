"""A file's history survives every save pattern through a real mount: the handler's
atomic replace, JetBrains' safe write and emacs' backup rename each add exactly one
revision, authored by the saving process, on top of all the earlier ones."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.handler import MemoryHandler
from memfs.handler.tree import DirTree
from memfs.mount.options import MountOptions
from memfs.store.base import Revision, Store
from tests.fixtures.mount import MountHandle, made_by, wait_for

pytestmark = pytest.mark.fuse

V1 = b"# Notes\n\nfirst line\n"
V2 = b"# Notes\n\nsecond line\n"
NEW = b"# Notes\n\nsaved line\n"


def _write_through(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _history_of_length(store: Store, length: int) -> list[Revision]:
    def probe() -> list[Revision] | None:
        history = store.history("notes.md")
        return history if len(history) == length else None

    return wait_for(probe, what=f"notes.md with {length} revisions")


@pytest.fixture
def notes(memfs_mount: MountHandle) -> tuple[Store, Path, list[Revision]]:
    return _notes_on(memfs_mount)


def _notes_on(mount: MountHandle) -> tuple[Store, Path, list[Revision]]:
    """``notes.md`` written twice through the mount: a history of two revisions."""
    store = mount.store()
    path = mount.mountpoint / "notes.md"
    _write_through(path, V1)
    _write_through(path, V2)
    before = _history_of_length(store, 2)
    assert [store.read_revision("notes.md", r.rev) for r in before] == [V2, V1]
    return store, path, before


def _assert_one_more(store: Store, before: list[Revision], pid: int) -> None:
    history = _history_of_length(store, len(before) + 1)
    newest = history[0]
    assert history[1:] == before
    assert made_by(store, "notes.md", newest.rev)[1] == f"pid {pid}", newest.author
    assert newest.sha256 == hashlib.sha256(NEW).hexdigest()
    assert store.read_revision("notes.md", newest.rev) == NEW
    assert store.stat("notes.md").rev == newest.rev
    assert store.read("notes.md")[0] == NEW


def _save_in_child(script: str, path: Path) -> int:
    """Run a save in another process; return its pid (the author the mount must name).
    Its own session: a child that keeps this process's name and process group would be
    part of this run's operation (memfs.mount.bursts), as when pytest runs as
    ``python -m pytest``."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(path), NEW.decode()],
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _, err = child.communicate(timeout=30)
    assert child.returncode == 0, err.decode()
    return child.pid


def test_handler_str_replace_adds_one_revision(
    notes: tuple[Store, Path, list[Revision]], memfs_mount: MountHandle
) -> None:
    store, _, before = notes
    handler = MemoryHandler(memfs_mount.mountpoint)
    result = handler.str_replace("/memories/notes.md", "second line", "saved line")
    assert not result.is_error, result.content
    _assert_one_more(store, before, os.getpid())
    assert {e.path for e in store.walk()} == {"notes.md"}


def test_a_handler_write_on_a_mount_is_one_change_at_the_file(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    # On a memfs mount the rename commits the temporary file whole and durably, so the
    # handler leaves its fsync out and the mount writes the save as one change: no
    # record of the temporary file, one undoable modify. (A quiet period no pause of a
    # loaded machine reaches: with the default 0.1 s, a run beside a CPU burner and
    # two pjdfstest suites committed the temporary file before its rename.)
    memfs_mount = mount_factory(options=MountOptions(commit_quiet_period=60.0))
    store, _, _ = _notes_on(memfs_mount)
    seq = store.last_seq()
    handler = MemoryHandler(memfs_mount.mountpoint)
    for old, new in (("second line", "saved line"), ("saved line", "second line")):
        result = handler.str_replace("/memories/notes.md", old, new)
        assert not result.is_error, result.content
    changes = [(c.kind, c.path) for c in store.changes(seq)]
    assert changes == [("modify", "notes.md"), ("modify", "notes.md")]
    assert store.read("notes.md")[0] == V2
    assert DirTree(memfs_mount.mountpoint).rename_commits
    assert not DirTree(tmp_path).rename_commits


def test_jetbrains_safe_write_adds_one_revision(notes: tuple[Store, Path, list[Revision]]) -> None:
    store, path, before = notes
    pid = _save_in_child(
        """
        import os, sys
        path, data = sys.argv[1], sys.argv[2].encode()
        tmp, old = path + "___jb_tmp___", path + "___jb_old___"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        os.write(fd, data)
        os.close(fd)
        os.rename(path, old)
        os.rename(tmp, path)
        os.unlink(old)
        """,
        path,
    )
    _assert_one_more(store, before, pid)
    # The old name saw one arrival; after its delete that revision is its tombstone.
    [old] = store.history("notes.md___jb_old___")
    assert store.read_revision("notes.md___jb_old___", old.rev) == V2


def test_emacs_backup_save_adds_one_revision(notes: tuple[Store, Path, list[Revision]]) -> None:
    store, path, before = notes
    pid = _save_in_child(
        """
        import os, sys
        path, data = sys.argv[1], sys.argv[2].encode()
        os.rename(path, path + "~")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.chmod(path, 0o640)
        """,
        path,
    )
    _assert_one_more(store, before, pid)
    assert store.read("notes.md~")[0] == V2
    [backup] = store.history("notes.md~")
    assert made_by(store, "notes.md~", backup.rev)[1] == f"pid {pid}", backup.author
