"""The write path's state machine, without FUSE: every illegal move of a buffer raises,
a Hypothesis state machine drives :class:`PendingWrites` over a real SQLite store
through random writes, appends, whole saves, fsyncs, commits, another door's writes to
the same files, store failures and store loss (nothing acknowledged is lost; the counts
are the sums over the buffers), and a landing held inside the store blocks neither a
write to another file nor more writes to its own."""

from __future__ import annotations

import contextlib
import errno
import math
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memfs.errors import Conflict, IllegalTransition, MemfsError, NotFound, StoreUnavailable
from memfs.mount import journal as jr
from memfs.mount.buffer import LEND_AT, PAGE, SAVE_GRACE, SPLIT_GRACE, Buffer, State, Tally
from memfs.mount.bursts import Writer
from memfs.mount.writes import PendingWrites
from memfs.store import open_store
from memfs.store.base import Act, Entry, Store
from memfs.store.rebase import is_conflict_copy
from tests.fixtures.spying import calls
from tests.fixtures.waiting import wait_for

ONE = Writer(pid=4242, started=1, program="one", user="someone")
TWO = Writer(pid=4343, started=1, program="two", user="someone")
FILES = ("a.md", "b.md")
DEADLINE_S = 30.0


T = TypeVar("T")


def direct(_author: str, fn: Callable[[], T], _paths: Sequence[str]) -> T:
    return fn()


class Flaky:
    """A store whose writes fail while ``failing`` (as a server away would), and whose
    writes of ``gated`` can be held at ``gate`` (a landing in flight) until it is set."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.failing = False
        self.gate: threading.Event | None = None
        self.gated = ""
        self.held = threading.Event()  # a write is waiting at the gate
        self.series_failing = False  # only a queue's later turns fail (after the first)
        self.unreadable: set[int] = set()  # revisions whose reads fail

    def read_revision(self, path: str, rev: int) -> bytes:
        if rev in self.unreadable:
            raise StoreUnavailable("the store is away (injected)")
        return self.inner.read_revision(path, rev)

    def write(self, path: str, data: bytes, **kwargs: Any) -> Entry:
        if self.failing:
            raise StoreUnavailable("the store is away (injected)")
        gate = self.gate
        if gate is not None and path == self.gated:
            self.held.set()
            if not gate.wait(DEADLINE_S):
                raise TimeoutError("the test never let the landing go")
        return self.inner.write(path, data, **kwargs)

    def write_series(self, path: str, data: bytes, steps: Any, **kwargs: Any) -> Entry:
        if self.failing or self.series_failing:
            raise StoreUnavailable("the store is away (injected)")
        return self.inner.write_series(path, data, steps, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def state_of(buf: Buffer) -> State:
    return buf.state  # (read anew: a landing in another thread moves it)


def as_store(flaky: Flaky) -> Store:
    return cast(Store, flaky)


# --- every illegal move raises -------------------------------------------------------------
def buffer(*, created: bool = False, dirty: bool = True) -> Buffer:
    return Buffer(
        Tally(),
        ident=1,
        path="f.md",
        data=b"base",
        author=ONE.actor,
        base_rev=3,
        mode=0o644,
        created=created,
        base_size=0 if created else 4,
        dirty=dirty,
    )


def entry(rev: int) -> Entry:
    return Entry(path="f.md", kind="file", size=4, mode=0o644, mtime_ns=0, ctime_ns=0, rev=rev)


def clean() -> Buffer:
    return buffer(dirty=False)


def dirty() -> Buffer:
    return buffer()


def committing() -> Buffer:
    b = buffer()
    b.begin_commit()
    return b


def failed() -> Buffer:
    b = committing()
    b.commit_failed(StoreUnavailable("away"), 0.0)
    return b


def landed() -> Buffer:
    b = buffer()
    snap = b.begin_commit()
    assert b.landed(snap, entry(4), ident=2)
    return b


def dropped() -> Buffer:
    b = buffer()
    b.discard()
    return b


MAKERS: dict[State, Callable[[], Buffer]] = {
    State.CLEAN: clean,
    State.DIRTY: dirty,
    State.COMMITTING: committing,
    State.FAILED: failed,
    State.LANDED: landed,
    State.DROPPED: dropped,
}


def moves() -> dict[str, Callable[[Buffer], object]]:
    return {
        "write": lambda b: b.write(len(b.data), b"x"),
        "truncate": lambda b: b.truncate(len(b.data) + 1),
        "take_over": lambda b: b.take_over(TWO, Act(TWO.actor)),
        "begin_commit": lambda b: b.begin_commit(),
        "commit_failed": lambda b: b.commit_failed(StoreUnavailable("away"), 0.0),
        "discard": lambda b: b.discard(),
        "unfreeze": lambda b: b.unfreeze(),
    }


ALLOWED = {
    "write": {State.CLEAN, State.DIRTY, State.COMMITTING},
    "truncate": {State.CLEAN, State.DIRTY, State.COMMITTING},
    "take_over": {State.CLEAN, State.DIRTY, State.COMMITTING},
    "begin_commit": {State.DIRTY, State.FAILED},
    "commit_failed": {State.COMMITTING},
    "discard": {State.CLEAN, State.DIRTY, State.FAILED},
    "unfreeze": {State.COMMITTING},
}


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.value)
@pytest.mark.parametrize("move", sorted(ALLOWED))
def test_each_move_is_allowed_only_where_the_diagram_draws_it(state: State, move: str) -> None:
    b = MAKERS[state]()
    assert b.state is state
    if state in ALLOWED[move]:
        moves()[move](b)
    else:
        with pytest.raises(IllegalTransition) as raised:
            moves()[move](b)
        assert raised.value.state == state.value


def test_landing_needs_a_landing_in_flight_and_a_change_below_it_waits() -> None:
    b = dirty()
    with pytest.raises(IllegalTransition):
        b.landed(cast(Any, None), entry(4), ident=2)
    snap = b.begin_commit()
    with pytest.raises(IllegalTransition):
        b.write(0, b"X")  # the bytes being landed: the owner waits instead
    with pytest.raises(IllegalTransition):
        b.set_mode(0o600)  # only a new file's, and not while landing
    b.write(len(b.data), b"more")
    with pytest.raises(IllegalTransition):
        b.unfreeze()  # changed meanwhile: only the landing settles it
    assert not b.landed(snap, entry(9), ident=2)  # changes since: still pending
    assert (b.state, b.base_rev, b.base_size, bytes(b.data)) == (State.DIRTY, 9, 4, b"basemore")


def test_turns_queued_around_a_landing_keep_each_writers_bytes_theirs() -> None:
    """A writer that handed over before it wrote has no turn, in flight or back in the
    queue after a failed landing: every turn holds bytes, its writer's."""
    tally = Tally()
    buf = Buffer(
        tally, ident=1, path="f.md", data=b"base", author=ONE.actor, base_rev=3,
        mode=0o644, created=False, base_size=4, writer=ONE, act=Act(ONE.actor),
    )  # fmt: skip
    three = Writer(pid=4444, started=1, program="three", user="someone")
    buf.write(4, b"a1")
    turn = buf.queue_turn(TWO, Act(TWO.actor))
    assert turn is not None and (turn.end, turn.author) == (6, ONE.actor)
    snap = buf.begin_commit()  # TWO has written nothing yet
    assert [t.end for t in snap.turns] == [6] and snap.author == TWO.actor
    assert buf.queue_turn(three, Act(three.actor)) is None  # a hand-over, no turn
    buf.write(6, b"c1")
    buf.commit_failed(OSError(errno.EIO, "away"), 0.0)
    assert [(t.end, t.author) for t in buf.turns] == [(6, ONE.actor)]
    assert buf.author == three.actor and bytes(buf.data) == b"basea1c1"
    tally.check([buf])


