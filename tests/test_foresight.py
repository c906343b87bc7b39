"""What a store foresees for its next transaction (memfs.store.foresight): what makes an
answer stale, and who may guess it. Wrong guesses are the server's to catch (see
tests/test_store_postgres.py); these pin that the store keeps guessing what it can."""

from __future__ import annotations

from memfs.store import foresight
from memfs.store.foresight import Foresight

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
