"""Which lines two texts share, at a cost that grows with their size, never its square.

:func:`matching_blocks` answers what :meth:`difflib.SequenceMatcher.get_matching_blocks`
does, by the patience method: lines that occur exactly once on each side anchor the
match (their longest increasing run, found in ``n log n``), and the stretches between
anchors are matched the same way in turn. A stretch with no such lines (blank lines,
braces, repeats) gets Myers's greedy diff with a small cap on its edit distance; past
the cap the stretch is shown as replaced, which is a correct diff, only not the
shortest.

Every step is paid from a :class:`Budget`: work counted in lines visited. A pair of
inputs crafted to make the anchoring recurse deeply runs the budget out and raises
:class:`TooCostly`, and the caller shows a summary instead of a stall; a caller that
must stop (its client went away, its server is stopping) makes the budget raise
:class:`Stopped` at the next step.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Sequence

from memfs.errors import MemfsError

# Lines visited by one diff (matching, then writing the hunks) before it gives up:
# about half a second of work; a file of 100,000 lines with every other line changed
# fits, one of twice that is a summary.
DIFF_BUDGET = 2_000_000
# Edits one stretch without anchors may need before it is shown as replaced whole (its
# trace keeps this squared numbers).
MYERS_CAP = 1_000
# Lines of one pass between looks at the budget, and what a line of such a pass costs
# (in lines visited: a pass does a few dictionary operations per line).
CHUNK = 16_384
ANCHOR_COST = 2


class TooCostly(MemfsError):
    """Finding the diff would cost more than its budget allows."""


class Stopped(MemfsError):
    """The caller asked the work to stop (its client went away, its server is stopping)."""


class Budget:
    """Work a diff may still do, and whether its caller wants it stopped. A part of a
    budget (:meth:`part`) spends from both: a page of many diffs gives each its own
    share of the page's."""

    def __init__(
        self,
        units: int = DIFF_BUDGET,
        stop: Callable[[], bool] | None = None,
        parent: Budget | None = None,
    ) -> None:
        self.left = units
        self.stop = stop
        self.parent = parent

    def spend(self, units: int) -> None:
        self.left -= units
        if self.parent is not None:
            self.parent.left -= units
        if self.stop is not None and self.stop():
            raise Stopped("the work was stopped")
        if self.left < 0 or (self.parent is not None and self.parent.left < 0):
            raise TooCostly("the diff is over its budget")

    def stopping(self) -> None:
        """Stopped if the caller wants the work stopped (work past the diff asks)."""
        if self.stop is not None and self.stop():
            raise Stopped("the work was stopped")

    def part(self, units: int = DIFF_BUDGET) -> Budget:
        return Budget(units, self.stop, self)


def counted(lines: Sequence[Hashable], lo: int, hi: int, budget: Budget) -> Counter[Hashable]:
    """How often each line of ``lines[lo:hi]`` occurs, paid for a chunk at a time (so a
    stop is seen within one chunk's work however long the text)."""
    found: Counter[Hashable] = Counter()
    for start in range(lo, hi, CHUNK):
        end = min(hi, start + CHUNK)
        budget.spend(ANCHOR_COST * (end - start))
        found.update(lines[start:end])
    return found


