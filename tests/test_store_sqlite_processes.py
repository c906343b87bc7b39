"""One SQLite store file shared by threads and processes: concurrency, following, kill -9."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.errors import StoreUnavailable
from memfs.store import open_store
from tests.sqlite_worker import content

A = "tester"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[str]]]:
    """Start workers; every one is reaped at the end, killed first if still running."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def worker(procs: list[subprocess.Popen[str]], *args: object) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.sqlite_worker", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    procs.append(proc)
    return proc


def integrity(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


def test_two_processes_write_one_file_concurrently(
    tmp_path: Path, spawn: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "m.db"
    n = 120
    with open_store(str(db)) as store:
        store.write("counter", b"0", author=A)
    procs = [worker(spawn, "write", db, "p1", n), worker(spawn, "write", db, "p2", n)]
    procs += [worker(spawn, "bump", db, "counter", 40), worker(spawn, "bump", db, "counter", 40)]
    for proc in procs:
        _, err = proc.communicate(timeout=100)
        assert proc.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
    with open_store(str(db)) as store:
        for prefix in ("p1", "p2"):
            for i in range(n):
                assert store.read(f"{prefix}/{i}")[0] == content(prefix, i)
        assert store.read("counter")[0] == b"80"
        creates = {c.path for c in store.changes() if c.kind == "create"}
        assert creates == {"counter"} | {f"p{j}/{i}" for j in (1, 2) for i in range(n)}
        seqs = [c.seq for c in store.changes()]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert integrity(db) == "ok"


def test_a_second_process_follows_the_change_feed(
    tmp_path: Path, spawn: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "m.db"
    n = 40
    with open_store(str(db)) as store:
        store.write("before", b"not followed", author=A)
        since = store.last_seq()
        follower = worker(spawn, "follow", db, since, n, 60)
        assert follower.stdout is not None
        assert follower.stdout.readline().strip() == "ready"
        store.mkdir("d", author=A)
        for i in range(n):
            store.write(f"d/{i}", b"%d" % i, author=A)
    out = follower.stdout.read()  # the follower gives up by itself after 60 s
    assert follower.wait(timeout=30) == 0, follower.stderr.read() if follower.stderr else ""
    assert out.split() == [w for i in range(n) for w in ("seen", f"d/{i}")]


def test_every_reported_write_survives_kill_9(
    tmp_path: Path, spawn: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "m.db"
    proc = worker(spawn, "write", db, "burst", 0)
    assert proc.stdout is not None
    reported: list[str] = []
    deadline = time.monotonic() + 60
    while len(reported) < 60 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported.append(line)
    assert len(reported) >= 60, proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGKILL)  # mid-burst: it is writing as fast as it can
    assert proc.wait(timeout=30) == -signal.SIGKILL
    # read() and not communicate(): communicate reads the raw pipe and would skip lines
    # already pulled into this file object's buffer by readline().
    rest = proc.stdout.read()
    # Only whole lines count: a line cut by the kill was never fully reported.
    reported += [line + "\n" for line in rest.split("\n")[:-1]]
    committed = [line.split() for line in reported if line.endswith("\n")]
    with open_store(str(db)) as store:
        for _, i, rev, sha in committed:
            data, entry = store.read(f"burst/{i}")
            assert hashlib.sha256(data).hexdigest() == sha and entry.rev >= int(rev)
        files = store.listdir("burst")
        assert len(files) >= len(committed)
        # At most the one write in flight at the kill committed without being reported.
        assert len(files) <= len(committed) + 1
        assert store.write("burst/after", b"still writable", author=A).rev > 0
    assert integrity(db) == "ok"


def test_a_held_write_lock_times_out_as_store_unavailable(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(str(db), busy_timeout=0.2) as store:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="busy"):
                store.write("f", b"x", author=A)
            assert time.monotonic() - started >= 0.15
            assert store.listdir("") == []  # readers are not blocked by a writer (WAL)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        store.write("f", b"x", author=A)
        assert store.read("f")[0] == b"x"


def test_threads_read_consistent_pairs_while_another_writes(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "m.db")) as store:
        store.write("f", b"0" * 10, author=A)
        stop = threading.Event()
        problems: list[str] = []
        reads = [0, 0, 0]

        def reader(k: int) -> None:
            try:
                while not stop.is_set():
                    data, entry = store.read("f")
                    if len(data) != entry.size or data != data[:1] * len(data):
                        problems.append(f"torn read: {entry.size} {data[:20]!r}")
                    reads[k] += 1
            except Exception as e:  # reported below: a thread cannot fail the test
                problems.append(repr(e))

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for i in range(200):
            digit = b"%d" % (i % 10)
            store.write("f", digit * (10 + i), author=A)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert not problems and all(reads) and not any(t.is_alive() for t in threads)


def test_close_from_one_thread_closes_the_others_connections(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "m.db"))
    store.write("f", b"x", author=A)
    opened = threading.Event()
    go = threading.Event()
    outcome: list[BaseException | str] = []

    def other() -> None:
        store.stat("f")  # this thread gets its own connection
        opened.set()
        go.wait(30)
        try:
            store.stat("f")
            outcome.append("still open")
        except BaseException as e:  # reported below
            outcome.append(e)

    thread = threading.Thread(target=other)
    thread.start()
    assert opened.wait(30)
    store.close()
    go.set()
    thread.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], StoreUnavailable)
    # Every connection is closed, so the WAL was checkpointed and removed.
    assert not os.path.exists(tmp_path / "m.db-wal")


def test_processes_creating_the_same_new_store_at_once_all_succeed(
    tmp_path: Path, spawn: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "new" / "m.db"
    procs = [worker(spawn, "write", db, f"w{k}", 5) for k in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=100)
        assert proc.returncode == 0, err
    with open_store(str(db)) as store:
        assert [e.name for e in store.listdir("")] == ["w0", "w1", "w2", "w3"]
        assert store.usage().files == 20


def test_readers_do_not_pin_the_wal(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(str(db)) as store:
        for i in range(50):
            store.write(f"f{i}", b"x" * 5000, author=A)
        for i in range(50):
            store.stat(f"f{i}")
            store.read(f"f{i}")
            store.listdir("")
            store.history(f"f{i}")
        store.changes()
        # Another connection can checkpoint the whole WAL away: no statement of the
        # store's is left holding a read snapshot open.
        other = sqlite3.connect(db, isolation_level=None)
        try:
            busy, _, _ = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            other.close()
        assert busy == 0
        assert os.path.getsize(f"{db}-wal") == 0


def test_connections_of_finished_threads_are_released(tmp_path: Path) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    with open_store(str(tmp_path / "m.db")) as store:
        store.write("f", b"x", author=A)

        def use() -> None:
            store.stat("f")

        for _ in range(5):  # warm up: the pattern's steady state
            t = threading.Thread(target=use)
            t.start()
            t.join()
        before = open_fds()
        for _ in range(40):
            t = threading.Thread(target=use)
            t.start()
            t.join()
        assert open_fds() <= before + 3  # at most one dead thread's connection lingers
