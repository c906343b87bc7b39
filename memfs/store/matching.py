"""What a search query means, decided once for every backend and every door.

A plain query is one or more terms separated by white space (a ``"quoted phrase"`` is
one term, spaces included). A file matches when it contains every term as a substring,
ignoring case (so ``parse_rel``, ``memfs/store`` and ``Zürich`` are found inside longer
words, like ``grep -i -F``). A regex query (``regex=True``) is one Python regular
expression matched line by line, case-sensitive, like ``grep -P``.

Only text is searched: content that holds a NUL byte or is not UTF-8 is skipped (an
index would hold nothing useful for it, and grep would only say "binary file matches").

Results list the matching lines of each file (1-based numbers, at most
:data:`MAX_LINES` per file, each cut to about :data:`LINE_CHARS` characters around the
first match) and a score, higher for a better match. An index only narrows the files
to look at; every backend confirms each match here, so all of them agree on what
matches.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from memfs.errors import QueryError

__all__ = ["Query", "QueryError", "decode_text", "parse_query"]

MAX_LINES = 10
LINE_CHARS = 200
DEFAULT_LIMIT = 20
# Shorter literals cannot narrow a trigram index (SQLite FTS5's ``trigram`` tokenizer).
MIN_FRAGMENT = 3

_TERM = re.compile(r'"([^"]*)"|(\S+)')


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: the exact test, plus what an index may use to narrow files."""

    text: str
    regex: bool
    patterns: tuple[re.Pattern[str], ...]
    # Literal substrings every matching file contains (case-insensitively); empty when
    # nothing is known, and the index cannot narrow: every text file is a candidate.
    fragments: tuple[str, ...]

    def matching_lines(self, text: str) -> list[tuple[int, str]] | None:
        """The file's matching lines (numbers from 1), or None when the file does not
        match: a plain query needs every term somewhere in the file."""
        if not self.regex and not all(p.search(text) for p in self.patterns):
            return None
        found: list[tuple[int, str]] = []
        lines = text.split("\n")  # grep's lines: only "\n" ends one
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            for pattern in self.patterns:
                match = pattern.search(line)
                if match is not None:
                    if len(found) < MAX_LINES:
                        found.append((number, cut(line, match.start(), match.end())))
                    else:
                        return found
                    break
        return found or None

    def score(self, text: str, average_chars: float) -> float:
        """A BM25-like score for backends with no ranking of their own: more matches in
        a shorter text score higher."""
        length = len(text) / max(average_chars, 1.0)
        total = 0.0
        for pattern in self.patterns:
            tf = sum(1 for _ in pattern.finditer(text))
            total += tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length))
        return round(total, 6)


def parse_query(text: str, *, regex: bool = False) -> Query:
    """Parse ``text`` as a plain query or (``regex``) a regular expression."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the search query is empty")
    if regex:
        try:
            pattern = re.compile(text)
        except re.error as e:
            raise QueryError(f"not a valid regular expression: {e}") from None
        return Query(text, True, (pattern,), regex_fragments(pattern))
    terms = [quoted or bare for quoted, bare in _TERM.findall(text)]
    terms = [t for t in terms if t.strip()]
    if not terms:
        raise QueryError("the search query is empty")
    patterns = tuple(re.compile(re.escape(t), re.IGNORECASE) for t in terms)
    fragments = tuple(t for t in terms if len(t) >= MIN_FRAGMENT)
    return Query(text, False, patterns, fragments)


def decode_text(data: bytes) -> str | None:
    """The content as text, or None for content searches skip (NUL bytes, not UTF-8)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def cut(line: str, start: int, end: int) -> str:
    """``line`` cut to about :data:`LINE_CHARS` characters, keeping the match in view."""
    line = line.rstrip("\r")
    if len(line) <= LINE_CHARS:
        return line
    before = max(0, min(start - LINE_CHARS // 4, len(line) - LINE_CHARS))
    if end - start > LINE_CHARS:
        before = start
    piece = line[before : before + LINE_CHARS]
    return ("…" if before else "") + piece + ("…" if before + LINE_CHARS < len(line) else "")


# --- literals a regular expression requires -----------------------------------------
_META = set(".^$*+?{}[]|()\\")
_QUANT_OPTIONAL = ("?", "*", "{")
_ESCAPED_LITERAL = set(".^$*+?{}[]|()\\/-#&~ \"'!%,:;<=>@_`")


def regex_fragments(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Literal runs of at least :data:`MIN_FRAGMENT` characters that every match of
    ``pattern`` contains, read conservatively from its top level: any top-level ``|``
    or verbose mode gives none (no narrowing), groups and classes end a run, and a
    character made optional by ``?``, ``*`` or ``{`` is dropped from its run."""
    if pattern.flags & re.VERBOSE:
        return ()
    src = pattern.pattern
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i = 0

    def close() -> None:
        if len(run) >= MIN_FRAGMENT:
            runs.append("".join(run))
        run.clear()

    while i < len(src):
        c = src[i]
        if c == "\\":
            nxt = src[i + 1 : i + 2]
            if depth == 0 and nxt in _ESCAPED_LITERAL:
                i += 2
                if src[i : i + 1] in _QUANT_OPTIONAL:
                    close()
                elif src[i : i + 1] == "+":
                    run.append(nxt)
                    close()
                    i += 1
                    continue
                run.append(nxt)
                continue
            if nxt in ("x", "u", "U", "N", "0") or nxt.isdigit():
                return ()  # a code point or back reference: too rare to read carefully
            close()
            i += 2
            continue
        if c == "[":
            close()
            i = _skip_class(src, i)
            continue
        if c in "()":
            close()
            depth += 1 if c == "(" else -1
            i += 1
            continue
        if c == "|":
            if depth == 0:
                return ()
            i += 1
            continue
        if depth > 0:
            i += 1
            continue
        if c in _QUANT_OPTIONAL:
            # The character before is optional: it leaves the run, which ends here.
            if run:
                run.pop()
            close()
            i = _skip_quantifier(src, i)
            continue
        if c == "+":
            close()  # one or more: the character stays, but what follows is not adjacent
            i += 1
            continue
        if c in _META:
            close()
            i += 1
            continue
        run.append(c)
        i += 1
    close()
    return tuple(runs)


def _skip_class(src: str, i: int) -> int:
    """The index just past the character class starting at ``src[i] == '['``."""
    j = i + 1
    if src[j : j + 1] == "^":
        j += 1
    if src[j : j + 1] == "]":
        j += 1
    while j < len(src) and src[j] != "]":
        j += 2 if src[j] == "\\" else 1
    return j + 1


def _skip_quantifier(src: str, i: int) -> int:
    if src[i] == "{":
        end = src.find("}", i)
        i = len(src) if end < 0 else end + 1
    else:
        i += 1
    if src[i : i + 1] in ("?", "+"):
        i += 1  # lazy or possessive
    return i


def average(lengths: list[int]) -> float:
    return math.fsum(lengths) / len(lengths) if lengths else 1.0
