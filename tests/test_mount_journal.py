"""The write path's journal and its recovery, on real files and a real SQLite store (no
FUSE: these pin what a daemon that dies leaves behind, record by record)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from memfs.errors import NotFound, StoreFull
from memfs.mount import journal as jr
from memfs.mount import writes as writes_module
from memfs.mount.bursts import Writer
from memfs.mount.writes import COMPACT_AT_BYTES, SYNC_IN_JOURNAL_FROM, Health, PendingWrites
from memfs.store import open_store
from memfs.store.base import Entry, Store
from memfs.store.rebase import Shape
from tests.fixtures.mount import wait_for
from tests.fixtures.spying import calls

# A writer as the mount reads it from /proc (its pid is no live process here).
ME = Writer(pid=4242, started=0, program="writer", user="someone")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite://{tmp_path / 'memory.db'}")
    yield s
    s.close()


T = TypeVar("T")


def direct(_author: str, fn: Callable[[], T], _paths: Sequence[str]) -> T:
    return fn()


def pending(store: Store, tmp_path: Path) -> PendingWrites:
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal", quiet_period=3600)
    w.start()
    return w


def die_with(store_url: str, journal_dir: Path, script: str, *, committer: bool = True) -> None:
    """Run ``script`` against a PendingWrites ``w`` over ``store`` in a child that then
    dies without cleanup, as a killed daemon would (os._exit: no close, no commit).
    ``committer`` False: nothing lands but what the script lands itself."""
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from memfs.store import open_store\n"
        "from memfs.mount.bursts import Writer\n"
        "from memfs.mount.writes import PendingWrites\n"
        f"store = open_store({store_url!r})\n"
        f"w = PendingWrites(store, lambda a, fn, p: fn(), journal_dir=Path({str(journal_dir)!r}),"
        " quiet_period=3600)\n" + ("w.start()\n" if committer else "") + script + "\nos._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_dead_writers_journal_is_replayed_onto_the_files_base(
    store: Store, tmp_path: Path
) -> None:
    store.write("notes.md", b"0123456789", author="someone")
    die_with(
        store.url,
        tmp_path / "journal",
        f"w.write('notes.md', b'AB', 2, {ME!r})\n"
        f"w.truncate('notes.md', 8, {ME!r})\n"
        f"w.write('notes.md', b'Z', 12, {ME!r})\n"
        f"w.create('new.md', 0o640, {ME!r}, None, None)\n"
        f"w.write('new.md', b'fresh', 0, {ME!r})\n"
        f"w.chmod('new.md', 0o600)\n",
    )
    assert store.read("notes.md")[0] == b"0123456789"  # nothing committed by the child
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert sorted(w.recover()) == ["new.md", "notes.md"]
    assert store.read("notes.md")[0] == b"01AB4567\0\0\0\0Z"
    data, entry = store.read("new.md")
    assert (data, entry.mode) == (b"fresh", 0o600)
    assert store.history("notes.md")[0].author == ME.actor
    assert list((tmp_path / "journal").glob("*.journal")) == list(
        (tmp_path / "journal").glob(f"{os.getpid()}-*.journal")
    )
    w.close()
    assert list((tmp_path / "journal").glob("*.journal")) == []


def test_turns_queued_by_programs_appending_in_turn_are_each_their_own_after_a_crash(
    store: Store, tmp_path: Path
) -> None:
    """Each writer's turn is its own revision even when the daemon died before landing
    them: the journal names where each turn ended and whose it was."""
    one = Writer(pid=5151, started=0, program="one", user="someone")
    two = Writer(pid=5252, started=0, program="two", user="someone")
    store.write("log.md", b"start\n", author="someone")
    die_with(
        store.url,
        tmp_path / "journal",
        f"for line, who in ((b'a1', {one!r}), (b'b1', {two!r}), (b'b2', {two!r}),"
        f" (b'a2', {one!r})):\n"
        "    w.write('log.md', line + b'\\n', 0, who, append=True)\n",
        committer=False,  # (turns are due at once: it dies first)
    )
    assert store.read("log.md")[0] == b"start\n"
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert w.recover() == ["log.md"]
    history = list(reversed(store.history("log.md")))[1:]
    got = [(r.author, store.read_revision("log.md", r.rev)) for r in history]
    assert got == [
        (one.actor, b"start\na1\n"),
        (two.actor, b"start\na1\nb1\nb2\n"),
        (one.actor, b"start\na1\nb1\nb2\na2\n"),
    ]
    w.close()


def test_writes_made_during_a_landing_survive_a_death_right_after_it_committed(
    store: Store, tmp_path: Path
) -> None:
    """The daemon dies after the store committed a landing and before it journaled the
    bytes written meanwhile anew: the journal's landing record says how many of the
    buffer's bytes it held, so the replay commits the rest on top (it took the landing
    for the whole buffer and dropped them)."""
    store.write("log.md", b"start\n", author="someone")
    die_with(
        store.url,
        tmp_path / "journal",
        f"me = {ME!r}\n"
        "w._landed = lambda *args: os._exit(0)  # dies as the store answers\n"
        "real = store.write\n"
        "def write(path, data, **kw):  # a write comes while the landing is in the store\n"
        "    w.write('log.md', b'during\\n', 0, me, append=True)\n"
        "    return real(path, data, **kw)\n"
        "store.write = write\n"
        "w.write('log.md', b'before\\n', 0, me, append=True)\n"
        "w.commit('log.md')\n",
        committer=False,
    )
    assert store.read("log.md")[0] == b"start\nbefore\n"  # the landing committed
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert w.recover() == ["log.md"]
    assert store.read("log.md")[0] == b"start\nbefore\nduring\n"
    assert [r.author for r in store.history("log.md")][:2] == [ME.actor, ME.actor]
    w.close()


def test_a_queue_of_turns_and_what_came_during_its_landing_survive_a_death_after_it(
    store: Store, tmp_path: Path
) -> None:
    """The same, for a queue of turns (its later turns land as one series): the
    replay finds the series landed and commits only what came meanwhile."""
    one = Writer(pid=5151, started=0, program="one", user="someone")
    two = Writer(pid=5252, started=0, program="two", user="someone")
    store.write("log.md", b"start\n", author="someone")
    die_with(
        store.url,
        tmp_path / "journal",
        "w._landed = lambda *args: os._exit(0)  # dies as the store answers\n"
        "real = store.write_series\n"
        "def series(path, data, steps, **kw):  # a write comes while it is in the store\n"
        f"    w.write('log.md', b'during\\n', 0, {two!r}, append=True)\n"
        "    return real(path, data, steps, **kw)\n"
        "store.write_series = series\n"
        f"for line, who in ((b'a1', {one!r}), (b'b1', {two!r}), (b'a2', {one!r})):\n"
        "    w.write('log.md', line + b'\\n', 0, who, append=True)\n"
        "w.commit('log.md')\n",
        committer=False,
    )
    assert store.read("log.md")[0] == b"start\na1\nb1\na2\n"  # the queue committed
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert w.recover() == ["log.md"]
    history = list(reversed(store.history("log.md")))[1:]
    assert [(r.author, store.read_revision("log.md", r.rev)) for r in history] == [
        (one.actor, b"start\na1\n"),
        (two.actor, b"start\na1\nb1\n"),
        (one.actor, b"start\na1\nb1\na2\n"),
        (two.actor, b"start\na1\nb1\na2\nduring\n"),
    ]
    w.close()


def test_two_stopped_daemons_changes_to_one_file_both_land(store: Store, tmp_path: Path) -> None:
    """Two mounts of one store on one machine journal in one directory. Both stopped
    with appends to the same file pending: the replay of the second daemon's journal
    took the place of the first's and dropped its lines."""
    store.write("log.md", b"start\n", author="someone")
    for line in (b"from the first\n", b"from the second\n"):
        die_with(
            store.url,
            tmp_path / "journal",
            f"w.write('log.md', {line!r}, 0, {ME!r}, append=True)\n",
            committer=False,
        )
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert w.recover() == ["log.md", "log.md"]
    assert sorted(store.read("log.md")[0].splitlines()) == [
        b"from the first", b"from the second", b"start",
    ]  # fmt: skip
    w.close()


