"""What the mount's operations do when the daemon dies, or its store goes away, with no
kernel: a daemon-like child process drives MemfsOperations and dies without cleanup at a
chosen point (tests/fixtures/ops.py ``crash``), then another MemfsOperations on the same
journal directory calls recover(), as the next mount does before it serves. And a store
whose storage goes away under a running MemfsOperations (the SQLite file deleted, the
PostgreSQL tree dropped, the server stopped).
"""

from __future__ import annotations

import os
import stat
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.errors import NotFound
from memfs.store import open_store
from memfs.store.base import Store
from tests.fixtures.mount import sqlite_url, wait_for
from tests.fixtures.ops import Kernel, actor, crash
from tests.fixtures.postgres import PgCluster

MakeKernel = Callable[..., Kernel]
Program = Callable[[str], int]

FILE = stat.S_IFREG
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
W, APPEND = os.O_WRONLY, os.O_WRONLY | os.O_APPEND


def journals(k: Kernel) -> list[str]:
    return sorted(p.name for p in k.journal.glob("*.journal"))


def authors(store: Store, path: str) -> list[str]:
    return [r.author for r in reversed(store.history(path))]


# --- a daemon that died --------------------------------------------------------------


def test_what_a_dead_daemon_acknowledged_is_saved_by_the_next_one(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.write("notes.md", b"0123456789", author="someone")
    other.write("log.md", b"a\n", author="someone")
    vim = programs("vim")
    crash(
        k,
        f"fh = ops.create('/new.md', {FILE | 0o640}, {CREATE})\n"
        f"ops.write('/new.md', b'fresh\\n', 0, fh, {W})\n"
        f"ops.chmod('/new.md', {FILE | 0o600})\n"
        f"ops.write('/notes.md', b'AB', 2, 0, {W})\n"
        f"ops.truncate('/notes.md', 8, None)\n"
        f"ops.write('/log.md', b'mine\\n', 0, 0, {APPEND})\n",  # a stale kernel offset
        pid=vim,
    )
    with pytest.raises(NotFound):
        other.stat("new.md")  # acknowledged, never committed
    assert journals(k) != []  # what it acknowledged is in its journal
    other.write("log.md", b"a\ntheirs\n", author="other mount")  # before the next mount
    k2 = kernel(start=False)
    assert sorted(k2.ops.recover()) == ["log.md", "new.md", "notes.md"]
    data, entry = other.read("new.md")
    assert (data, entry.mode) == (b"fresh\n", 0o600)
    assert other.read("notes.md")[0] == b"01AB4567"
    assert other.read("log.md")[0] == b"a\ntheirs\nmine\n"  # still an append: rebased
    for path in ("new.md", "notes.md", "log.md"):
        assert authors(other, path)[-1] == actor("vim"), path
    assert not any(name.startswith(f"{vim}-") for name in journals(k))
    k2.ops.shutdown()
    assert journals(k) == []  # nothing pending anywhere: no journal left


@pytest.mark.parametrize(
    ("die", "after"),
    [
        # Died as the rebased append was about to be written: saved once, at recovery,
        # after what was written since.
        ("before-write-2", b"a\ntheirs\nlater\nmine\n"),
        # Died right after it was written, before its journal said so: the LANDING
        # record shows it is in the store, so it is not appended again.
        ("after-write-2", b"a\ntheirs\nmine\nlater\n"),
    ],
)
def test_a_committed_append_is_never_applied_twice(
    kernel: MakeKernel, programs: Program, die: str, after: bytes
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.write("log.md", b"a\n", author="someone")
    sh = programs("sh")
    # Write 1 is the compare-and-set on the buffer's base, refused because another
    # writer appended in between; write 2 is the append rebased onto that.
    crash(
        k,
        f"ops.write('/log.md', b'mine\\n', 2, 0, {APPEND})\n"
        f"other = open_store({k.url!r})\n"
        "other.write('log.md', b'a\\ntheirs\\n', author='other mount')\n"
        "other.close()\n"
        "ops.fsync('/log.md', 0, 0)\n",
        pid=sh,
        die=die,
    )
    other.write("log.md", other.read("log.md")[0] + b"later\n", author="another host")
    k2 = kernel(start=False)
    recovered = k2.ops.recover()
    assert recovered == (["log.md"] if die.startswith("before") else [])
    assert other.read("log.md")[0] == after
    assert authors(other, "log.md").count(actor("sh")) == 1


@pytest.mark.parametrize(
    ("die", "stored"),
    [
        # Died as the save was about to be written: the rename never answered, so the
        # temporary file it acknowledged writes to is what the next mount saves.
        ("before-write-1", {"notes.md": b"old\n", ".notes.tmp": b"new\n"}),
        # Died right after the write, before its journal said so: its LANDING record
        # names the saved file, so the temporary file is not saved again beside it.
        ("after-write-1", {"notes.md": b"new\n"}),
    ],
)
def test_a_save_written_as_one_write_is_recovered_once(
    kernel: MakeKernel, programs: Program, die: str, stored: dict[str, bytes]
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.write("notes.md", b"old\n", author="someone", mode=0o644)
    crash(
        k,
        "ops.getattr('/notes.md')\n"
        f"fh = ops.create('/.notes.tmp', {FILE | 0o644}, {CREATE})\n"
        f"ops.write('/.notes.tmp', b'new\\n', 0, fh, {W})\n"
        "ops.rename('/.notes.tmp', '/notes.md', 0)\n",
        pid=programs("sed"),
        die=die,
    )
    k2 = kernel(start=False)
    k2.ops.recover()
    assert {e.path: other.read(e.path)[0] for e in other.walk("")} == stored
    assert authors(other, "notes.md").count(actor("sed")) == (die == "after-write-1")


def test_a_recovered_edit_that_meets_another_on_its_line_is_a_conflict_copy(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.write("notes.md", b"title: draft\nbody\n", author="someone")
    crash(k, f"ops.write('/notes.md', b'final', 7, 0, {W})\n", pid=programs("vim"))
    other.write("notes.md", b"title: shipped\nbody\n", author="other mount")
    k2 = kernel(start=False)
    assert k2.ops.recover() == ["notes.md"]
    assert other.read("notes.md")[0] == b"title: shipped\nbody\n"  # theirs stays
    (conflict,) = k2.ops.writes.health.conflicts
    copy = conflict.partition(" -> ")[2]
    assert copy.startswith("notes.conflict-") and copy.endswith("-vim.md")  # from the journal
    assert other.read(copy)[0] == b"title: final\nbody\n"


# --- the store going away -----------------------------------------------------------------


def _lost(k: Kernel) -> str:
    """The mount's word that its store went away, once it says what it saved (first it
    says what happened, then it commits and rescues what it holds)."""

    def told() -> str:
        lost = k.ops.writes.health.lost
        return lost if "saved" in lost or "on the server" in lost else ""

    return wait_for(told, 5, what="the mount to see its store gone")


def _eio(call: Callable[[], object]) -> None:
    with pytest.raises(OSError) as caught:
        call()
    assert caught.value.errno == 5, caught.value  # EIO


def _refuses_every_change(k: Kernel) -> None:
    ops = k.ops
    for call in (
        lambda: ops.create("/late.md", FILE | 0o600, CREATE),
        lambda: ops.write("/before.md", b"late\n", 7, 0, APPEND),
        lambda: ops.truncate("/before.md", 0, None),
        lambda: ops.mkdir("/late", 0o700),
        lambda: ops.symlink("/late-link", "x"),
        lambda: ops.rename("/before.md", "/moved.md", 0),
        lambda: ops.unlink("/before.md"),
        lambda: ops.chmod("/before.md", FILE | 0o644),
    ):
        _eio(call)


def _delete_with_pending(k: Kernel, db: Path, path: str) -> int:
    """Write ``path`` (acknowledged, not committed), then delete the store's files from
    under the mount; returns the file's handle."""
    fh = k.ops.create(path, FILE | 0o600, CREATE)
    k.ops.write(path, b"acknowledged\n", 0, fh, W)
    # The mount has been following the feed for a moment, as any running daemon has
    # (so its follower holds a connection).
    k.other().write("elsewhere.md", b"x", author="someone")
    assert k.ops.show_upto(k.store.last_seq(), 5)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return fh


def test_a_deleted_store_file_is_saved_back_and_every_change_answers_eio(
    kernel: MakeKernel, programs: Program, tmp_path: Path
) -> None:
    db = tmp_path / "memory.db"
    k = kernel(sqlite_url(db))
    k.pid = programs("vim")
    fh = k.ops.create("/before.md", FILE | 0o600, CREATE)
    k.ops.write("/before.md", b"before\n", 0, fh, W)
    k.ops.fsync("/before.md", 0, fh)
    _delete_with_pending(k, db, "/pending.md")
    lost = _lost(k)
    assert f"the store file {db} was deleted" in lost
    assert f"memfs saved what it held to {db}" in lost
    assert k.health[-1].lost == lost  # published for `memfs status`
    _refuses_every_change(k)
    assert k.ops.read("/before.md", 100, 0, 0) == b"before\n"  # the open handle still reads
    k.ops.shutdown()
    with open_store(sqlite_url(db)) as saved:
        assert saved.read("before.md")[0] == b"before\n"
        assert saved.read("pending.md")[0] == b"acknowledged\n"


def test_an_fsync_from_a_thread_new_to_a_deleted_store_file_saves_its_data(
    kernel: MakeKernel, programs: Program, tmp_path: Path
) -> None:
    # libfuse starts worker threads as load asks; one new to the store cannot open a
    # store file deleted a moment ago. Its fsync must not answer EIO for data the mount
    # then saves after all: the follower looks at once and saves what is pending.
    db = tmp_path / "memory.db"
    k = kernel(sqlite_url(db))
    k.pid = programs("vim")
    fh = _delete_with_pending(k, db, "/acked.md")
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(_fsync(k, "/acked.md", fh)))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert outcome == [0]
    assert f"the store file {db} was deleted" in _lost(k)
    k.ops.shutdown()
    with open_store(sqlite_url(db)) as saved:
        assert saved.read("acked.md")[0] == b"acknowledged\n"


def _fsync(k: Kernel, path: str, fh: int) -> object:
    try:
        return k.ops.fsync(path, 0, fh)
    except OSError as e:
        return e


def test_a_dropped_postgresql_tree_is_lost_and_every_change_answers_eio(
    kernel: MakeKernel, pg_cluster: PgCluster
) -> None:
    tree = "t" + uuid.uuid4().hex[:12]
    k = kernel(pg_cluster.url(tree))
    fh = k.ops.create("/before.md", FILE | 0o600, CREATE)
    k.ops.write("/before.md", b"before\n", 0, fh, W)
    k.ops.fsync("/before.md", 0, fh)
    row = f"(SELECT id FROM memfs.trees WHERE name = '{tree}')"
    pg_cluster.psql(
        f"DELETE FROM memfs.changes WHERE tree = {row}; DELETE FROM memfs.trees WHERE id = {row};"
    )
    lost = _lost(k)
    assert f"the tree {tree!r} was dropped" in lost
    assert "what was written is on the server" in lost  # nothing for memfs to rescue
    _refuses_every_change(k)


def test_while_the_postgresql_server_is_away_cached_files_read_and_open_files_take_writes(
    kernel: MakeKernel, own_pg_cluster: PgCluster
) -> None:
    k = kernel(own_pg_cluster.url())
    other = k.other()
    other.mkdir("dir", author="someone")
    other.write("dir/seen.md", b"seen\n", author="someone")
    k.ops.show_upto(other.last_seq(), 10)  # the follower has seen them: nothing to forget
    assert k.ops.read("/dir/seen.md", 100, 0, 0) == b"seen\n"
    k.ops.getattr("/dir")  # looked up: the mount knows it now
    k.ops.write("/dir/seen.md", b"more\n", 5, 0, APPEND)  # a file being written
    k.ops.create("/dir/new.md", FILE | 0o600, CREATE)  # forgets dir's cached entry
    own_pg_cluster.stop()
    wait_for(lambda: k.ops.writes.health.store_problem, 10, what="the outage noticed")
    assert stat.S_ISDIR(k.ops.getattr("/dir")["st_mode"])  # the last answer stands in
    k.ops.write("/dir/seen.md", b"even more\n", 10, 0, APPEND)  # held in the journal
    _eio(lambda: k.ops.getattr("/dir/never-seen.md"))  # nothing to stand in: EIO at once
    _eio(lambda: k.ops.mkdir("/dir/sub", 0o700))
    own_pg_cluster.start()
    wait_for(lambda: not k.ops.writes.health.store_problem, 10, what="the server back")
    k.ops.fsync("/dir/seen.md", 0, 0)
    with open_store(k.url) as after:  # a new door: the old handle's connection died
        assert after.read("dir/seen.md")[0] == b"seen\nmore\neven more\n"
