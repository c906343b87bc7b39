"""One SQLite store shared by several handles and processes on a disk that fills up.

A reproduction, without FUSE, of tests/test_mount_durability.py's "commit that fails
after the fact": the test process keeps store handles open while daemons come and go.
Opening a second handle in one process used to read the file's header with a plain
open()/close(), and closing any descriptor of a file drops every POSIX lock the process
holds on it, SQLite's included. The next process to close its last connection then
believed it was the last user, checkpointed and deleted the WAL and -shm files under
the live handles; those kept reading a stale WAL index (missing commits, "database disk
image is malformed" once both sides wrote).
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.errors import StoreFull
from memfs.store import Store, open_store
from tests.fixtures.disks import fill
from tests.sqlite_worker import blob

ROOT = Path(__file__).resolve().parent.parent
LATE = 256 << 10  # larger than what is left once the disk is filled
BEFORE = b"committed\n"


class Session:
    """A store open in another process (tests.sqlite_worker's ``session``), driven line
    by line like a daemon that stays up between commands."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sqlite_worker", "session", str(db)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.ask(None) == "ready"

    def ask(self, line: str | None) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if line is not None:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer:
            _, err = self.proc.communicate(timeout=30)
            pytest.fail(f"the session died on {line!r}: {err}")
        return answer

    def close(self) -> None:
        """End the session: its store closes, as a daemon's does when it stops."""
        _, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err


@pytest.fixture
def sessions() -> Iterator[list[Session]]:
    started: list[Session] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
        s.proc.communicate(timeout=30)


@pytest.fixture
def stores() -> Iterator[list[Store]]:
    """Handles opened by the test, closed before the disk's finalizer unmounts it."""
    opened: list[Store] = []
    yield opened
    for s in opened:
        with contextlib.suppress(Exception):
            s.close()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BEFORE_SHA = f"sha {_sha(BEFORE)}"


def _read_in_a_new_thread(store: Store, path: str) -> bytes:
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(store.read(path)[0]))
    t.start()
    t.join(timeout=30)
    assert got, "the read in a new thread failed"
    return got[0]


def test_a_full_disk_refuses_writes_serves_reads_and_loses_nothing_across_processes(
    small_disk: Path, sessions: list[Session], stores: list[Store]
) -> None:
    db = small_disk / "memory.db"
    mine = open_store(str(db))
    stores.append(mine)
    mine.write("before.txt", BEFORE, author="test")
    # A second handle in this process, as the mount tests open one per check: opening
    # it must not cost the first one its locks.
    again = open_store(str(db))
    stores.append(again)
    assert again.read("before.txt")[0] == BEFORE
    first = Session(db)
    sessions.append(first)
    assert first.ask("read before.txt") == BEFORE_SHA

    filler = fill(small_disk)
    assert first.ask(f"write late.bin {LATE}") == "full"
    with pytest.raises(StoreFull):
        mine.write("mine.bin", blob("mine.bin", LATE), author="test")
    # The disk is full: writes fail, but every handle still reads, in any thread, and so
    # does one opened now (in this process or another).
    assert mine.read("before.txt")[0] == BEFORE
    assert _read_in_a_new_thread(again, "before.txt") == BEFORE
    with open_store(str(db)) as fresh:
        assert fresh.read("before.txt")[0] == BEFORE
    assert first.ask("read before.txt") == BEFORE_SHA
    assert first.ask("read late.bin") == "missing"

    # The first "daemon" stops. This process still has the store open, so SQLite must
    # leave the WAL and its index in place (they are what this process reads through).
    first.close()
    assert (small_disk / "memory.db-wal").exists()
    assert (small_disk / "memory.db-shm").exists()

    filler.unlink()
    second = Session(db)
    sessions.append(second)
    assert second.ask(f"write late.bin {LATE}").startswith("ok ")
    # What the second process committed is what every handle here reads.
    assert mine.read("late.bin")[0] == blob("late.bin", LATE)
    assert again.read("late.bin")[0] == blob("late.bin", LATE)
    with open_store(str(db)) as fresh:
        assert fresh.read("late.bin")[0] == blob("late.bin", LATE)

    # Both sides write and checkpoint in turn: with diverged WAL indexes, this is where
    # the file became "malformed".
    for i in range(4):
        mine.write(f"mine{i}", blob(f"mine{i}", 40 << 10), author="test")
        mine.maintain()
        assert second.ask(f"write theirs{i} {40 << 10}").startswith("ok ")
        assert second.ask("maintain") == "ok"
    second.close()
    for handle in (mine, again):
        for i in range(4):
            assert handle.read(f"mine{i}")[0] == blob(f"mine{i}", 40 << 10)
            assert handle.read(f"theirs{i}")[0] == blob(f"theirs{i}", 40 << 10)
        assert handle.read("late.bin")[0] == blob("late.bin", LATE)
    mine.close()
    again.close()
    with open_store(str(db)) as fresh:
        assert {e.path for e in fresh.walk()} == {
            "before.txt",
            "late.bin",
            *(f"mine{i}" for i in range(4)),
            *(f"theirs{i}" for i in range(4)),
        }


def test_opening_a_closed_store_on_a_full_disk_says_the_disk_is_full(small_disk: Path) -> None:
    db = small_disk / "memory.db"
    with open_store(str(db)) as store:
        store.write("before.txt", BEFORE, author="test")
    # The last connection removed the WAL and its index; SQLite needs room for a new
    # index before it can read (it would say "disk I/O error").
    assert not (small_disk / "memory.db-shm").exists()
    filler = fill(small_disk)
    with pytest.raises(StoreFull, match=r"full.*memory\.db-shm.*free some space"):
        open_store(str(db))
    filler.unlink()
    with open_store(str(db)) as store:
        assert store.read("before.txt")[0] == BEFORE
