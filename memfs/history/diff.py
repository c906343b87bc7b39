"""Unified diffs between revisions of a file, and of a tree since a point of its feed.

Text is decoded as UTF-8 with undecodable bytes kept visible (``surrogateescape``,
printed as replacement characters); content with NUL bytes is binary and gets one line
saying it differs, as ``diff`` says it.

The lines are matched by :mod:`memfs.history.bounded`, whose cost grows with the size of
the contents, within a :class:`~memfs.history.bounded.Budget`. A diff over its budget
is a :class:`Summary` (sizes, hashes, lines added and removed as counts) instead: one
line in ``memfs diff``, a box with both sides to download on the page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from memfs.errors import NotFound
from memfs.history.bounded import (
    Budget,
    TooCostly,
    counted,
    grouped,
    matching_blocks,
    opcodes,
)
from memfs.history.follow import lineage
from memfs.history.timeline import Node, then_and_now
from memfs.store.base import Store

NULL = "/dev/null"


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines(keepends=True)


@dataclass(frozen=True, slots=True)
class Summary:
    """What a diff over its budget says instead: both sides' sizes, hashes and line
    counts, and how many lines one side has that the other lacks (counted as multisets,
    so a moved line counts as neither)."""

    old_name: str
    new_name: str
    old_size: int
    new_size: int
    old_sha256: str
    new_sha256: str
    old_lines: int
    new_lines: int
    added: int
    removed: int

    def line(self) -> str:
        return (
            f"memfs: the diff of {self.old_name} and {self.new_name} is too large to show "
            f"({self.old_size:,} -> {self.new_size:,} bytes, {self.old_lines:,} -> "
            f"{self.new_lines:,} lines, +{self.added:,} -{self.removed:,}; sha256 "
            f"{self.old_sha256[:16]} -> {self.new_sha256[:16]})\n"
        )


def summary(
    old: bytes, new: bytes, old_name: str, new_name: str, budget: Budget | None = None
) -> Summary:
    """The summary of two contents; its counting is stoppable through ``budget`` (whose
    units it does not spend: it is what a diff over its budget falls back to)."""
    unbounded = Budget(1 << 62, budget.stop if budget is not None else None)
    unbounded.stopping()
    a, b = _lines(old), _lines(new)
    in_a, in_b = counted(a, 0, len(a), unbounded), counted(b, 0, len(b), unbounded)
    unbounded.stopping()
    both = in_a.keys() & in_b.keys()
    common = sum(map(min, map(in_a.__getitem__, both), map(in_b.__getitem__, both)))
    return Summary(
        old_name,
        new_name,
        len(old),
        len(new),
        hashlib.sha256(old).hexdigest(),
        hashlib.sha256(new).hexdigest(),
        len(a),
        len(b),
        len(b) - common,
        len(a) - common,
    )


def _range(start: int, stop: int) -> str:
    """A hunk's range as ``diff -u`` writes it (difflib's rule)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def compare(
    old: bytes | None,
    new: bytes | None,
    old_name: str,
    new_name: str,
    budget: Budget | None = None,
) -> list[str] | Summary:
    """The unified diff of two contents (None: absent), each line ending in a newline;
    a :class:`Summary` when finding it would cost more than ``budget``; Stopped from
    ``budget`` when its caller stops it."""
    a_bytes, b_bytes = old or b"", new or b""
    if a_bytes == b_bytes:
        return []
    if b"\0" in a_bytes or b"\0" in b_bytes:
        return [f"Binary files {old_name} and {new_name} differ\n"]
    old_name = old_name if old is not None else NULL
    new_name = new_name if new is not None else NULL
    budget = budget or Budget()
    budget.stopping()
    a, b = _lines(a_bytes), _lines(b_bytes)
    try:
        hunks = grouped(opcodes(matching_blocks(a, b, budget)))
        # Writing the lines out is work too: a budget that ran out in the matching's
        # last step, or a stop, must not be followed by seconds of formatting.
        budget.spend(sum(h[-1][2] - h[0][1] + h[-1][4] - h[0][3] for h in hunks))
    except TooCostly:
        return summary(a_bytes, b_bytes, old_name, new_name, budget)
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    for hunk in hunks:
        first, last = hunk[0], hunk[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in hunk:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                out += ["-" + line for line in a[i1:i2]]
            if tag in ("replace", "insert"):
                out += ["+" + line for line in b[j1:j2]]
    return [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out
    ]


def unified(
    old: bytes | None,
    new: bytes | None,
    old_name: str,
    new_name: str,
    budget: Budget | None = None,
) -> list[str]:
    """:func:`compare` as lines: a summary is its one line."""
    found = compare(old, new, old_name, new_name, budget)
    return [found.line()] if isinstance(found, Summary) else found


def file_diff(
    store: Store, path: str, old_rev: int | None = None, new_rev: int | None = None
) -> list[str]:
    """The file at ``path``'s revision ``old_rev`` against ``new_rev``, its revisions
    followed across the renames that brought it there (default: the revision before
    its last change of content against its current content; the current content
    against nothing for a deleted path). A revision that only moved the content (a
    rename's arrival) is not a change of content."""
    revisions = lineage(store, path)
    by_rev = {r.rev: r for r in revisions}
    for asked in (old_rev, new_rev):
        if asked is not None and asked not in by_rev:
            raise NotFound(f"revision {asked} of '{path}' is not retained", path=path)
    if new_rev is not None:
        newest = by_rev[new_rev]
        new: bytes | None = store.read_revision(newest.path, new_rev)
        new_name = f"b/{newest.path}@{new_rev}"
        new_sha: str | None = newest.sha256
    else:
        try:
            new = store.read(path)[0]
        except NotFound:
            new = None
        new_name = f"b/{path}"
        new_sha = revisions[0].sha256 if new is not None and revisions else None
    if old_rev is None:
        below = new_rev if new_rev is not None else revisions[0].rev + 1 if revisions else 0
        older = [r for r in revisions if r.rev < below and r.sha256 != new_sha]
        old_rev = older[0].rev if older else None
    if old_rev is None:
        return unified(None, new, NULL, new_name)
    oldest = by_rev[old_rev]
    old = store.read_revision(oldest.path, old_rev)
    found = compare(old, new, f"a/{oldest.path}@{old_rev}", new_name)
    if not isinstance(found, Summary):
        return found
    return [
        found.line(),
        f"memfs: print either side with: memfs history {path} --show REV (revision {old_rev}"
        f" is the older side)\n",
    ]


def _content(store: Store, node: Node | None) -> bytes | None:
    if node is None or node.kind != "file":
        return None
    if node.sha256 is None:
        raise NotFound("content no longer retained")
    return store.read_blob(node.sha256)


def tree_diff(store: Store, seq: int, top: str = "") -> Iterator[str]:
    """The changes of the files at and below ``top`` since change ``seq``: one unified
    diff per file that differs, by path; a file whose earlier content is no longer
    retained gets a line saying so."""
    then, now = then_and_now(store, seq, top)
    for path in sorted(set(then) | set(now)):
        old, new = then.get(path), now.get(path)
        if (old is None or old.kind != "file") and (new is None or new.kind != "file"):
            continue
        if old is not None and new is not None and old.sha256 == new.sha256:
            continue
        try:
            before = _content(store, old)
        except NotFound:
            yield f"memfs: the earlier content of {path} is no longer retained\n"
            continue
        yield from unified(before, _content(store, new), f"a/{path}", f"b/{path}")