def test_a_buffer_journaled_anew_and_torn_leaves_the_one_it_was_to_replace(
    tmp_path: Path,
) -> None:
    """A buffer journaled anew whole (after a landing, a compaction, a recovery) is
    several records; a daemon that died among them left the buffer's bytes out, and
    the replay put an empty file in place of the version still pending before it."""
    j = jr.Journal(tmp_path)
    j.opened(1, "f.md", "someone", 3, 0o644, jr.WHOLE | jr.SEALED)
    j.shaped(1, Shape.WHOLE, 0)
    j.wrote(1, 0, b"all of it\n")
    j.sealed(1)
    j.opened(2, "f.md", "someone", 3, 0o644, jr.WHOLE | jr.SEALED)
    j.shaped(2, Shape.WHOLE, 0)  # died here, before its bytes
    got = [(r.path, bytes(r.data)) for r in jr.replay(j.path, lambda p, rev: b"")]
    assert got == [("f.md", b"all of it\n")]
    j.close(keep=False)


def test_an_mtime_set_on_a_pending_file_survives_the_daemons_death(
    store: Store, tmp_path: Path
) -> None:
    """tar sets each file's mtime right after closing it; the utimens was acknowledged,
    so a daemon killed before the commit must not lose it (a later write forgets it)."""
    die_with(
        store.url,
        tmp_path / "journal",
        f"w.create('kept.md', 0o644, {ME!r}, None, None)\n"
        f"w.write('kept.md', b'archived', 0, {ME!r})\n"
        "assert w.set_mtime('kept.md', 1_500_000_000_123_456_789)\n"
        f"w.create('moved.md', 0o644, {ME!r}, None, None)\n"
        "assert w.set_mtime('moved.md', 1_500_000_000_000_000_000)\n"
        f"w.write('moved.md', b'later', 0, {ME!r})\n",
    )
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert sorted(w.recover()) == ["kept.md", "moved.md"]
    data, entry = store.read("kept.md")
    assert (data, entry.mtime_ns) == (b"archived", 1_500_000_000_123_456_789)
    assert len(store.history("kept.md")) == 1
    assert store.stat("moved.md").mtime_ns > 1_600_000_000_000_000_000
    w.close()