@pytest.mark.parametrize("rebased", [False, True])
def test_a_large_snapshot_shares_its_bytes_until_the_buffer_changes(rebased: bool) -> None:
    """A snapshot of LEND_AT bytes or more is the buffer's own bytearray (no copy of a
    large save on its way to the store); a write while it lands copies first, so the
    landing's bytes never change under it."""
    big = b"x" * LEND_AT
    b = Buffer(Tally(), ident=1, path="f", data=big, author="x", base_rev=3, mode=0,
               created=False, base_size=len(big))  # fmt: skip
    b.write(len(big), b"a")
    snap = b.begin_commit()
    assert snap.data is b.data  # shared, not copied
    b.write(len(big) + 1, b"b")  # past the snapshot, while it lands
    assert bytes(snap.data) == big + b"a"  # the landing's bytes as they were frozen
    assert snap.data is not b.data and bytes(b.data) == big + b"ab"
    landed = b"z" + big + b"a" if rebased else None  # another writer's line came first
    assert not b.landed(snap, entry(4), ident=2, content=landed)
    assert bytes(b.data) == (b"z" + big + b"ab" if rebased else big + b"ab")
    assert bytes(snap.data) == big + b"a"
    small = dirty()
    assert isinstance(small.begin_commit().data, bytes)  # small ones: immutable copies


def test_a_write_ending_on_a_page_boundary_is_not_committed_at_once() -> None:
    """The kernel splits a write(2) at the end of a page it does not hold: a first part
    ending on a page boundary waits SPLIT_GRACE for the rest, even when hurried."""
    b = Buffer(Tally(), ident=1, path="f", data=b"x" * (PAGE - 1), author="x", base_rev=3,
               mode=0, created=False, base_size=PAGE - 1)  # fmt: skip
    b.write(PAGE - 1, b"b", more_may_come=True)  # "b" of "b0-315\n", to a page's end
    b.hurry(1.0)  # another mount changed the file: due now, but for the split
    now = time.monotonic()
    assert 0 < b.due_in(1.0, now) <= SPLIT_GRACE
    assert b.due_in(1.0, now + SPLIT_GRACE) <= 0  # it was a whole write after all
    b.write(PAGE, b"0-315\n")  # the rest came: nothing holds it back
    b.hurry(1.0)
    assert b.due_in(1.0, time.monotonic()) <= 0


def test_a_save_just_begun_waits_for_its_content_even_when_hurried() -> None:
    """A whole save begins with a truncate to nothing: landed before its content came
    (another mount's change hurried it), it was an empty file that, merged with that
    change, deleted everything the other writer had kept."""
    b = dirty()
    b.truncate(0)  # open(O_TRUNC): the save begins
    b.hurry(0.1)  # another mount changed the file
    now = time.monotonic()
    assert SPLIT_GRACE < b.due_in(0.1, now) <= SAVE_GRACE
    assert b.due_in(0.1, now + SAVE_GRACE) <= 0  # an empty file was meant after all
    b.write(0, b"the saved content\n")  # its content came: nothing holds it back
    b.hurry(0.1)
    assert b.due_in(0.1, time.monotonic()) <= 0
    new = buffer(created=True)
    new.truncate(0)  # a file made here has nothing to lose: no wait
    new.hurry(0.1)
    assert new.due_in(0.1, time.monotonic()) <= 0


def test_the_tally_is_the_sum_over_the_buffers() -> None:
    tally = Tally()
    a = Buffer(
        tally,
        ident=1,
        path="a",
        data=b"12",
        author="x",
        base_rev=1,
        mode=0,
        created=False,
        base_size=2,
    )
    b = Buffer(tally, ident=2, path="b", data=b"", author="x", base_rev=0, mode=0, created=True)
    b.write(3, b"abc")
    a.truncate(1)
    tally.check([a, b])
    assert (tally.bytes, tally.base_bytes, tally.new_files) == (7, 2, 1)
    snap = b.begin_commit()
    b.write(6, b"!")
    b.landed(snap, entry(5), ident=3)
    tally.check([a, b])
    assert tally.new_files == 0  # in the store now, still pending more bytes
    a.discard()
    tally.check([b])
    tally.bytes += 1
    with pytest.raises(IllegalTransition):
        tally.check([b])


