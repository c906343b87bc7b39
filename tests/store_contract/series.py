"""The contract of :meth:`memfs.store.base.Store.write_series` (a queue of appends by
programs taking turns, landed as one revision each), and of what a batch's mutations
know about a path from the ones before (:class:`memfs.store.foresight.OwnReads`, on a
server): each is checked against the plain writes it stands for.

Every test runs twice: with the store's own ``write_series`` and with the generic one
of :class:`~memfs.store.base.Store` (a write each, in a batch), which is its model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from memfs.errors import CapExceeded, Conflict, NotFound
from memfs.store.base import Act, Entry, Step, Store
from memfs.store.deltas import MAX_TAIL, MIN_BASE
from tests.store_contract.common import MakeStore

Series = Callable[..., Entry]
LINE = b"a line of the shared log, written by one of its writers\n"


class Refused(Exception):
    """What a caller's own failure inside a batch raises."""


def sha(data: bytes | bytearray) -> str:
    return hashlib.sha256(data).hexdigest()


def steps_of(
    data: bytearray, lines: int, writers: tuple[str, ...] = ("ann", "bob")
) -> tuple[list[Step], list[bytes]]:
    """Grow ``data`` by ``lines`` lines, one step each by the writers in turn: the
    steps and the content each leaves."""
    steps, contents = [], []
    for i in range(lines):
        data += f"{i:05d} ".encode() + LINE
        writer = writers[i % len(writers)]
        steps.append(Step(len(data), sha(data), writer, Act(writer)))
        contents.append(bytes(data))
    return steps, contents


