"""What a store foresees for its next transaction (memfs.store.foresight): what makes an
answer stale, and who may guess it. Wrong guesses are the server's to catch (see
tests/test_store_postgres.py); these pin that the store keeps guessing what it can."""

from __future__ import annotations

from memfs.store import foresight
from memfs.store.foresight import Foresight, OwnReads

LOOK = "look"
COUNTERS = (7, 9, None, 3)


def test_one_transaction_claims_the_counters() -> None:
    seen = Foresight()
    assert seen.claim() is None  # nothing committed yet
    seen.committed(9, [], COUNTERS)
    assert seen.claim() == COUNTERS
    assert seen.claim() is None  # another thread reads them instead of guessing


def test_a_commit_drops_the_rows_of_the_paths_it_changed() -> None:
    seen = Foresight()
    seen.committed(1, [], COUNTERS, [(LOOK, "a", ("a1",)), (LOOK, "b", ("b1",))])
    seen.committed(2, ["a"], COUNTERS)
    assert (seen.row(LOOK, "a"), seen.row(LOOK, "b")) == (None, ("b1",))
    seen.committed(3, None, COUNTERS)  # a change wider than its paths
    assert seen.row(LOOK, "b") is None


def test_a_commit_heard_after_a_later_one_keeps_nothing() -> None:
    seen = Foresight()
    seen.committed(5, [], COUNTERS)
    seen.committed(4, ["x"], (1, 4, None, 1), [(LOOK, "x", ("x4",))])
    assert seen.row(LOOK, "x") is None and seen.claim() == COUNTERS


def test_a_commit_without_counters_makes_the_known_ones_stale() -> None:
    seen = Foresight()
    seen.committed(5, [], COUNTERS)
    seen.committed(6, ["y"])  # a rename, a delete: nothing read again
    assert seen.claim() is None


def test_a_miss_forgets_everything_and_pauses() -> None:
    seen = Foresight()
    seen.committed(1, [], COUNTERS, [(LOOK, "a", ("a1",))])
    seen.missed()
    assert seen.row(LOOK, "a") is None and seen.misses == 1
    seen.committed(2, [], COUNTERS)
    claims = [seen.claim() for _ in range(foresight.PAUSE_AFTER_MISS)]
    assert claims == [None] * foresight.PAUSE_AFTER_MISS
    assert seen.claim() == COUNTERS


def test_the_least_recently_foreseen_paths_go_first() -> None:
    seen = Foresight(kept_paths=2)
    for seq, path in enumerate("abc"):
        seen.committed(seq, [], COUNTERS, [(LOOK, path, (path,))])
    assert [seen.row(LOOK, p) for p in "abc"] == [None, ("b",), ("c",)]


def test_a_new_name_is_one_in_a_directory_written_in_that_no_commit_changed() -> None:
    seen = Foresight()
    assert not seen.new_name("d/a", "d")  # nothing known of d
    seen.committed(1, ["d/x"], COUNTERS, [(LOOK, "d/x", ("x1",))], dirs=["d"])
    assert seen.new_name("d/a", "d")
    assert not seen.new_name("d/x", "d")  # written: it has a history
    assert not seen.new_name("e/a", "e")
    seen.committed(2, ["d/x"], COUNTERS)  # its delete: the row goes, the history stays
    assert not seen.new_name("d/x", "d")


def test_a_directory_a_change_reached_is_not_known_any_more() -> None:
    seen = Foresight()
    seen.committed(1, [], COUNTERS, dirs=["d", "e", "f"])
    seen.committed(2, ["d"], COUNTERS)  # removed (a recursive delete records it)
    assert [seen.new_name(f"{p}/a", p) for p in "def"] == [False, True, True]
    seen.committed(3, None, COUNTERS)  # a directory's rename: anything may have moved
    assert not seen.new_name("e/a", "e")
    seen.committed(4, [], COUNTERS, dirs=["f"])
    seen.missed()  # someone else changed the tree
    assert not seen.new_name("f/a", "f")


class Answer:
    """A pending answer (OwnReads only keeps and hands them back)."""

    def __init__(self, row: tuple[str, ...]) -> None:
        self.row = row

    def one(self) -> tuple[str, ...]:
        return self.row

    def all(self) -> list[tuple[str, ...]]:
        return [self.row]


def test_a_batch_keeps_answers_only_for_a_path_it_writes_again() -> None:
    own = OwnReads()
    own.begin()
    assert not own.again("a")  # the first write of a path in the batch
    own.begin()
    assert own.again("a")
    assert not own.again("b")


def test_a_mutation_keeps_its_own_answers_and_forgets_older_ones_at_paths_it_reached() -> None:
    own = OwnReads()
    first = own.begin()
    own.keep("a", LOOK, Answer(("a1",)))
    own.keep_base("a", "base-a")
    own.keep("b", LOOK, Answer(("b1",)))
    own.done(first, ["a", "b"])  # its own: kept
    assert own.row(LOOK, "a") is not None and own.base("a") == "base-a"
    second = own.begin()
    own.keep("b", LOOK, Answer(("b2",)))  # after its own change to b
    own.done(second, ["a", "b"])
    found = own.row(LOOK, "b")
    assert own.row(LOOK, "a") is None and own.base("a") is None
    assert found is not None and found.one() == ("b2",)
    third = own.begin()
    own.done(third, ["c"])  # elsewhere: b stays known
    assert own.row(LOOK, "b") is not None


def test_a_mutation_that_may_have_changed_anything_forgets_everything_but_its_own() -> None:
    own = OwnReads()
    first = own.begin()
    own.keep("a", LOOK, Answer(("a1",)))
    own.done(first, ["a"])
    second = own.begin()
    own.keep("b", LOOK, Answer(("b2",)))
    own.done(second, None)  # a directory's rename, or nothing recorded
    assert own.row(LOOK, "a") is None and own.row(LOOK, "b") is not None


def test_a_rolled_back_mutation_takes_its_answers_and_its_inner_ones_with_it() -> None:
    own = OwnReads()
    first = own.begin()
    own.keep("a", LOOK, Answer(("a1",)))
    own.done(first, ["a"])
    outer = own.begin()
    own.keep("b", LOOK, Answer(("b1",)))
    inner = own.begin()
    own.keep("c", LOOK, Answer(("c1",)))
    own.done(inner, ["c"])
    own.undone(outer)
    assert own.row(LOOK, "a") is not None  # the rollback restored what it was read on
    assert own.row(LOOK, "b") is None and own.row(LOOK, "c") is None


def test_an_inner_mutations_answer_goes_when_its_outer_one_changes_the_path_after() -> None:
    own = OwnReads()
    outer = own.begin()
    inner = own.begin()
    own.keep("a", LOOK, Answer(("a1",)))
    own.done(inner, ["a"])
    own.done(outer, ["a"])  # it may have changed a after the inner one read it
    assert own.row(LOOK, "a") is None


def test_a_batch_keeps_answers_about_a_bounded_number_of_paths() -> None:
    own = OwnReads()
    own.begin()
    for i in range(foresight.OWN_KEPT + 5):
        own.keep(f"p{i}", LOOK, Answer((str(i),)))
    assert own.row(LOOK, "p0") is None
    assert own.row(LOOK, f"p{foresight.OWN_KEPT + 4}") is not None