class Asked(Buffer):
    """A buffer that counts how often the committer asks when it is due."""

    asked = 0

    def due_in(self, quiet_period: float, now: float) -> float:
        Asked.asked += 1
        return super().due_in(quiet_period, now)


def test_the_committer_reads_the_buffers_oldest_change_first_and_stops_at_one_not_due() -> None:
    tally = Tally()
    bufs = [
        Asked(tally, ident=i, path=f"f{i}", data=b"", author="x", base_rev=0, mode=0,
              created=True)
        for i in range(1000)
    ]  # fmt: skip
    quiet = 10.0
    Asked.asked = 0
    ready, wait = tally.due(quiet, time.monotonic())
    assert ready == [] and wait == pytest.approx(quiet, abs=1.0)
    assert Asked.asked == 1  # not a thousand: every later one changed later
    bufs[3].hurry(quiet)  # another writer's change: due now, first in line
    made = bufs[1].last_write
    while time.monotonic() <= made + 1e-4:
        pass  # (the clock moves on before the next write)
    bufs[1].write(0, b"again")  # written last: last in line
    assert list(tally.changed)[:3] == [bufs[3], bufs[0], bufs[2]]
    assert list(tally.changed)[-1] is bufs[1]
    ready, wait = tally.due(quiet, time.monotonic())
    assert ready == [bufs[3]] and wait is not None and 0 < wait <= quiet
    # A quiet period after the first writes, all but the one written again are due.
    ready, wait = tally.due(quiet, bufs[1].last_write + quiet - 1e-5)
    assert ready == [bufs[3], bufs[0], bufs[2], *bufs[4:]] and wait == pytest.approx(1e-5)
    # A failure's retry time does not follow the order of changes: then all are read.
    bufs[1].begin_commit()
    bufs[1].commit_failed(StoreUnavailable("away"), retry_at=0.0)
    assert tally.failed == 1
    Asked.asked = 0
    ready, _ = tally.due(quiet, time.monotonic())
    assert ready == [bufs[3], bufs[1]] and Asked.asked == 1000
    tally.check(bufs)
    bufs[1].discard()
    assert tally.failed == 0 and bufs[1] not in tally.changed
    tally.check([b for b in bufs if b is not bufs[1]])


# --- files due together land together ----------------------------------------------------
@contextlib.contextmanager
def running(store: Flaky, tmp_path: Path) -> Iterator[PendingWrites]:
    """A started write path over ``store`` (commits only when asked or hurried); closed,
    with the store under it, at the end."""
    writes = PendingWrites(as_store(store), direct, journal_dir=tmp_path / "j", quiet_period=3600)
    writes.start()
    try:
        yield writes
    finally:
        writes.close()
        store.inner.close()


