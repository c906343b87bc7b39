"""The rebase rules' pure part: merge3 on bytes and the conflict copy's name."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from memfs.paths import name_problem
from memfs.store.rebase import conflict_name, merge3


def test_two_appends_keep_both_tails_theirs_first() -> None:
    assert merge3(b"a\n", b"a\nmine\n", b"a\ntheirs\n") == b"a\ntheirs\nmine\n"


def test_an_append_and_an_edit_at_the_start_merge() -> None:
    assert merge3(b"x\ny\n", b"X\ny\n", b"x\ny\nz\n") == b"X\ny\nz\n"


def test_edits_of_the_same_bytes_do_not_merge() -> None:
    assert merge3(b"abc", b"aXc", b"aYc") is None


def test_one_side_unchanged_gives_the_other() -> None:
    assert merge3(b"abc", b"abc", b"xyz") == b"xyz"
    assert merge3(b"abc", b"xyz", b"abc") == b"xyz"
    assert merge3(b"abc", b"same", b"same") == b"same"


def test_a_repeated_line_appended_is_still_an_append() -> None:
    # The common prefix is found first, so "x\n" added after "x\n" is an append.
    assert merge3(b"x\n", b"x\nx\n", b"x\ny\n") == b"x\ny\nx\n"


def test_large_contents_merge_past_the_block_comparison() -> None:
    base = bytes(range(256)) * 1000
    ours = base + b"mine"
    theirs = b"T" + base[1:]
    assert merge3(base, ours, theirs) == b"T" + base[1:] + b"mine"


@given(
    st.binary(max_size=40),
    st.binary(max_size=10),
    st.binary(max_size=10),
)
def test_two_appends_always_merge_to_both_tails(base: bytes, mine: bytes, theirs: bytes) -> None:
    merged = merge3(base, base + mine, base + theirs)
    assert merged is not None
    assert merged.startswith(base)
    # Nothing of either side is lost, and nothing is invented.
    assert len(merged) == len(base) + len(mine) + len(theirs) or mine == theirs


@given(st.binary(max_size=30), st.binary(max_size=30), st.binary(max_size=30))
def test_a_merge_keeps_what_each_side_kept_of_the_base(
    base: bytes, ours: bytes, theirs: bytes
) -> None:
    merged = merge3(base, ours, theirs)
    if merged is None:
        return
    # Each side's own new bytes are in the result (as a contiguous run).
    from memfs.store.merge import _region

    for side in (ours, theirs):
        start, _, end = _region(base, side)
        assert side[start:end] in merged


def test_conflict_names_pass_the_gate_and_keep_the_extension() -> None:
    when = datetime(2026, 12, 1, 9, 30, 5)
    assert conflict_name("notes.md", when, "vim") == "notes.conflict-20261201-093005-vim.md"
    assert conflict_name("README", when, "local") == "README.conflict-20261201-093005-local"
    taken = {"a.conflict-20261201-093005-x.md"}
    assert conflict_name("a.md", when, "x", taken) == "a.conflict-20261201-093005-x-2.md"
    odd = conflict_name("a.md", when, "mcp:claude code/../\x00")
    assert name_problem(odd) is None
    long = conflict_name("é" * 127 + ".md", when, "w")
    assert len(long.encode()) <= 255 and name_problem(long) is None


def test_edits_of_one_line_conflict_even_on_different_bytes() -> None:
    assert merge3(b"alpha\nbeta\n", b"alphA\nbeta\n", b"alpHa\nbeta\n") is None


def test_an_edit_of_the_last_line_and_an_append_merge() -> None:
    assert merge3(b"a\nb\n", b"a\nB\n", b"a\nb\nc\n") == b"a\nB\nc\n"


def test_text_put_in_front_of_one_line_by_both_sides_conflicts() -> None:
    # Found by the mirror's tests: such insertions once spliced into one line.
    assert merge3(b"title\nbody\n", b"person's title\nbody\n", b"agent's title\nbody\n") is None
    assert merge3(b"a\nb\n", b"Xa\nb\n", b"Y\nb\n") is None


def test_whole_lines_inserted_at_one_boundary_both_go_in() -> None:
    assert merge3(b"a\nb\n", b"a\nmine\nb\n", b"a\ntheirs\nb\n") == b"a\ntheirs\nmine\nb\n"


def test_conflict_copies_are_told_from_their_names() -> None:
    from memfs.store.rebase import is_conflict_copy

    when = datetime(2026, 12, 1, 9, 30, 5)
    for name in ("notes.md", "README", "a/b/MEMORY.md"):
        copy = conflict_name(name.rpartition("/")[2], when, "ann (vim)")
        assert is_conflict_copy(name.rpartition("/")[0] + "/" + copy)
    assert not is_conflict_copy("notes.md")
    assert not is_conflict_copy("conflict-notes.md")
    assert not is_conflict_copy("a.conflict-2026.md")
