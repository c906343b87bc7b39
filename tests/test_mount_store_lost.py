"""The store under a live mount is watched: a deleted, replaced or moved SQLite file, a
dropped PostgreSQL tree. Within a second the mount says so, writes answer EIO, and
nothing it acknowledged is lost: the whole store as the daemon saw it is saved back to
its path (or beside it) and `memfs umount` exits non-zero saying where."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.errors import MountError
from memfs.mount import state
from memfs.store import open_store
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for
from tests.fixtures.postgres import PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))


def _lost(mount: MountHandle) -> str:
    record = state.lookup(mount.mountpoint)
    return record.lost if record is not None else ""


def _write_refused(path: Path) -> bool:
    try:
        path.write_text("late\n")
    except OSError as exc:
        assert exc.errno == errno.EIO, exc
        return True
    return False


def test_a_deleted_store_file_is_saved_back_and_writes_answer_eio(
    mount_factory: Callable[..., MountHandle],
) -> None:
    m = mount_factory()
    assert m.db_path is not None
    for i in range(3):
        (m.mountpoint / f"before{i}.md").write_text(f"before {i}\n")
    wait_for(lambda: all(_committed(m, f"before{i}.md") for i in range(3)), 5, what="commits")
    for suffix in ("", "-wal", "-shm"):
        Path(str(m.db_path) + suffix).unlink(missing_ok=True)
    # Writes acknowledged in the instant before the mount notices must survive too.
    acked: list[str] = []
    for i in range(5):
        try:
            (m.mountpoint / f"after{i}.md").write_text(f"after {i}\n")
        except OSError:
            break
        acked.append(f"after{i}.md")
    if acked:
        with open(m.mountpoint / acked[0], "rb") as f:
            os.fsync(f.fileno())
    problem = wait_for(lambda: _lost(m), 5, what="the mount to see the file gone")
    assert f"the store file {m.db_path} was deleted" in problem
    assert f"memfs saved what it held to {m.db_path}" in problem
    assert wait_for(lambda: _write_refused(m.mountpoint / "refused.md"), 5)
    status = subprocess.run([MEMFS, "status"], capture_output=True, text=True, timeout=30)
    assert " lost " in status.stdout and problem in status.stdout, status.stdout
    with pytest.raises(MountError) as stopped:
        m.stop()
    assert str(m.db_path) in str(stopped.value)
    # Mounted again, the store saved back holds everything acknowledged.
    m.restart()
    names = sorted(p.name for p in m.mountpoint.iterdir())
    assert names == sorted([f"before{i}.md" for i in range(3)] + acked)
    assert (m.mountpoint / "before2.md").read_text() == "before 2\n"


def test_a_store_file_replaced_by_another_is_left_alone_and_saved_beside(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    m = mount_factory()
    assert m.db_path is not None
    (m.mountpoint / "mine.md").write_text("mine\n")
    wait_for(lambda: _committed(m, "mine.md"), 5, what="mine.md committed")
    other = tmp_path / "other.db"
    with open_store(sqlite_url(other)) as s:
        s.write("theirs.md", b"theirs\n", author="someone")
    for suffix in ("", "-wal", "-shm"):
        Path(str(m.db_path) + suffix).unlink(missing_ok=True)
    os.replace(other, m.db_path)
    problem = wait_for(lambda: _lost(m), 5, what="the mount to see the file replaced")
    assert "was deleted and another file put there" in problem
    saved = Path(problem.rsplit("memfs saved what it held to ", 1)[1])
    assert saved.parent.name == "recovered" and saved != m.db_path
    with open_store(sqlite_url(saved)) as s:
        assert s.read("mine.md")[0] == b"mine\n"
    with open_store(m.store_url) as s:  # the file put there is not touched
        assert [e.path for e in s.walk()] == ["theirs.md"]
    with pytest.raises(MountError):
        m.stop()


def _committed(m: MountHandle, name: str) -> bool:
    with open_store(m.store_url) as s:
        try:
            s.stat(name)
        except Exception:
            return False
        return True


def test_a_dropped_postgresql_tree_is_seen_and_writes_answer_eio(
    mount_factory: Callable[..., MountHandle], pg_cluster: PgCluster
) -> None:
    m = mount_factory(store_url=pg_cluster.url("dropped"))
    (m.mountpoint / "a.md").write_text("a\n")
    wait_for(lambda: _committed(m, "a.md"), 5, what="a.md committed")
    tree = "(SELECT id FROM memfs.trees WHERE name = 'dropped')"
    pg_cluster.psql(
        f"DELETE FROM memfs.changes WHERE tree = {tree};"
        " DELETE FROM memfs.trees WHERE name = 'dropped';"
    )
    problem = wait_for(lambda: _lost(m), 5, what="the mount to see the tree gone")
    assert "the tree 'dropped' was dropped" in problem
    assert wait_for(lambda: _write_refused(m.mountpoint / "b.md"), 5)
    with pytest.raises(MountError):
        m.stop()