class Batching(Flaky):
    """Counts the store transactions the committer opens for several files, refuses
    the writes of ``refused``, and undoes a whole batch while ``undo_batches``."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.batches = 0
        self.refused: set[str] = set()
        self.undo_batches = False

    def write(self, path: str, data: bytes, **kwargs: Any) -> Entry:
        if path in self.refused:
            raise StoreUnavailable(f"{path} is refused (injected)")
        return super().write(path, data, **kwargs)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self.batches += 1
        with self.inner.batch():
            yield
            if self.undo_batches:
                raise StoreUnavailable("the transaction did not commit (injected)")


@pytest.fixture
def batching(tmp_path: Path) -> Iterator[tuple[PendingWrites, Batching]]:
    store = Batching(open_store(f"sqlite://{tmp_path / 'memory.db'}"))
    with running(store, tmp_path) as writes:
        try:
            yield writes, store
        finally:
            store.refused.clear()
            store.undo_batches = False


def make_due(writes: PendingWrites, n: int) -> dict[str, bytes]:
    """``n`` new files, written and then made due at once (as another writer's change
    makes them: commit_soon), so the committer finds them all due in one look."""
    files = {f"n{i:02d}.md": f"file {i}\n".encode() for i in range(n)}
    for path, text in files.items():
        writes.create(path, 0o644, ONE, None, None)
        writes.write(path, text, 0, ONE)
    writes.commit_soon(list(files))
    return files


def test_files_due_together_land_in_one_transaction(
    batching: tuple[PendingWrites, Batching],
) -> None:
    writes, store = batching
    files = make_due(writes, 20)
    wait_for(lambda: writes.get("n19.md") is None, what="the files landed")
    assert store.batches == 1
    assert {path: store.inner.read(path)[0] for path in files} == files
    writes.check_tally()


def test_a_file_refused_in_a_batch_stays_pending_and_the_others_land(
    batching: tuple[PendingWrites, Batching],
) -> None:
    writes, store = batching
    store.refused = {"n03.md"}
    files = make_due(writes, 8)
    others = {p for p in files if p != "n03.md"}
    wait_for(lambda: all(writes.get(p) is None for p in others), what="the others landed")
    assert {p: store.inner.read(p)[0] for p in others} == {p: files[p] for p in others}
    refused = writes.get("n03.md")
    assert refused is not None and state_of(refused) is State.FAILED
    with pytest.raises(NotFound):
        store.inner.read("n03.md")
    store.refused.clear()  # the retry lands it
    wait_for(lambda: writes.get("n03.md") is None, what="the retry")
    assert store.inner.read("n03.md")[0] == files["n03.md"]
    writes.check_tally()


def test_a_batch_that_does_not_commit_loses_nothing(
    batching: tuple[PendingWrites, Batching],
) -> None:
    writes, store = batching
    store.undo_batches = True
    files = make_due(writes, 8)
    wait_for(
        lambda: all(
            (b := writes.get(p)) is not None and state_of(b) is State.FAILED for p in files
        ),
        what="every file of the batch failed",
    )
    assert store.inner.listdir("") == []  # nothing of the batch was kept
    store.undo_batches = False
    wait_for(lambda: all(writes.get(p) is None for p in files), what="the retries")
    assert {path: store.inner.read(path)[0] for path in files} == files
    assert not any(is_conflict_copy(e.path) for e in store.inner.listdir(""))
    writes.check_tally()


def test_a_batch_in_flight_never_waits_for_the_mounts_lock(tmp_path: Path) -> None:
    """A namespace operation holds the mount's lock while it waits for the store's write
    lock, which a batch holds until its last file is written: the batch must not need the
    mount's lock meanwhile (each landing notes its journal record inside the batch). They
    once waited for each other until the store's busy timeout, and an untar's utimens
    failed with "the store is busy"."""
    real = open_store(f"sqlite://{tmp_path / 'memory.db'}?busy_timeout=2")
    in_batch, lock_held = threading.Event(), threading.Event()

    class Pausing(Batching):
        def write(self, path: str, data: bytes, **kwargs: Any) -> Entry:
            entry = super().write(path, data, **kwargs)
            if not in_batch.is_set():  # the batch's first file: its write lock is held
                in_batch.set()
                assert lock_held.wait(DEADLINE_S)
            return entry

    store = Pausing(real)
    writes = PendingWrites(as_store(store), direct, journal_dir=tmp_path / "j", quiet_period=3600)
    writes.start()
    try:
        files = make_due(writes, 4)
        assert in_batch.wait(DEADLINE_S), "no batch began"
        with writes.lock:  # as a namespace operation does around its store change
            lock_held.set()
            real.write("made-meanwhile.md", b"waits for the batch, not for ever\n", author="x")
        wait_for(lambda: all(writes.get(p) is None for p in files), what="the batch landed")
        assert store.batches == 1
        assert {path: real.read(path)[0] for path in files} == files
    finally:
        lock_held.set()
        writes.close()
        real.close()


class Chaos(Batching):
    """Refuses a share of writes and undoes a share of batches, at random (seeded)."""

    def __init__(self, inner: Store, seed: int) -> None:
        super().__init__(inner)
        self.rng = random.Random(seed)
        self.calm = False
        self._rng_lock = threading.Lock()

    def _roll(self, p: float) -> bool:
        with self._rng_lock:
            return not self.calm and self.rng.random() < p

    def write(self, path: str, data: bytes, **kwargs: Any) -> Entry:
        if self._roll(0.01):  # (a refused file refuses writes for a second: not often)
            raise StoreUnavailable(f"{path}: refused (injected)")
        return super().write(path, data, **kwargs)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self.batches += 1
        undo = self._roll(0.1)
        with self.inner.batch():
            yield
            if undo:
                raise StoreUnavailable("the transaction did not commit (injected)")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_appenders_on_shared_files_with_failing_commits_lose_nothing(
    tmp_path: Path, seed: int
) -> None:
    """Four programs append to six shared files through one mount's write path while
    the committer lands what falls due (alone or in batches) and the store refuses
    writes and undoes batches at random: every append that was acknowledged is in the
    store once, in its writer's order."""
    real = open_store(f"sqlite://{tmp_path / 'memory.db'}")
    files = [f"f{i}.md" for i in range(6)]
    for f in files:
        real.write(f, b"", author="setup")
    store = Chaos(real, seed)
    writes = PendingWrites(as_store(store), direct, journal_dir=tmp_path / "j", quiet_period=0.002)
    writes.start()
    acked: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def program(k: int) -> None:
        who = Writer(pid=5000 + k, started=1, program=f"p{k}", user="someone")
        rng = random.Random(seed * 100 + k)
        mine = acked.setdefault(who.program, [])
        try:
            for n in range(150):
                f = rng.choice(files)
                token = f"{who.program}-{n}"
                try:
                    writes.write(f, f"{token}\n".encode(), 0, who, append=True)
                except (OSError, MemfsError):
                    continue  # refused (a failing file): not acknowledged
                mine.append(token)
                roll = rng.random()
                if roll < 0.1:
                    with contextlib.suppress(OSError, MemfsError):
                        writes.commit(f)  # an fsync; a failure keeps the data
                elif roll < 0.2:
                    writes.commit_soon(files)  # as another mount's change makes them due
        except BaseException as e:  # (reported below: a thread's error must not vanish)
            errors.append(e)

    threads = [threading.Thread(target=program, args=(k,)) for k in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE_S)
        assert not any(t.is_alive() for t in threads) and not errors, errors
        store.calm = True  # the retries land what is left
        wait_for(lambda: writes.pending_bytes == 0, what="everything landed")
        writes.check_tally()
        assert store.batches > 0, "no batch was tried"
    finally:
        store.calm = True
        health = writes.close()
    assert health.unsaved == ()
    stored = {f: real.read(f)[0].decode().split() for f in files}
    real.close()
    lines = [ln for f in files for ln in stored[f]]
    assert len(lines) == len(set(lines)), "an append landed twice"
    for prog, tokens in acked.items():
        missing = set(tokens) - set(lines)
        assert not missing, f"acknowledged, not in the store: {sorted(missing)[:5]}"
        for f in files:  # in each file, one writer's appends in the order it made them
            numbers = [int(ln.rpartition("-")[2]) for ln in stored[f] if ln.startswith(prog + "-")]
            assert numbers == sorted(numbers), f"{f}: {prog}'s appends out of order"


