"""The three-way merge of contents (memfs.store.merge): the rules of its table."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memfs.store.merge import MAX_LINE_MERGE_BYTES, is_text, merge3, merge_lines


def test_a_line_added_at_the_top_and_one_at_the_end_both_stay() -> None:
    base = b"# Memory\n- a\n- b\n"
    assert merge3(base, b"- top\n" + base, base + b"- end\n") == b"- top\n" + base + b"- end\n"


def test_two_lines_added_at_the_end_keep_theirs_first() -> None:
    base = b"- a\n"
    assert merge3(base, base + b"- mine\n", base + b"- theirs\n") == b"- a\n- theirs\n- mine\n"


def test_a_save_that_changed_two_places_merges_with_a_change_between_them() -> None:
    # The quick region merge sees ours as one region spanning theirs; the line merge
    # separates the two places.
    base = b"one\ntwo\nthree\nfour\nfive\n"
    ours = b"ONE\ntwo\nthree\nfour\nFIVE\n"
    theirs = b"one\ntwo\nTHREE\nfour\nfive\n"
    assert merge3(base, ours, theirs) == b"ONE\ntwo\nTHREE\nfour\nFIVE\n"


def test_the_same_line_changed_differently_is_a_conflict() -> None:
    base = b"alpha\nbeta\ngamma\n"
    assert merge3(base, b"alpha\nbeta-person\ngamma\n", b"alpha\nBETA\ngamma\n") is None


def test_the_same_change_on_both_sides_is_kept_once() -> None:
    base = b"a\nb\n"
    assert merge3(base, b"a\nB\n", b"a\nB\n") == b"a\nB\n"


def test_two_new_files_made_at_once_keep_both_contents() -> None:
    assert merge3(b"", b"mine\n", b"theirs\n") == b"theirs\nmine\n"


def test_binary_content_is_not_merged_by_lines() -> None:
    assert not is_text(b"a\0b")
    assert not is_text(b"\xff\xfe")
    assert merge_lines(b"x\n", b"\0\n", b"y\n") is None


def test_a_merge_too_large_to_try_is_a_conflict() -> None:
    half = MAX_LINE_MERGE_BYTES // 2
    assert merge_lines(b"a\n" * half, b"b\n" * half, b"c\n") is None


@st.composite
def disjoint_line_edits(draw: st.DrawFn) -> tuple[list[bytes], dict[int, bytes], dict[int, bytes]]:
    """A base of distinct lines and two sides' replacements of lines that are neither
    the same nor neighbours (diff3 counts neighbouring changes as one)."""
    n = draw(st.integers(min_value=1, max_value=30))
    base = [f"line {i}\n".encode() for i in range(n)]
    ours: dict[int, bytes] = {}
    theirs: dict[int, bytes] = {}
    for i in range(n):
        side = draw(st.sampled_from(["none", "ours", "theirs"]))
        if side == "none":
            continue
        near = {i - 1, i, i + 1}
        other = theirs if side == "ours" else ours
        if near & other.keys():
            continue
        text = draw(st.sampled_from([b"", b"new\n", b"two\nlines\n"]))
        (ours if side == "ours" else theirs)[i] = text.replace(b"new", f"{side} {i}".encode())
    return base, ours, theirs


def _apply(base: list[bytes], edits: dict[int, bytes]) -> bytes:
    return b"".join(edits.get(i, line) for i, line in enumerate(base))


@given(disjoint_line_edits())
def test_edits_of_different_lines_always_merge_to_both(
    case: tuple[list[bytes], dict[int, bytes], dict[int, bytes]],
) -> None:
    base, ours, theirs = case
    merged = merge3(b"".join(base), _apply(base, ours), _apply(base, theirs))
    assert merged == _apply(base, {**ours, **theirs})


@given(st.lists(st.text(alphabet="abc\n", max_size=8), max_size=6), st.data())
def test_a_merge_never_loses_a_line_one_side_added(lines: list[str], data: st.DataObject) -> None:
    base = "".join(line + "\n" for line in lines).encode()
    cut = data.draw(st.integers(min_value=0, max_value=len(lines)))
    at = len("".join(line + "\n" for line in lines[:cut]).encode())
    ours = base[:at] + b"OURS\n" + base[at:]
    theirs = base + b"THEIRS\n"
    merged = merge3(base, ours, theirs)
    assert merged is not None
    # Both added lines are there once each, and the base's lines around them in order.
    assert merged.count(b"OURS\n") == merged.count(b"THEIRS\n") == 1
    assert merged.replace(b"OURS\n", b"").replace(b"THEIRS\n", b"") == base
