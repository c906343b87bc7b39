"""An SQLite store hears another process's commit at once (memfs.store.sqlite_wake),
and polls as before where inotify is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memfs.store import open_store, sqlite_conn
from memfs.store.sqlite import SqliteStore
from memfs.store.sqlite_wake import WalWake
from tests.fixtures.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


def _write_elsewhere(db: Path, prefix: str, n: int) -> None:
    """``n`` commits by another process (tests/sqlite_worker.py)."""
    subprocess.run(
        [sys.executable, "-m", "tests.sqlite_worker", "write", str(db), prefix, str(n)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_commit_by_another_process_wakes_a_waiter(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}") as store:
        store.write("start.md", b"x", author="t")
        assert store.pushes_changes
        wake = WalWake(db)
        try:
            assert wake.works
            mark = wake.heard()
            _write_elsewhere(db, "p", 1)
            # Not a poll: the watch itself counts the other process's write to the log.
            assert wake.wait(mark, timeout=30)
            assert wake.heard() > mark
        finally:
            wake.close()


def test_every_waiter_on_one_handle_is_woken(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}") as store:
        store.write("start.md", b"x", author="t")
        since = store.last_seq()
        woken: list[bool] = []
        started = threading.Barrier(4)

        def wait() -> None:
            started.wait(timeout=30)
            woken.append(store.wait_for_changes(since, 30))

        threads = [threading.Thread(target=wait) for _ in range(3)]
        for t in threads:
            t.start()
        started.wait(timeout=30)
        _write_elsewhere(db, "p", 1)
        for t in threads:
            t.join(timeout=60)
        assert woken == [True, True, True]


def test_the_watch_leaves_no_descriptor_behind(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    before = _fds()
    with open_store(f"sqlite://{db}") as store:
        store.write("start.md", b"x", author="t")
        assert not store.wait_for_changes(store.last_seq(), 0.01)
        assert any(
            os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
            for fd in _fds() - before
            if os.path.exists(f"/proc/self/fd/{fd}")
        )
    assert _fds() <= before


def test_close_ends_a_wait_in_progress(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    db.touch()
    wake = WalWake(db)
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(wake.wait(wake.heard(), 600)))
    waiter.start()
    wake.close()
    waiter.join(timeout=30)
    assert not waiter.is_alive() and result == [False]


def test_without_inotify_the_store_polls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoWatch(WalWake):
        @property
        def works(self) -> bool:
            return False

    monkeypatch.setattr(sqlite_conn, "WalWake", NoWatch)
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}") as store:
        store.write("start.md", b"x", author="t")
        since = store.last_seq()
        _write_elsewhere(db, "p", 1)
        assert store.wait_for_changes(since, 30)


def test_interrupt_ends_the_store_handles_waits(tmp_path: Path) -> None:
    # A follower stopping (an unmount) must not wait out the wait's timeout.
    db = tmp_path / "m.db"
    store = SqliteStore(db)
    with store:
        store.write("start.md", b"x", author="t")
        since = store.last_seq()
        result: list[bool] = []
        waiter = threading.Thread(target=lambda: result.append(store.wait_for_changes(since, 600)))
        waiter.start()
        wait_for(lambda: store._files._wake is not None, 30, what="the watch")
        wake = store._files._wake
        assert wake is not None
        wait_for(lambda: wake._reader, 30, what="the waiter to read the watch")
        store.interrupt_waits()
        waiter.join(timeout=30)
        assert not waiter.is_alive() and result == [False]
        # The handle waits again afterwards, and hears the next commit.
        mark = wake.heard()
        _write_elsewhere(db, "p", 1)
        assert wake.wait(mark, 30)


class ScriptedWake:
    """A WalWake whose writes come when the test says, with no clock: one at the first
    wait, one more ending the settling's last pause, then none (a wait without a write
    returns at once, as a pause that ran out)."""

    def __init__(self) -> None:
        self.writes = 0
        self.waits = 0
        self.waits_at_last_write = 0

    def heard(self) -> int:
        return self.writes

    def wait(self, past: int, timeout: float) -> bool:
        self.waits += 1
        # The first wait, and the last of the settling pauses after it, hear a write.
        if self.waits in (1, 1 + len(sqlite_conn.SETTLE_PAUSES)):
            self.writes += 1
            self.waits_at_last_write = self.waits
            return True
        return self.writes > past


def test_a_commit_heard_in_the_last_settling_pause_is_seen_when_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log is written before the commit shows in SQLite's index. A write heard as the
    settling pauses run out belongs to a commit that may show only a moment later: the
    wait looks again from the shortest pause, not only at the next write (none may
    come; it used to wait out its whole timeout)."""
    with open_store(f"sqlite://{tmp_path / 'm.db'}") as store:
        assert isinstance(store, SqliteStore)
        wake = ScriptedWake()
        monkeypatch.setattr(store.backend, "_wake_for_waiting", lambda: wake)

        def last_seq() -> int:
            # The second write's commit shows only after three more pauses: later than
            # the look that follows its log write at once.
            late = wake.writes == 2 and wake.waits >= wake.waits_at_last_write + 3
            return 1 if late else 0

        assert store.backend.wait_for_changes(0, 10.0, last_seq)
        assert wake.waits < 1 + len(sqlite_conn.SETTLE_PAUSES) + 20