# --- the state machine -----------------------------------------------------------------------
class WritePath(RuleBasedStateMachine):
    """Two writers on one mount and a door on the same store. ``must[f]``: tokens an
    acknowledged change put in ``f`` and no later acknowledged change took out."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memfs-states-"))
        self.real = open_store(f"sqlite://{self.tmp / 'memory.db'}")
        self.flaky = Flaky(self.real)
        self.writes = PendingWrites(
            as_store(self.flaky),
            direct,
            journal_dir=self.tmp / "journal",
            recovery_dir=self.tmp / "journal" / "recovered",
            quiet_period=3600,
        )
        self.writes.sync_in_journal_from = 1  # (see fsync)
        self.writes.start()
        self.must: dict[str, set[bytes]] = {f: set() for f in FILES}
        self.count = 0
        self.lost = False
        self.landing: threading.Thread | None = None  # a commit held inside the store

    def in_flight(self, f: str) -> bool:
        buf = self.writes.get(f)
        return buf is not None and buf.state is State.COMMITTING

    def would_wait(self, f: str, who: Writer, low: int | None) -> bool:
        """Whether a change of ``f`` by ``who`` from ``low`` (None: at the end) waits
        for the landing in flight (the test thread must not: it holds the gate)."""
        buf = self.writes.get(f)
        if buf is None or buf.state is not State.COMMITTING:
            return False
        at = len(buf.data) if low is None else low
        if buf.writer != who and buf.can_queue(at):
            return False  # another writer's append queues a turn behind the landing
        mine = buf.writer == who or not buf.changed_since_snapshot()
        return not (mine and buf.takes_while_committing(at))

    def token(self, who: str) -> bytes:
        self.count += 1
        return f"{who}-{self.count}\n".encode()

    def view(self, f: str) -> bytes | None:
        buf = self.writes.get(f)
        if buf is not None:
            return bytes(buf.data)
        try:
            return self.real.read(f)[0]
        except NotFound:
            return None

    @rule(f=st.sampled_from(FILES))
    def hold_a_landing(self, f: str) -> None:
        """fsync ``f`` from another thread, held inside the store's write."""
        if self.landing is not None or self.lost:
            return
        self.flaky.held.clear()
        self.flaky.gate, self.flaky.gated = threading.Event(), f
        self.landing = threading.Thread(target=self.fsync_quietly, args=(f,))
        self.landing.start()
        deadline = time.monotonic() + DEADLINE_S
        while not self.flaky.held.wait(0.01) and self.landing.is_alive():
            assert time.monotonic() < deadline, "the landing neither came nor went"
        if not self.flaky.held.is_set():  # nothing to land, or refused before the store
            self.let_the_landing_go()

    def fsync_quietly(self, f: str) -> None:
        with contextlib.suppress(OSError, MemfsError):
            self.writes.commit(f)

    @rule()
    def let_the_landing_go(self) -> None:
        if self.landing is None or self.flaky.gate is None:
            return
        self.flaky.gate.set()
        self.landing.join(DEADLINE_S)
        assert not self.landing.is_alive(), "the held landing never ended"
        self.landing, self.flaky.gate = None, None

    @rule(f=st.sampled_from(FILES), who=st.sampled_from((ONE, TWO)))
    def create(self, f: str, who: Writer) -> None:
        if self.view(f) is not None or self.in_flight(f):
            return
        try:
            self.writes.create(f, 0o644, who, None, None)
        except OSError:
            return
        self.must[f] = set()

    @rule(f=st.sampled_from(FILES), who=st.sampled_from((ONE, TWO)))
    def append(self, f: str, who: Writer) -> None:
        if self.view(f) is None or self.would_wait(f, who, None):
            return
        tok = self.token(who.program)
        try:
            self.writes.write(f, tok, 0, who, append=True)
        except (OSError, MemfsError):
            return
        self.must[f].add(tok)

    def read_rev(self, f: str, who: Writer) -> int | None:
        """The revision an open to read ``f`` by ``who`` records now, as the mount's
        open_file does (memfs.mount.reads): pending changes settled first, then what a
        pending buffer (``who``'s own appends) is built on, else what is stored."""
        if not self.writes.settle_for_reading(f, who):
            return None
        buf = self.writes.get(f)
        if buf is not None:
            rev = 0 if buf.created else buf.base_rev
        else:
            try:
                rev = self.real.stat(f).rev
            except NotFound:
                return None
        return rev if rev > 0 else None

    @rule(f=st.sampled_from(FILES), who=st.sampled_from((ONE, TWO)))
    def save_whole(self, f: str, who: Writer) -> None:
        """An editor's save: read the file, truncate it to nothing, write it all back
        with one more line; its base is the revision its read recorded."""
        before = self.view(f)
        # (An open while the file lands waits for the landing, which this thread holds.)
        if before is None or self.in_flight(f) or self.would_wait(f, who, 0):
            return
        read = self.read_rev(f, who)
        before = self.view(f)
        if before is None:
            return
        tok = self.token(who.program)
        kept = {t for t in self.must[f] if t in before}
        try:
            self.writes.truncate(f, 0, who, read_rev=read)
        except (OSError, MemfsError):
            return
        # Acknowledged: the file is empty now (what the door appended since this
        # writer's base may come back by the merge, or stand in a conflict copy).
        self.must[f] = self.must[f] - kept
        try:
            self.writes.write(f, before + tok, 0, who)
        except (OSError, MemfsError):
            return
        self.must[f] |= kept | {tok}

    @rule(f=st.sampled_from(FILES))
    def door_append(self, f: str) -> None:
        """Another door appends to the file in the store (compare-and-set, retried)."""
        tok = self.token("door")
        for _ in range(5):
            try:
                data, e = self.real.read(f)
            except NotFound:
                return
            try:
                self.real.write(f, data + tok, author="door", expected_rev=e.rev)
            except Conflict:
                continue
            self.must[f].add(tok)
            return

    @rule(f=st.sampled_from(FILES), large=st.booleans())
    def fsync(self, f: str, large: bool) -> None:
        """An fsync: of a small file (committed before it returns), or of one past the
        size whose fsync syncs the journal and leaves the commit to the committer
        (``sync_in_journal_from`` is one byte here, so every pending file is past it)."""
        if self.in_flight(f):
            return
        with contextlib.suppress(OSError, MemfsError):
            if large:
                self.writes.sync(f)
            else:
                self.writes.commit(f)

    @rule()
    def commit_all(self) -> None:
        if self.landing is not None:
            return
        with contextlib.suppress(OSError, MemfsError):
            self.writes.commit_under("")

    @rule(failing=st.booleans())
    def store_fails(self, failing: bool) -> None:
        self.flaky.failing = failing

    @precondition(lambda self: not self.lost and self.landing is None)
    @rule()
    def store_lost(self) -> None:
        self.flaky.failing = False
        self.writes.lose("the store went away (injected)", lambda: None)
        self.lost = True

    @invariant()
    def counts_are_the_sum_of_the_buffers(self) -> None:
        self.writes.check_tally()

    @invariant()
    def nothing_acknowledged_is_lost(self) -> None:
        for f in FILES:
            missing = self.must[f] - self.found(f)
            assert not missing, f"{f}: acknowledged {sorted(missing)} are gone"

    def found(self, f: str) -> set[bytes]:
        """Every token in the mount's view of ``f``, the store's, or a conflict copy."""
        texts = [self.view(f) or b""]
        with contextlib.suppress(NotFound):
            texts.append(self.real.read(f)[0])
        for e in self.real.listdir(""):
            if is_conflict_copy(e.path) and e.path.startswith(f.rsplit(".", 1)[0]):
                texts.append(self.real.read(e.path)[0])
        return {t for t in (ln + b"\n" for text in texts for ln in text.split(b"\n")) if t != b"\n"}

    def teardown(self) -> None:
        self.let_the_landing_go()
        self.flaky.failing = False
        health = self.writes.close()
        try:
            if not self.lost:
                assert health.unsaved == ()
                for f in FILES:
                    missing = self.must[f] - self.found(f)
                    assert not missing, f"{f}: {sorted(missing)} never reached the store"
        finally:
            self.real.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