def _anchors(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    alo: int,
    ahi: int,
    blo: int,
    bhi: int,
    budget: Budget,
) -> list[tuple[int, int]]:
    """The longest run of lines unique on both sides whose positions increase on both."""
    in_a = counted(a, alo, ahi, budget)
    in_b = counted(b, blo, bhi, budget)
    where_b: dict[Hashable, int] = {}
    for start in range(blo, bhi, CHUNK):
        end = min(bhi, start + CHUNK)
        budget.spend(ANCHOR_COST * (end - start))
        where_b.update((line, j) for j, line in enumerate(b[start:end], start) if in_b[line] == 1)
    pairs: list[tuple[int, int]] = []
    for start in range(alo, ahi, CHUNK):
        end = min(ahi, start + CHUNK)
        budget.spend(ANCHOR_COST * (end - start))
        pairs += [
            (i, where_b[line])
            for i, line in enumerate(a[start:end], start)
            if in_a[line] == 1 and line in where_b
        ]
    if not pairs:
        return []
    # Patience sorting: tails[k] is the smallest j ending a run of k+1 pairs.
    tails: list[int] = []
    tail_at: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k] = j
            tail_at[k] = n
        back[n] = tail_at[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    n = tail_at[-1]
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    run.reverse()
    return run


def _myers(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    alo: int,
    ahi: int,
    blo: int,
    bhi: int,
    budget: Budget,
) -> list[tuple[int, int]]:
    """The matched lines of a shortest edit of the stretch, or none when it needs more
    than :data:`MYERS_CAP` edits (the stretch is then replaced whole)."""
    n, m = ahi - alo, bhi - blo
    max_d = min(n + m, MYERS_CAP)
    off = max_d + 1
    v = [0] * (2 * max_d + 3)
    trace: list[list[int]] = []
    end_d = -1
    for d in range(max_d + 1):
        trace.append(v[off - d - 1 : off + d + 2])
        budget.spend(d + 1)
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and a[alo + x] == b[blo + y]:
                x += 1
                y += 1
            if x > start:
                budget.spend(x - start)
            v[off + k] = x
            if x >= n and y >= m:
                end_d = d
                break
        if end_d >= 0:
            break
    if end_d < 0:
        return []
    matched: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(end_d, 0, -1):
        snap = trace[d]  # v as it was when step d began, k at snap[k + d + 1]
        k = x - y
        down = k == -d or (k != d and snap[k + d] < snap[k + d + 2])
        prev_k = k + 1 if down else k - 1
        prev_x = snap[prev_k + d + 1]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x -= 1
            y -= 1
            matched.append((alo + x, blo + y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        matched.append((alo + x, blo + y))
    return matched


def matching_blocks(
    a: Sequence[Hashable], b: Sequence[Hashable], budget: Budget
) -> list[tuple[int, int, int]]:
    """Triples ``(i, j, n)``: ``a[i:i+n] == b[j:j+n]``, increasing in ``i`` and ``j``,
    ending with ``(len(a), len(b), 0)`` as difflib's do. TooCostly or Stopped from
    ``budget``."""
    matched: list[tuple[int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        start = alo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            matched.append((alo, blo))
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
            matched.append((ahi, bhi))
        budget.spend(1 + alo - start + (ahi - alo) + (bhi - blo))
        if alo == ahi or blo == bhi:
            continue
        small = (ahi - alo) * (bhi - blo) <= 64
        anchors = [] if small else _anchors(a, b, alo, ahi, blo, bhi, budget)
        if not anchors:
            matched += _myers(a, b, alo, ahi, blo, bhi, budget)
            continue
        i0, j0 = alo, blo
        for i, j in anchors:
            matched.append((i, j))
            stack.append((i0, i, j0, j))
            i0, j0 = i + 1, j + 1
        stack.append((i0, ahi, j0, bhi))
    matched.sort()
    blocks: list[tuple[int, int, int]] = []
    for i, j in matched:
        if blocks:
            bi, bj, bn = blocks[-1]
            if bi + bn == i and bj + bn == j:
                blocks[-1] = (bi, bj, bn + 1)
                continue
        blocks.append((i, j, 1))
    blocks.append((len(a), len(b), 0))
    return blocks


def opcodes(blocks: list[tuple[int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """What :meth:`difflib.SequenceMatcher.get_opcodes` makes of ``blocks``."""
    out: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for ai, bj, size in blocks:
        tag = ""
        if i < ai and j < bj:
            tag = "replace"
        elif i < ai:
            tag = "delete"
        elif j < bj:
            tag = "insert"
        if tag:
            out.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            out.append(("equal", ai, i, bj, j))
    return out


def grouped(
    codes: list[tuple[str, int, int, int, int]], n: int = 3
) -> list[list[tuple[str, int, int, int, int]]]:
    """Hunks with ``n`` lines of context, as difflib's ``get_grouped_opcodes`` makes them."""
    codes = list(codes) or [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups: list[list[tuple[str, int, int, int, int]]] = []
    group: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups
