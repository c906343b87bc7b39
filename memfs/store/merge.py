"""Three-way merge of a file's contents: the one algorithm every writer's rebase uses.

Two writers changed one ``base``: ``theirs`` is already stored, ``ours`` arrives. The
rules, in the order they are tried (the table in the docs' merge page follows them):

=====================================  ==================================================
what the two did                       the result
=====================================  ==================================================
one of them changed nothing            the other's content
both made the same change              that content, once
changes to different lines             both changes
insertions at one place (two lines     both, theirs (already stored) first
added at the end, two appends, two
creations of one new file)
changes overlapping on a line          a conflict (None): the caller keeps both whole
binary content (a NUL byte, not        a conflict for a line merge; byte-range merges
UTF-8)                                 (:func:`merge3` with ``lines=False``) still apply
=====================================  ==================================================

Two passes, so that the common case costs a scan: :func:`merge_regions` sees each
side's change as the one region between its common prefix and suffix with the base
(linear time); only when those regions overlap does :func:`merge_lines` diff line by
line (patience diff, near-linear; bounded by :data:`MAX_LINE_MERGE_BYTES`), which
separates a save that changed several places from the other side's change between them.
"""

from __future__ import annotations

from typing import Any, cast

import merge3 as _merge3
import patiencediff

# patiencediff's matcher takes (isjunk, a, b) as difflib's does, but its stubs do not
# match merge3's protocol (no ``autojunk``); merge3 never passes it.
_MATCHER = cast(Any, patiencediff.PatienceSequenceMatcher)

# Past this many bytes (base, ours and theirs together) a line merge is not tried: the
# change is a conflict, kept whole as a copy, rather than a diff that could stall a
# writer (memory files are small; this bounds hostile or accidental giants).
MAX_LINE_MERGE_BYTES = 8 << 20


def merge3(base: bytes, ours: bytes, theirs: bytes, *, lines: bool = True) -> bytes | None:
    """Both sides' changes to ``base`` in one result, or None when they conflict.

    ``lines``: when the quick region merge finds the changes overlapping, try the line
    merge too (text only). Insertions at one place keep theirs first.
    """
    if ours in (base, theirs):
        return theirs
    if theirs == base:
        return ours
    merged = merge_regions(base, ours, theirs)
    if merged is None and lines:
        merged = merge_lines(base, ours, theirs)
    return merged


def is_text(*contents: bytes) -> bool:
    """Whether every one of ``contents`` reads as text (UTF-8, no NUL byte)."""
    for data in contents:
        if b"\0" in data:
            return False
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def merge_lines(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The line-wise three-way merge (diff3's rules, with insertions at one place kept
    both); None for text changed on the same lines, binary content, or a merge too
    large to try."""
    if len(base) + len(ours) + len(theirs) > MAX_LINE_MERGE_BYTES:
        return None
    if not is_text(base, ours, theirs):
        return None
    b, t, o = base.splitlines(True), theirs.splitlines(True), ours.splitlines(True)
    m = _merge3.Merge3(b, t, o, sequence_matcher=_MATCHER)
    out: list[bytes] = []
    for region in m.merge_regions():
        kind = region[0]
        if kind == "unchanged":
            out.extend(b[region[1] : region[2]])
        elif kind in ("a", "same"):
            out.extend(t[region[1] : region[2]])
        elif kind == "b":
            out.extend(o[region[1] : region[2]])
        else:  # conflict: (kind, zstart, zend, astart, aend, bstart, bend)
            zstart, zend, astart, aend, bstart, bend = cast(tuple[int, ...], region[1:])
            if zstart != zend:
                return None  # both changed the same lines of the base
            # Two insertions at one place (identical ones are "same"): both, theirs
            # first, as two appends are.
            out.extend(t[astart:aend])
            out.extend(o[bstart:bend])
    return b"".join(out)


def merge_regions(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The quick merge: each side's change is one region of the base; None when the two
    regions touch one line.

    Each side's change is the one region between its common prefix and suffix with the
    base (the prefix found first, so an append is an insertion at the end). Changes on
    different lines of the base are applied together; two changes touching one line are
    a conflict (a byte-exact merge inside a line would splice words, as diff3 refuses
    to). Two insertions at one line boundary keep theirs first (theirs was committed
    first), so two appends keep both tails in commit order.
    """
    o_start, o_end, o_new = _region(base, ours)
    t_start, t_end, t_new = _region(base, theirs)
    mine, yours = ours[o_start:o_new], theirs[t_start:t_new]
    if _overlap(base, (o_start, o_end, mine), (t_start, t_end, yours)):
        return None
    if t_end <= o_start:  # theirs first (also both inserting at the same place)
        return base[:t_start] + yours + base[t_end:o_start] + mine + base[o_end:]
    return base[:o_start] + mine + base[o_end:t_start] + yours + base[t_end:]


def _lines(base: bytes, start: int, end: int, new: bytes) -> tuple[int, int]:
    """The whole lines of ``base`` a change of ``base[start:end]`` into ``new`` touches.
    Whole new lines inserted at a line boundary, or anything added at the end (an
    append), touch none: the change stays a point. Text put in front of a line touches
    that line (two such insertions would splice into one line)."""
    at_boundary = start == 0 or base[start - 1 : start] == b"\n"
    if start == end and (start == len(base) or (at_boundary and new.endswith(b"\n"))):
        return start, start
    first = base.rfind(b"\n", 0, start) + 1
    last = base.find(b"\n", max(end - 1, start))
    return first, len(base) if last < 0 else last + 1


def _overlap(base: bytes, a: tuple[int, int, bytes], b: tuple[int, int, bytes]) -> bool:
    (a0, a1), (b0, b1) = _lines(base, *a), _lines(base, *b)
    if a0 == a1 and b0 == b1:
        return False  # two insertions at line boundaries: both go in
    if a0 == a1:
        return b0 < a0 < b1
    if b0 == b1:
        return a0 < b0 < a1
    return max(a0, b0) < min(a1, b1)


def _region(base: bytes, other: bytes) -> tuple[int, int, int]:
    """``(start, base_end, other_end)``: ``other`` is ``base`` with ``base[start:base_end]``
    replaced by ``other[start:other_end]``, the smallest such region, prefix first."""
    start = _common_prefix(base, other)
    room = min(len(base), len(other)) - start
    tail = _common_prefix(base[::-1][:room], other[::-1][:room]) if room else 0
    return start, len(base) - tail, len(other) - tail


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, comparing large blocks first (memcmp)."""
    n = min(len(a), len(b))
    lo = 0
    step = 1 << 16
    while step:
        while lo + step <= n and a[lo : lo + step] == b[lo : lo + step]:
            lo += step
        step //= 2
    return lo