WritePath.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_the_write_path_as_a_state_machine = WritePath.TestCase


# --- an fsync the journal keeps --------------------------------------------------------------
def test_writes_made_while_an_fsynced_file_lands_stay_durable_in_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large file's fsync syncs the journal and leaves the commit to the committer.
    Writes that come while that landing is in flight stay pending, journaled anew as a
    whole once the landing ends; the old records (synced) are done only after the new
    ones are synced too, or a power loss could keep the done and lose the new."""
    synced = calls(monkeypatch, jr.Journal, "sync_data", lambda journal: journal.size)
    store = Flaky(open_store(f"sqlite://{tmp_path / 'memory.db'}"))
    with running(store, tmp_path) as writes:
        writes.sync_in_journal_from = 1
        writes.create("big.bin", 0o644, ONE, None, None)
        writes.write("big.bin", b"first\n", 0, ONE)
        store.gate, store.gated = threading.Event(), "big.bin"
        writes.sync("big.bin")
        assert len(synced) == 1
        assert store.held.wait(DEADLINE_S), "the committer never began the landing"
        writes.write("big.bin", b"second\n", 0, ONE, append=True)  # past the snapshot
        store.gate.set()
        wait_for(lambda: len(synced) == 2, what="the journal synced after the landing")
        buf = writes.get("big.bin")
        assert buf is not None and bytes(buf.data) == b"first\nsecond\n"
        assert store.inner.read("big.bin")[0] == b"first\n"
        (journal,) = (tmp_path / "j").glob("*.journal")
        replayed = jr.replay(journal, lambda p, rev: store.inner.read_revision(p, rev))
        assert [bytes(r.data) for r in replayed] == [b"first\nsecond\n"]
        store.gate = None
        writes.commit("big.bin")
        assert store.inner.read("big.bin")[0] == b"first\nsecond\n"


# --- a landing in flight holds up nothing else -------------------------------------------
def revisions(store: Store, path: str) -> list[tuple[str, bytes]]:
    """``path``'s retained revisions, oldest first: (author, content)."""
    return [(r.author, store.read_revision(path, r.rev)) for r in reversed(store.history(path))]


def landing_held(writes: PendingWrites, flaky: Flaky, path: str) -> threading.Thread:
    """An fsync of ``path`` from another thread, held inside the store's write until
    :func:`let_go`."""
    flaky.gate, flaky.gated = threading.Event(), path
    fsync = threading.Thread(target=writes.commit, args=(path,))
    fsync.start()
    assert flaky.held.wait(DEADLINE_S), "the landing never reached the store"
    return fsync


def let_go(flaky: Flaky, fsync: threading.Thread) -> None:
    assert flaky.gate is not None
    flaky.gate.set()
    fsync.join(DEADLINE_S)
    assert not fsync.is_alive(), "the held landing never ended"


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[PendingWrites, Flaky]]:
    real = open_store(f"sqlite://{tmp_path / 'memory.db'}")
    real.write("slow.md", b"", author="someone")
    real.write("other.md", b"", author="someone")
    flaky = Flaky(real)
    with running(flaky, tmp_path) as writes:
        try:
            yield writes, flaky
        finally:
            if flaky.gate is not None:
                flaky.gate.set()


def test_a_landing_held_in_the_store_blocks_no_other_write(
    held: tuple[PendingWrites, Flaky],
) -> None:
    writes, flaky = held
    writes.write("slow.md", b"first\n", 0, ONE, append=True)
    fsync = landing_held(writes, flaky, "slow.md")
    # The fsync is inside the store's write now: the mount's lock is free.
    writes.write("other.md", b"elsewhere\n", 0, TWO, append=True)
    writes.write("slow.md", b"second\n", 0, ONE, append=True)  # the same file and writer
    slow = writes.get("slow.md")
    assert slow is not None and slow.state is State.COMMITTING
    let_go(flaky, fsync)
    assert flaky.inner.read("slow.md")[0] == b"first\n"  # what the fsync landed
    assert (state_of(slow), bytes(slow.data)) == (State.DIRTY, b"first\nsecond\n")  # still pending
    # Another program's write commits the first one's bytes as their own revision.
    writes.write("slow.md", b"third\n", 0, TWO, append=True)
    writes.commit("slow.md")
    assert flaky.inner.read("slow.md")[0] == b"first\nsecond\nthird\n"
    authors = [r.author for r in flaky.inner.history("slow.md")]
    assert authors[:3] == [TWO.actor, ONE.actor, ONE.actor]
    writes.check_tally()


