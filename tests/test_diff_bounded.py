"""The bounded line matching of :mod:`memfs.history.bounded`, against difflib: every
diff it writes turns the old text into the new, it agrees with difflib's on the small
edits where both are plain, a crafted pair runs out its budget, and a stop is obeyed."""

from __future__ import annotations

import difflib
import random
import re

import pytest

from memfs.history.bounded import Budget, Stopped, matching_blocks
from memfs.history.diff import Summary, _lines, compare

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def patched(old: list[str], diff: list[str]) -> list[str]:
    """``old`` with the unified ``diff`` applied (each context line checked)."""
    out: list[str] = []
    at = 0
    for line in diff[2:]:
        found = _HUNK.match(line)
        if found:
            length = int(found[2]) if found[2] is not None else 1
            start = int(found[1]) - 1 if length else int(found[1])
            out += old[at:start]
            at = start
        elif line.startswith(" "):
            assert old[at] == line[1:]
            out.append(old[at])
            at += 1
        elif line.startswith("-"):
            assert old[at] == line[1:]
            at += 1
        elif line.startswith("+"):
            out.append(line[1:])
    return out + old[at:]


def test_every_diff_turns_the_old_text_into_the_new() -> None:
    rng = random.Random(30)
    same_as_difflib = 0
    for _ in range(1500):
        alphabet = rng.choice([2, 3, 10, 100])
        a = [f"{rng.randrange(alphabet)}\n" for _ in range(rng.randrange(40))]
        b = list(a)
        for _ in range(rng.randint(1, 6)):
            roll = rng.random()
            if roll < 0.3 and b:
                del b[rng.randrange(len(b))]
            elif roll < 0.6:
                b.insert(rng.randint(0, len(b)), f"{rng.randrange(alphabet)}\n")
            elif b:
                b[rng.randrange(len(b))] = f"{rng.randrange(alphabet)}\n"
        old, new = "".join(a).encode(), "".join(b).encode()
        found = compare(old, new, "a", "b")
        assert not isinstance(found, Summary)
        if old == new:
            assert found == []
            continue
        assert patched(_lines(old), found) == _lines(new), (a, b, found)
        reference = list(difflib.unified_diff(_lines(old), _lines(new), "a", "b"))
        same_as_difflib += found == reference
    assert same_as_difflib > 900  # the usual small edit reads as difflib's would


def test_a_missing_final_newline_is_said() -> None:
    assert compare(b"a\nb", b"a\nc", "x", "y") == [
        "--- x\n",
        "+++ y\n",
        "@@ -1,2 +1,2 @@\n",
        " a\n",
        "-b\n\\ No newline at end of file\n",
        "+c\n\\ No newline at end of file\n",
    ]


def test_a_crafted_pair_runs_out_the_budget_and_is_a_summary() -> None:
    n = 50_000
    old = "".join(f"l{i}\n" for i in range(n)).encode()
    new = "".join(f"l{(i * 7919) % n}\n" for i in range(n)).encode()  # a shuffle
    found = compare(old, new, "a", "b", Budget(300_000))
    assert isinstance(found, Summary)
    assert (found.added, found.removed, found.old_lines, found.new_lines) == (0, 0, n, n)


def test_a_stop_is_obeyed_within_a_step() -> None:
    lines = [f"{i}\n" for i in range(100_000)]
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(Stopped):
        matching_blocks(lines, lines[::-1], Budget(10**9, stop))
    assert len(asked) == 4