class SeriesContract:
    @pytest.fixture(params=["own", "generic"])
    def series(self, request: pytest.FixtureRequest) -> Series:
        def own(store: Store, *args: object, **kwargs: object) -> Entry:
            return store.write_series(*args, **kwargs)  # type: ignore[arg-type]

        def generic(store: Store, *args: object, **kwargs: object) -> Entry:
            return Store.write_series(store, *args, **kwargs)  # type: ignore[arg-type]

        return own if request.param == "own" else generic

    def test_each_step_is_a_revision_by_its_writer_in_its_operation(
        self, store: Store, series: Series
    ) -> None:
        start = b"# log\n" + b"x" * MIN_BASE + b"\n"
        before = store.write("log.md", start, author="ann")
        data = bytearray(start)
        steps, contents = steps_of(data, 6)
        seq = store.last_seq()
        entry = series(store, "log.md", data, steps, expected_rev=before.rev)
        assert store.read("log.md") == (bytes(data), entry)
        made = [r for r in store.history("log.md") if r.rev > before.rev][::-1]
        assert [(r.author, r.size, r.sha256) for r in made] == [
            (s.author, s.end, s.sha256) for s in steps
        ]
        assert made[-1].rev == entry.rev
        for revision, want in zip(made, contents, strict=True):
            assert store.read_revision("log.md", revision.rev) == want
        records = store.changes(seq)
        assert [(c.kind, c.author, c.size, c.op) for c in records] == [
            ("modify", s.author, s.end, s.act.id) for s in steps
        ]
        # Each writer's turn its own operation, undone alone.
        assert len({s.act.id for s in steps}) == len(steps)
        assert [c.prior_size for c in records] == [len(start)] + [s.end for s in steps[:-1]]
        assert store.verify() == []

    def test_a_moved_base_is_a_conflict_and_writes_nothing(
        self, store: Store, series: Series
    ) -> None:
        before = store.write("log.md", b"one\n", author="ann")
        store.write("log.md", b"one\ntheirs\n", author="cy")
        data = bytearray(b"one\n")
        steps, _ = steps_of(data, 3)
        seq = store.last_seq()
        with pytest.raises(Conflict):
            series(store, "log.md", data, steps, expected_rev=before.rev)
        with pytest.raises(Conflict):
            series(store, "gone.md", data, steps, expected_rev=before.rev)
        assert store.read("log.md")[0] == b"one\ntheirs\n"
        assert store.last_seq() == seq and all(s.act.id is None for s in steps)

    def test_a_cap_refuses_the_whole_series(self, make_store: MakeStore, series: Series) -> None:
        store = make_store(max_tree_bytes=300)
        before = store.write("log.md", b"one\n", author="ann")
        data = bytearray(b"one\n")
        steps, _ = steps_of(data, 8)  # the fifth passes the cap
        with pytest.raises(CapExceeded):
            series(store, "log.md", data, steps, expected_rev=before.rev)
        assert store.read("log.md")[0] == b"one\n"
        assert [r.rev for r in store.history("log.md")] == [before.rev]

    def test_history_keeps_its_length_and_the_newest(
        self, make_store: MakeStore, series: Series
    ) -> None:
        store = make_store(history=3)
        before = store.write("log.md", b"one\n", author="ann")
        data = bytearray(b"one\n")
        steps, contents = steps_of(data, 10)
        entry = series(store, "log.md", data, steps, expected_rev=before.rev)
        kept = store.history("log.md")
        assert [r.rev for r in kept] == list(range(entry.rev, entry.rev - 4, -1))
        assert [store.read_revision("log.md", r.rev) for r in kept] == contents[::-1][:4]
        more = store.write("log.md", bytes(data) + b"last\n", author="ann", expected_rev=entry.rev)
        assert [r.rev for r in store.history("log.md")] == list(range(more.rev, more.rev - 4, -1))

    def test_the_last_revision_takes_the_time_given(self, store: Store, series: Series) -> None:
        before = store.write("log.md", b"one\n", author="ann")
        data = bytearray(b"one\n")
        steps, _ = steps_of(data, 2)
        entry = series(store, "log.md", data, steps, expected_rev=before.rev, mtime_ns=10**18)
        assert entry.mtime_ns == store.stat("log.md").mtime_ns == 10**18
        assert entry.size == len(data)

    def test_a_series_of_a_large_file_past_every_tail_reads_back(
        self, make_store: MakeStore, series: Series
    ) -> None:
        # Past MAX_TAIL, so some revisions are stored whole on the way (new bases).
        store = make_store(history=1000)
        start = b"z" * (MIN_BASE + 10) + b"\n"
        before = store.write("log.md", start, author="ann")
        data = bytearray(start)
        steps, contents = steps_of(data, 3 * MAX_TAIL // len(LINE))
        series(store, "log.md", data, steps, expected_rev=before.rev)
        for revision, want in zip(store.history("log.md")[::-1][1:], contents, strict=True):
            assert store.read_revision("log.md", revision.rev) == want
        assert store.verify() == []

    def test_a_content_stored_before_is_kept_as_it_is(self, store: Store, series: Series) -> None:
        start = b"y" * (MIN_BASE + 10) + b"\n"
        store.write("log.md", start + LINE, author="ann")
        back = store.write("log.md", start, author="ann")
        # The content the file held before: stored already, and continuing nothing now.
        again = Step(len(start) + len(LINE), sha(start + LINE), "bob", Act("bob"))
        entry = series(store, "log.md", bytearray(start + LINE), [again], expected_rev=back.rev)
        assert store.read("log.md")[0] == start + LINE
        assert store.read_revision("log.md", entry.rev) == start + LINE
        assert store.verify() == []

    def test_a_bad_series_is_refused(self, store: Store, series: Series) -> None:
        before = store.write("log.md", b"one\n", author="ann")
        act = Act("ann")
        for ends in ([], [3, 3, 8], [9, 8], [4]):
            steps = [Step(end, "0" * 64, "ann", act) for end in ends]
            with pytest.raises(ValueError, match="not a series"):
                series(store, "log.md", bytearray(b"one\ntwo\n"), steps, expected_rev=before.rev)
        assert store.read("log.md") == (b"one\n", before)


class BatchKnowledgeContract:
    """A batch's later mutations of a path see what its earlier ones left, whatever
    came between (on a server they answer from what they read then)."""

    def test_writes_of_one_file_in_a_batch_each_see_the_last(self, store: Store) -> None:
        data = b"z" * (MIN_BASE + 10) + b"\n"
        rev = store.write("log.md", data, author="ann").rev
        with store.batch():
            for i in range(20):
                data += b"%05d " % i + LINE
                rev = store.write("log.md", data, author="ann", expected_rev=rev).rev
            with pytest.raises(Conflict):
                store.write("log.md", data + LINE, author="ann", expected_rev=rev - 1)
            store.set_attrs("log.md", mode=0o600, author="ann")
            rev = store.write("log.md", data + LINE, author="ann", expected_rev=rev).rev
            assert store.stat("log.md").mode == 0o600
            store.delete("log.md", author="ann")
            with pytest.raises(Conflict):
                store.write("log.md", data, author="ann", expected_rev=rev)
            store.write("log.md", b"new\n", author="ann", expected_rev=0)
            store.write("log.md", b"new\nand more\n", author="ann")
        assert store.read("log.md")[0] == b"new\nand more\n"
        assert store.verify() == []

    def test_a_rename_of_the_directory_moves_what_the_batch_knew(self, store: Store) -> None:
        store.mkdir("d", author="ann")
        rev = store.write("d/log.md", b"one\n", author="ann").rev
        with store.batch():
            rev = store.write("d/log.md", b"one\ntwo\n", author="ann", expected_rev=rev).rev
            rev = store.write("d/log.md", b"one\ntwo\n3\n", author="ann", expected_rev=rev).rev
            store.rename("d", "e", author="ann")
            with pytest.raises(Conflict):
                store.write("d/log.md", b"x\n", author="ann", expected_rev=rev)
            store.write("d/log.md", b"x\n", author="ann", expected_rev=0, parents=True)
            moved = store.stat("e/log.md").rev
            store.write("e/log.md", b"one\ntwo\n3\n4\n", author="ann", expected_rev=moved)
        assert store.read("d/log.md")[0] == b"x\n"
        assert store.read("e/log.md")[0] == b"one\ntwo\n3\n4\n"

    def test_a_write_rolled_back_in_a_batch_leaves_what_came_before(self, store: Store) -> None:
        data = b"w" * (MIN_BASE + 10) + b"\n"
        rev = store.write("log.md", data, author="ann").rev
        with store.batch():
            for i in range(3):
                data += b"%d " % i + LINE
                rev = store.write("log.md", data, author="ann", expected_rev=rev).rev
            with pytest.raises(Refused), store.batch():
                # An inner batch that wrote, then failed: undone with its writes.
                store.write("log.md", data + LINE, author="ann", expected_rev=rev)
                store.write("other.md", b"x" * 10, author="ann")
                raise Refused
            data += LINE
            rev = store.write("log.md", data, author="ann", expected_rev=rev).rev
        assert store.read("log.md")[0] == data
        with pytest.raises(NotFound):
            store.stat("other.md")
        assert store.verify() == []