def test_another_writer_takes_over_a_landing_buffer_nothing_changed_since(
    held: tuple[PendingWrites, Flaky],
) -> None:
    writes, flaky = held
    writes.write("slow.md", b"one\n", 0, ONE, append=True)
    fsync = landing_held(writes, flaky, "slow.md")
    writes.write("slow.md", b"two\n", 0, TWO, append=True)  # does not wait
    let_go(flaky, fsync)
    writes.commit("slow.md")
    assert flaky.inner.read("slow.md")[0] == b"one\ntwo\n"
    authors = [r.author for r in flaky.inner.history("slow.md")]
    assert authors[:2] == [TWO.actor, ONE.actor]


def test_programs_appending_in_turn_queue_a_revision_each_and_never_wait(
    held: tuple[PendingWrites, Flaky],
) -> None:
    """Two programs append to one log in turn while its landing is held in the store:
    none of their appends waits for that landing, and each turn lands as a revision of
    its own, by its own writer, in order (four writers on two mounts made one landing
    per append, each waited for)."""
    writes, flaky = held
    flaky.inner.write("log.md", b"", author="someone")
    writes.write("log.md", b"a1\n", 0, ONE, append=True)
    fsync = landing_held(writes, flaky, "log.md")
    turns = [(b"b1\n", TWO), (b"a2\n", ONE), (b"a3\n", ONE), (b"b2\n", TWO)]

    def append_all() -> None:
        for line, who in turns:
            writes.write("log.md", line, 0, who, append=True)

    appender = threading.Thread(target=append_all)
    appender.start()
    appender.join(DEADLINE_S)  # the landing is still held: waiting for it never ends
    assert not appender.is_alive(), "an append waited for the landing in flight"
    buf = writes.get("log.md")
    assert buf is not None and [t.end for t in buf.turns] == [3, 6, 12]
    let_go(flaky, fsync)
    writes.commit("log.md")
    assert revisions(flaky.inner, "log.md")[1:] == [
        (ONE.actor, b"a1\n"),
        (TWO.actor, b"a1\nb1\n"),
        (ONE.actor, b"a1\nb1\na2\na3\n"),
        (TWO.actor, b"a1\nb1\na2\na3\nb2\n"),
    ]
    writes.check_tally()


def test_queued_turns_stay_apart_through_a_failed_landing_and_a_rebase(
    tmp_path: Path,
) -> None:
    flaky = Flaky(open_store(f"sqlite://{tmp_path / 'memory.db'}"))
    flaky.inner.write("log.md", b"", author="someone")
    # No committer: the landings are this test's own.
    writes = PendingWrites(as_store(flaky), direct, journal_dir=tmp_path / "j")
    writes.write("log.md", b"a1\n", 0, ONE, append=True)
    writes.write("log.md", b"b1\n", 0, TWO, append=True)
    writes.write("log.md", b"a2\n", 0, ONE, append=True)
    flaky.failing = True
    with pytest.raises(StoreUnavailable):
        writes.commit("log.md")
    buf = writes.get("log.md")
    assert buf is not None and buf.state is State.FAILED and len(buf.turns) == 2
    flaky.failing = False
    flaky.inner.write("log.md", b"door\n", author="door")  # meanwhile, another door
    writes.commit("log.md")
    assert flaky.inner.read("log.md")[0] == b"door\na1\nb1\na2\n"
    assert revisions(flaky.inner, "log.md")[2:] == [
        (ONE.actor, b"door\na1\n"),
        (TWO.actor, b"door\na1\nb1\n"),
        (ONE.actor, b"door\na1\nb1\na2\n"),
    ]
    writes.check_tally()
    assert writes.close().unsaved == ()
    flaky.inner.close()


def ends(fn: Callable[[], object]) -> bool:
    """Whether ``fn``, run in a thread, returns within the deadline (a buffer left
    landing for ever makes the next commit of its file wait for ever)."""
    done = threading.Thread(target=fn, daemon=True)
    done.start()
    done.join(DEADLINE_S)
    return not done.is_alive()


def test_writes_during_a_landing_whose_result_cannot_be_read_land_after_it(
    held: tuple[PendingWrites, Flaky],
) -> None:
    """A landing ends in a conflict (theirs stays, ours becomes a copy) while the writer
    appended past it, and the store then fails the read of what stayed: the buffer does
    not stay landing (its writers would wait for ever); the appends land after theirs."""
    writes, flaky = held
    flaky.inner.write("slow.md", b"one\ntwo\n", author="someone")
    writes.write("slow.md", b"ONE", 0, ONE)  # an edit of the first line
    fsync = landing_held(writes, flaky, "slow.md")
    theirs = flaky.inner.write("slow.md", b"uno\ntwo\n", author="someone")  # the same line
    writes.write("slow.md", b"three\n", 8, ONE)  # past the landing's snapshot
    flaky.unreadable = {theirs.rev}
    let_go(flaky, fsync)
    flaky.unreadable = set()
    assert ends(lambda: writes.commit("slow.md")), "the buffer was left landing"
    assert flaky.inner.read("slow.md")[0] == b"uno\ntwo\nthree\n"
    (copy,) = [e.path for e in flaky.inner.listdir("") if is_conflict_copy(e.path)]
    assert flaky.inner.read(copy)[0] == b"ONE\ntwo\n"
    assert writes.errors >= 1  # said, not swallowed
    writes.check_tally()


def test_a_failure_after_the_store_took_a_landing_leaves_the_file_writable(
    tmp_path: Path,
) -> None:
    """The mount's own bookkeeping after a landing (here its hook) fails once: the
    landing stands, is reported, and the file's next writes land."""
    store = open_store(f"sqlite://{tmp_path / 'memory.db'}")
    store.write("log.md", b"", author="someone")
    failures = [RuntimeError("a hook failed (injected)")]

    def committed(*_args: object) -> None:
        if failures:
            raise failures.pop()

    writes = PendingWrites(store, direct, journal_dir=tmp_path / "j", on_committed=committed)
    try:
        writes.write("log.md", b"one\n", 0, ONE, append=True)
        writes.commit("log.md")
        writes.write("log.md", b"two\n", 0, ONE, append=True)
        assert ends(lambda: writes.commit("log.md")), "the buffer was left landing"
        assert store.read("log.md")[0] == b"one\ntwo\n"
        assert writes.errors == 1
        writes.check_tally()
    finally:
        writes.close()
        store.close()