def test_replay_stops_at_a_torn_or_corrupt_record(tmp_path: Path) -> None:
    journal = jr.Journal(tmp_path)
    journal.opened(1, "f", ME.actor, 0, 0o600, jr.CREATED)
    journal.wrote(1, 0, b"first ")
    size_after_first = journal.size
    journal.wrote(1, 6, b"second")
    journal.close(keep=True)
    whole = journal.path.read_bytes()
    assert [r.data for r in jr.replay(journal.path, lambda p, r: b"")] == [b"first second"]
    journal.path.write_bytes(whole[:-3])  # the last write(2) was cut short by the kill
    assert [r.data for r in jr.replay(journal.path, lambda p, r: b"")] == [b"first "]
    flipped = bytearray(whole)
    flipped[size_after_first + 12] ^= 0xFF  # a damaged byte in the second write's payload
    journal.path.write_bytes(bytes(flipped))
    assert [r.data for r in jr.replay(journal.path, lambda p, r: b"")] == [b"first "]


def test_a_live_daemons_journal_is_not_anyones_to_replay(store: Store, tmp_path: Path) -> None:
    live = pending(store, tmp_path)
    live.create("mine.md", 0o600, ME, None, None)
    live.write("mine.md", b"still being written", 0, ME)
    other = PendingWrites(store, direct, journal_dir=tmp_path / "journal")
    assert other.recover() == []
    live.close()
    assert store.read("mine.md")[0] == b"still being written"


def test_a_commit_already_in_the_store_is_not_made_twice(store: Store, tmp_path: Path) -> None:
    # The child commits, then dies before it can note that in its journal (simulated by
    # writing the same content through the store and leaving the journal as it was).
    die_with(
        store.url,
        tmp_path / "journal",
        f"w.create('a.md', 0o600, {ME!r}, None, None)\nw.write('a.md', b'same', 0, {ME!r})\n"
        f"store.write('a.md', b'same', author={ME.actor!r})\n",
    )
    before = len(store.history("a.md"))
    assert PendingWrites(store, direct, journal_dir=tmp_path / "journal").recover() == []
    assert len(store.history("a.md")) == before


def test_the_journal_stays_bounded_by_what_is_pending(store: Store, tmp_path: Path) -> None:
    w = pending(store, tmp_path)
    w.create("hot.bin", 0o600, ME, None, None)
    block = os.urandom(1 << 20)
    for _ in range(3 * COMPACT_AT_BYTES // len(block)):
        w.write("hot.bin", block, 0, ME)  # the same MiB, over and over, never committed
    files = list((tmp_path / "journal").glob("*.journal"))
    assert len(files) == 1
    assert files[0].stat().st_size < COMPACT_AT_BYTES + 2 * len(block)
    w.close()
    assert store.read("hot.bin")[0] == block


def test_pending_bytes_stay_bounded_by_committing_older_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(f"sqlite://{tmp_path / 'capped.db'}?max_file_bytes={256 << 10}")
    try:
        w = PendingWrites(
            store,
            direct,
            journal_dir=tmp_path / "journal",
            quiet_period=3600,
            max_pending_bytes=1 << 20,
        )
        w.start()
        for i in range(8):
            w.create(f"f{i}", 0o600, ME, None, None)
            w.write(f"f{i}", bytes([i]) * (200 << 10), 0, ME)
        # Nothing was due (an hour's quiet period), yet the oldest files were committed to
        # make room: what is held never passed the bound.
        assert store.read("f0")[0] == bytes([0]) * (200 << 10)
        held = [w.get(f"f{i}") for i in range(8)]
        assert sum(len(buf.data) for buf in held if buf is not None) <= 1 << 20

        def refuse(*_args: object, **_kw: object) -> Entry:
            raise StoreFull("the disk is full")

        monkeypatch.setattr(store, "write", refuse)
        with pytest.raises(OSError) as info:
            for i in range(8, 16):
                w.create(f"f{i}", 0o600, ME, None, None)
                w.write(f"f{i}", b"x" * (200 << 10), 0, ME)
        assert info.value.errno == errno.ENOSPC
    finally:
        monkeypatch.undo()  # before the close, which commits what is left
        w.close()
        store.close()


def test_an_unexpected_error_in_a_commit_is_logged_counted_and_retried(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls = []

    def flaky(_author: str, fn: Callable[[], T], paths: Sequence[str]) -> T:
        calls.append(paths)
        if len(calls) == 1:
            raise RuntimeError("a bug in the commit path")
        return fn()

    reports: list[Health] = []
    w = PendingWrites(
        store, flaky, journal_dir=tmp_path / "journal", quiet_period=0.01, on_health=reports.append
    )
    w.start()
    try:
        w.create("f.md", 0o600, ME, None, None)
        w.write("f.md", b"kept", 0, ME)
        wait_for(lambda: store.read("f.md")[0] == b"kept", 20, what="the retried commit")
        assert any(
            r.exc_info is not None and r.exc_info[0] is RuntimeError for r in caplog.records
        ), "the traceback was not logged"
        assert reports[0].unsaved == ("f.md",) and reports[0].errors == 1
        assert w.health.unsaved == () and w.health.errors == 1
    finally:
        w.close()


def test_holes_count_toward_pending_bytes_and_the_journal_is_not_rewritten_for_them(
    store: Store, tmp_path: Path
) -> None:
    w = pending(store, tmp_path)
    try:
        w.create("sparse.bin", 0o600, ME, None, None)
        w.write("sparse.bin", b"end", (48 << 20) - 3, ME)  # a 48 MiB file, mostly a hole
        assert w.pending_bytes == 48 << 20
        journal = next((tmp_path / "journal").glob("*.journal"))
        size = journal.stat().st_size
        for i in range(200):
            w.write("sparse.bin", b"x", i * 4096, ME)
        # Small writes add small records: no rewrite of the 48 MiB buffer happened.
        assert journal.exists() and journal.stat().st_size < size + 200 * 100
    finally:
        w.close()
    assert store.read("sparse.bin")[0][-3:] == b"end"


def test_a_journal_of_finished_saves_holds_nothing_and_costs_no_store_reads(
    tmp_path: Path,
) -> None:
    journal = jr.Journal(tmp_path)
    for ident in (1, 2):
        journal.opened(ident, f"f{ident}", ME.actor, 7, 0o600, 0)  # edits of existing files
        journal.wrote(ident, 0, b"saved")
        journal.done(ident)
    journal.opened(3, "open.md", ME.actor, 9, 0o600, 0)
    journal.wrote(3, 0, b"X")
    journal.close(keep=True)
    asked = []

    def base(path: str, rev: int) -> bytes:
        asked.append((path, rev))
        return b"abc"

    assert [(r.path, bytes(r.data)) for r in jr.replay(journal.path, base)] == [("open.md", b"Xbc")]
    assert asked == [("open.md", 9)]
    assert jr.abandoned(tmp_path) == [journal.path]
    done = jr.Journal(tmp_path / "other")
    done.opened(1, "f", ME.actor, 0, 0o600, jr.CREATED)
    done.done(1)
    done.close(keep=True)
    assert jr.abandoned(tmp_path / "other") == []


def synced_inodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The inodes of the files fdatasync is called on from now on (the real call runs)."""
    return calls(monkeypatch, os, "fdatasync", lambda fd: os.fstat(fd).st_ino)


def fsynced_large(store: Store, tmp_path: Path) -> tuple[PendingWrites, bytes]:
    """A write path (its committer not started) holding a new file large enough that
    its fsync syncs the journal, after that fsync; and the file's content."""
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal", quiet_period=3600)
    data = os.urandom(SYNC_IN_JOURNAL_FROM)
    w.create("big.bin", 0o600, ME, None, None)
    w.write("big.bin", data, 0, ME)
    w.sync("big.bin")
    return w, data


def test_an_fsync_of_a_large_file_syncs_the_journal_and_its_commit_follows(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = synced_inodes(monkeypatch)
    w, data = fsynced_large(store, tmp_path)
    (journal,) = (tmp_path / "journal").glob("*.journal")
    assert synced == [journal.stat().st_ino]
    with pytest.raises(NotFound):
        store.stat("big.bin")  # no committer yet: the fsync itself stored nothing
    w.start()  # the file is due at once, for all its hour of quiet period
    wait_for(lambda: w.get("big.bin") is None, 30, what="the commit after the fsync")
    assert store.read("big.bin")[0] == data
    assert len(store.history("big.bin")) == 1
    w.close()


def test_an_fsync_of_a_small_file_commits_it_before_it_returns(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = synced_inodes(monkeypatch)
    w = PendingWrites(store, direct, journal_dir=tmp_path / "journal", quiet_period=3600)
    w.create("small.md", 0o600, ME, None, None)
    w.write("small.md", b"kept", 0, ME)
    w.sync("small.md")
    assert store.read("small.md")[0] == b"kept"
    assert synced == []
    w.close()


def test_a_large_file_fsynced_by_a_daemon_that_died_before_its_commit_is_recovered(
    store: Store, tmp_path: Path
) -> None:
    journal_dir = tmp_path / "journal"
    code = (
        "import os\n"
        "from pathlib import Path\n"
        "from memfs.store import open_store\n"
        "from memfs.mount.bursts import Writer\n"
        "from memfs.mount.writes import PendingWrites, SYNC_IN_JOURNAL_FROM\n"
        f"store = open_store({store.url!r})\n"
        # No committer: the daemon dies after the fsync returned, before any landing.
        f"w = PendingWrites(store, lambda a, fn, p: fn(), journal_dir=Path({str(journal_dir)!r}))\n"
        f"w.create('big.bin', 0o600, {ME!r}, None, None)\n"
        f"w.write('big.bin', bytes(range(256)) * (SYNC_IN_JOURNAL_FROM // 256), 0, {ME!r})\n"
        "w.sync('big.bin')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    with pytest.raises(NotFound):
        store.stat("big.bin")
    w = PendingWrites(store, direct, journal_dir=journal_dir)
    assert w.recover() == ["big.bin"]
    assert store.read("big.bin")[0] == bytes(range(256)) * (SYNC_IN_JOURNAL_FROM // 256)
    assert store.history("big.bin")[0].author == ME.actor
    w.close()


def test_a_journal_compacted_under_an_fsynced_file_is_synced_before_the_old_one_goes(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fsync made the file durable in the journal; a compaction replaces that
    journal by a new one and deletes it, so the new one must be durable first."""
    monkeypatch.setattr(writes_module, "COMPACT_AT_BYTES", 1 << 20)
    synced = calls(monkeypatch, jr.Journal, "sync", lambda journal: journal.path)
    w, block = fsynced_large(store, tmp_path)
    (first,) = (tmp_path / "journal").glob("*.journal")
    for _ in range(4):  # rewritten in place: the journal grows past 4x what is pending
        w.write("big.bin", block, 0, ME)
    (journal,) = (tmp_path / "journal").glob("*.journal")
    assert journal != first  # compacted into a new file
    assert synced == [journal]
    w.close()
    assert store.read("big.bin")[0] == block
