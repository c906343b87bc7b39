"""What a page shows of content: text or binary, Markdown, diffs as rows, highlighted
search lines, times. Pure functions over bytes and strings; the templates lay them out.

Markdown is rendered by markdown-it-py with raw HTML off and its link check on, so a
memory cannot put a script or a ``javascript:`` link into the page. Diffs come from
:func:`memfs.history.diff.compare`, the same text ``memfs diff`` prints, cut into rows,
or its summary when the diff is over its budget.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from markdown_it import MarkdownIt

from memfs.history.bounded import Budget
from memfs.history.diff import Summary, compare
from memfs.store.matching import Matcher

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def local_time(time_ns: int) -> str:
    return datetime.fromtimestamp(time_ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def iso_time(time_ns: int) -> str:
    return datetime.fromtimestamp(time_ns / 1e9).astimezone().isoformat(timespec="seconds")


def size_text(n: int | None) -> str:
    if n is None:
        return "-"
    if n < 1024:
        return f"{n:,} B"
    if n < 1024 * 1024:
        return f"{n / 1024:,.1f} KiB"
    return f"{n / (1024 * 1024):,.1f} MiB"


def as_text(data: bytes) -> str | None:
    """The content as text, or None for binary (a NUL byte, or not UTF-8)."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # "js-default": CommonMark plus tables and strikethrough, with html off.
    # breaks: a note written a line per entry keeps its lines (a soft break is <br>), as
    # people read it in an editor, rather than running together as one paragraph.
    return MarkdownIt(
        "js-default", {"html": False, "linkify": False, "typographer": False, "breaks": True}
    )


def markdown(text: str) -> str:
    """Safe HTML for a Markdown text (no raw HTML, no script links)."""
    # markdown-it types it Any (a custom renderer could make anything); its own makes text.
    html: str = _markdown().render(text)
    return html


def is_markdown(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_SUFFIXES)


@dataclass(frozen=True, slots=True)
class DiffRow:
    kind: str  # "hunk", "add", "del", "ctx", "note"
    old: int | None
    new: int | None
    text: str


@dataclass(frozen=True, slots=True)
class Diff:
    """A diff cut to at most ``limit`` rows; ``more`` rows were left out."""

    rows: list[DiffRow]
    more: int
    binary: bool = False
    added: int = 0
    removed: int = 0
    summary: Summary | None = None  # over its budget: no rows, this instead


def diff(
    old: bytes | None,
    new: bytes | None,
    old_name: str,
    new_name: str,
    limit: int,
    budget: Budget | None = None,
) -> Diff:
    """Rows of the unified diff of two contents (None: absent), at most ``limit``; a
    summary when finding it costs more than ``budget``."""
    lines = compare(old, new, old_name, new_name, budget)
    if isinstance(lines, Summary):
        return Diff([], 0, added=lines.added, removed=lines.removed, summary=lines)
    if lines and lines[0].startswith("Binary files"):
        return Diff([], 0, binary=True)
    rows: list[DiffRow] = []
    more = added = removed = 0
    old_no = new_no = 0
    for n, line in enumerate(lines):
        if budget is not None and not n & 4095:
            budget.stopping()
        text = line.rstrip("\n")
        if text.startswith(("--- ", "+++ ")):
            continue
        if text.startswith("@@"):
            found = _HUNK.match(text)
            if found:
                old_no, new_no = int(found[1]), int(found[2])
            row = DiffRow("hunk", None, None, text)
        elif text.startswith("+"):
            added += 1
            row = DiffRow("add", None, new_no, text[1:])
            new_no += 1
        elif text.startswith("-"):
            removed += 1
            row = DiffRow("del", old_no, None, text[1:])
            old_no += 1
        elif text.startswith("\\"):
            row = DiffRow("note", None, None, text)
        else:
            row = DiffRow("ctx", old_no, new_no, text[1:])
            old_no += 1
            new_no += 1
        if len(rows) < limit:
            rows.append(row)
        else:
            more += 1
    return Diff(rows, more, added=added, removed=removed)


def highlight(text: str, patterns: tuple[Matcher, ...]) -> list[tuple[str, bool]]:
    """``text`` cut into pieces, each marked whether a pattern matched it."""
    spans: list[tuple[int, int]] = []
    for pattern in patterns:
        spans += [(m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start()]
    spans.sort()
    pieces: list[tuple[str, bool]] = []
    at = 0
    for start, end in spans:
        if end <= at:
            continue
        start = max(start, at)
        if start > at:
            pieces.append((text[at:start], False))
        pieces.append((text[start:end], True))
        at = end
    if at < len(text):
        pieces.append((text[at:], False))
    return pieces