def test_a_queue_that_fails_after_its_first_turn_landed_keeps_every_turn(
    tmp_path: Path,
) -> None:
    """The later turns of a queue land as one series in the first turn's transaction:
    when they fail, the first is undone with them and every turn stays queued."""
    flaky = Flaky(open_store(f"sqlite://{tmp_path / 'memory.db'}"))
    flaky.inner.write("log.md", b"", author="someone")
    writes = PendingWrites(as_store(flaky), direct, journal_dir=tmp_path / "j")
    for line, who in [(b"a1\n", ONE), (b"b1\n", TWO), (b"a2\n", ONE)]:
        writes.write("log.md", line, 0, who, append=True)
    flaky.series_failing = True
    with pytest.raises(StoreUnavailable):
        writes.commit("log.md")
    assert flaky.inner.read("log.md")[0] == b""  # the first turn went back with the rest
    buf = writes.get("log.md")
    assert buf is not None and buf.state is State.FAILED and len(buf.turns) == 2
    flaky.series_failing = False
    writes.commit("log.md")
    assert revisions(flaky.inner, "log.md")[1:] == [
        (ONE.actor, b"a1\n"),
        (TWO.actor, b"a1\nb1\n"),
        (ONE.actor, b"a1\nb1\na2\n"),
    ]
    writes.check_tally()
    assert writes.close().unsaved == ()
    flaky.inner.close()


def test_a_change_below_a_queued_turn_lands_the_turns_first(
    held: tuple[PendingWrites, Flaky],
) -> None:
    writes, flaky = held
    flaky.inner.write("log.md", b"", author="someone")
    writes.write("log.md", b"a1\n", 0, ONE, append=True)
    writes.write("log.md", b"b1\n", 0, TWO, append=True)
    writes.write("log.md", b"B", 0, TWO)  # TWO's own write, into ONE's turn
    assert flaky.inner.read("log.md")[0] == b"a1\nb1\n"  # landed before it went in
    writes.commit("log.md")
    assert flaky.inner.read("log.md")[0] == b"B1\nb1\n"
    authors = [r.author for r in reversed(flaky.inner.history("log.md"))][1:]
    assert authors == [ONE.actor, TWO.actor, TWO.actor]


def test_writes_during_a_rebased_landing_follow_it_when_its_revision_is_pruned(
    tmp_path: Path,
) -> None:
    """Another mount's history may prune the revision a landing made before this mount
    settles it (four appenders on two mounts, a queue of turns a landing): the writes
    made meanwhile follow the content the landing holds. Reading that revision back
    failed, the buffer stayed landing, and its writers waited for ever (and with them,
    the kernel's cache invalidation of the file)."""

    class Pruned(Flaky):
        def read_revision(self, path: str, rev: int) -> bytes:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)

    flaky = Pruned(open_store(f"sqlite://{tmp_path / 'memory.db'}"))
    flaky.inner.write("log.md", b"start\n", author="someone")
    with running(flaky, tmp_path) as writes:
        writes.write("log.md", b"a\n", 0, ONE, append=True)
        flaky.inner.write("log.md", b"start\ndoor\n", author="door")  # so it rebases
        fsync = landing_held(writes, flaky, "log.md")
        writes.write("log.md", b"b\n", 0, ONE, append=True)  # while it lands
        let_go(flaky, fsync)
        buf = writes.get("log.md")
        assert buf is not None and state_of(buf) is State.DIRTY
        assert bytes(buf.data) == b"start\ndoor\na\nb\n"
        writes.commit("log.md")
        assert flaky.inner.read("log.md")[0] == b"start\ndoor\na\nb\n"


def test_the_page_boundary_that_splits_a_write_is_the_kernels_not_the_buffers(
    held: tuple[PendingWrites, Flaky],
) -> None:
    """An O_APPEND write goes to the end of what this mount holds, but the kernel split
    it where its own offset crossed a page: that offset decides whether more may come."""
    writes, _ = held
    writes.write("other.md", b"b", PAGE - 1, ONE, append=True)  # lands at 0 here
    writes.commit_soon(["other.md"])
    buf = writes.get("other.md")
    assert buf is not None and bytes(buf.data) == b"b"
    assert buf.due_in(writes.quiet_period, time.monotonic()) > 0  # the rest may come
    writes.write("other.md", b"0-315\n", PAGE, ONE, append=True)
    writes.commit_soon(["other.md"])
    assert buf.due_in(writes.quiet_period, time.monotonic()) <= 0


# --- the committer is woken only when it would look too late -----------------------------
class CountingEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self.sets = 0

    def set(self) -> None:
        self.sets += 1
        super().set()


def test_a_write_wakes_the_committer_only_when_it_would_look_too_late(tmp_path: Path) -> None:
    """An idle committer sleeps until woken: the first write wakes it. Writes after that
    are due later than it looks again (each pushes its file's quiet period on), so they
    leave it asleep; what they wrote still lands one quiet period after the last."""
    store = open_store(f"sqlite://{tmp_path / 'memory.db'}")
    store.write("a.md", b"", author="someone")
    writes = PendingWrites(store, direct, journal_dir=tmp_path / "j", quiet_period=2.0)
    wake = CountingEvent()
    writes._wake = wake
    writes.start()
    try:
        wait_for(lambda: writes._looks_at == math.inf, what="the committer idle")
        writes.write("a.md", b"line 0\n", 0, ONE, append=True)
        assert wake.sets == 1
        wait_for(lambda: writes._looks_at < math.inf, what="the committer's next look")
        for i in range(1, 50):
            writes.write("a.md", f"line {i}\n".encode(), 0, ONE, append=True)
        assert wake.sets == 1
        expected = b"".join(f"line {i}\n".encode() for i in range(50))
        wait_for(lambda: store.read("a.md")[0] == expected, what="the writes landed")
    finally:
        writes.close()
        store.close()
