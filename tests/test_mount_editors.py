"""Editors saving through a real mount, each in its exact syscall pattern (from the FUSE
field notes): VS Code, JetBrains safe write, vim (in place and with a backup rename, and
the real vim.tiny / vim.basic when installed), emacs, gedit. Each save must leave the
final content in the store as exactly one new revision authored by the saving process.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from memfs.store.base import Store
from tests.fixtures.mount import MY_ACTOR, MountHandle, made_by, wait_for

pytestmark = pytest.mark.fuse

# This process through the mount: its user and program, its pid the operation's detail.
ME = (MY_ACTOR, f"pid {os.getpid()}")
OLD = b"# Notes\n\nold line\n"
NEW = b"# Notes\n\nnew line, saved by an editor\n" * 3
CONTENT_KINDS = ("create", "modify")


def _content_revisions(store: Store, since: int, paths: set[str]) -> int:
    """How many new content revisions the save made, on the file or its temp names."""
    return sum(
        1
        for c in store.changes(since)
        if c.kind in CONTENT_KINDS and c.rev is not None and c.path in paths
    )


def _settled(store: Store, path: str, data: bytes, timeout: float = 10) -> None:
    wait_for(lambda: store.read(path)[0] == data, timeout, what=f"{path} committed")


def _names(store: Store) -> set[str]:
    return {e.path for e in store.walk()}


class Notes(NamedTuple):
    mount: MountHandle
    store: Store
    path: Path
    since: int  # the change-feed position once OLD is committed


@pytest.fixture
def notes(memfs_mount: MountHandle) -> Notes:
    """``notes.md`` with OLD content, committed through the mount."""
    store = memfs_mount.store()
    path = memfs_mount.mountpoint / "notes.md"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    os.write(fd, OLD)
    os.fsync(fd)
    os.close(fd)
    assert store.read("notes.md")[0] == OLD
    return Notes(memfs_mount, store, path, store.last_seq())


def _assert_one_save(store: Store, since: int, temps: frozenset[str] = frozenset()) -> None:
    assert store.read("notes.md")[0] == NEW
    assert _content_revisions(store, since, {"notes.md", *temps}) == 1
    latest = store.history("notes.md", 1)[0]
    assert latest.sha256 == hashlib.sha256(NEW).hexdigest()
    assert made_by(store, "notes.md", latest.rev) == ME


# --- editors ----------------------------------------------------------------------------


def test_vscode_save(notes: Notes) -> None:
    _, store, path, since = notes
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.pwrite(fd, NEW, 0)
    os.fdatasync(fd)
    os.close(fd)
    _assert_one_save(store, since)
    assert stat.S_IMODE(store.stat("notes.md").mode) == 0o640


def test_jetbrains_safe_write(notes: Notes) -> None:
    _, store, path, since = notes
    tmp = path.with_name("notes.md___jb_tmp___")
    old = path.with_name("notes.md___jb_old___")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    os.write(fd, NEW)
    os.close(fd)
    os.rename(path, old)
    os.rename(tmp, path)
    os.unlink(old)
    assert path.read_bytes() == NEW
    _settled(store, "notes.md", NEW)
    _assert_one_save(store, since, frozenset({tmp.name}))
    assert _names(store) == {"notes.md"}


def _vim_swap(swap: Path) -> int:
    fd = os.open(swap, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    for page in range(3):
        os.pwrite(fd, bytes([page + 1]) * 4096, page * 4096)
        os.fsync(fd)
    os.fchmod(fd, 0o600)
    return fd


def _vim_probe(directory: Path) -> None:
    # vim checks it may create files with the right owner by making and deleting "4913".
    probe = directory / "4913"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    os.fchown(fd, os.getuid(), os.getgid())
    os.close(fd)
    os.unlink(probe)


@pytest.mark.parametrize("backup", [False, True], ids=["in-place", "backup-rename"])
def test_vim_save(notes: Notes, backup: bool) -> None:
    _, store, path, since = notes
    swap = path.with_name(".notes.md.swp")
    swap_fd = _vim_swap(swap)
    try:
        _vim_probe(path.parent)
        if backup:
            os.rename(path, path.with_name("notes.md~"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        os.write(fd, NEW)
        os.fsync(fd)
        os.fchmod(fd, 0o640)
        os.close(fd)
        if backup:
            os.unlink(path.with_name("notes.md~"))
    finally:
        os.close(swap_fd)
        os.unlink(swap)
    _assert_one_save(store, since)
    assert stat.S_IMODE(store.stat("notes.md").mode) == 0o640
    assert _names(store) == {"notes.md"}


@pytest.mark.parametrize("program", ["vim.tiny", "vim.basic"])
def test_real_vim_edits_through_the_mount(notes: Notes, program: str) -> None:
    vim = shutil.which(program)
    if vim is None:
        pytest.skip(f"{program} is not installed (the syscall-level vim tests still ran)")
    mount, store, path, since = notes
    proc = subprocess.Popen(
        [
            vim,
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-N",
            "-es",
            "-c",
            "%s/old line/new line, saved by vim/",
            "-c",
            "wq",
            str(path),
        ],
        cwd=mount.mountpoint,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    expected = OLD.replace(b"old line", b"new line, saved by vim")
    assert path.read_bytes() == expected
    _settled(store, "notes.md", expected)
    latest = store.history("notes.md", 1)[0]
    actor, detail = made_by(store, "notes.md", latest.rev)
    assert (actor, detail) == (f"{MY_ACTOR.split()[0]} ({program})", f"pid {proc.pid}")
    assert _content_revisions(store, since, {"notes.md"}) == 1
    assert _names(store) == {"notes.md"}  # swap file and probe are gone


def test_emacs_save(notes: Notes) -> None:
    _, store, path, since = notes
    lock = path.with_name(".#notes.md")
    os.symlink(
        f"{os.environ.get('USER', 'root')}@{socket.gethostname()}.{os.getpid()}:1700000000", lock
    )
    assert os.readlink(lock).endswith(":1700000000")
    os.rename(path, path.with_name("notes.md~"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.write(fd, NEW)
    os.fsync(fd)
    os.close(fd)
    os.chmod(path, 0o640)
    os.unlink(lock)
    _assert_one_save(store, since)
    assert store.read("notes.md~")[0] == OLD  # emacs keeps its backup
    assert _names(store) == {"notes.md", "notes.md~"}


def test_gedit_save_over_an_open_file(notes: Notes) -> None:
    _, store, path, since = notes
    held = os.open(path, os.O_RDONLY)  # gedit keeps the document open while saving
    try:
        assert os.read(held, 100) == OLD
        tmp = path.with_name(".goutputstream-Q1W2E3")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o640)
        os.write(fd, NEW)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, path)
    finally:
        os.close(held)
    assert path.read_bytes() == NEW
    _settled(store, "notes.md", NEW)
    _assert_one_save(store, since, frozenset({tmp.name}))
    assert _names(store) == {"notes.md"}
