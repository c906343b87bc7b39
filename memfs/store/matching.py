r"""What a search query means, decided once for every backend and every door.

A plain query is one or more terms separated by white space (a ``"quoted phrase"`` is
one term, spaces included). A file matches when it contains every term as a substring,
ignoring case (so ``parse_rel``, ``memfs/store`` and ``Zürich`` are found inside longer
words, like ``grep -i -F``). A regex query (``regex=True``) is one regular expression
matched line by line, case-sensitive, like ``grep -P``, run by Google's RE2 (the
``google-re2`` package): its time is linear in the text searched whatever the pattern,
so no query (``(a+)+$`` on a line of 5,000 ``a``) can hold a search, a door or the
threads beside it. RE2 reads Python's syntax except what needs backtracking: back
references, look-ahead and look-behind, atomic groups, possessive quantifiers and
conditionals are refused with one line saying so, and so is Python's ``\Z`` (RE2 spells
it ``\z``); ``\d``, ``\w``, ``\s`` and ``\b`` are ASCII (``\pL``, ``\pN`` for any letter or
digit); repetition counts stop at 1,000. A pattern is at most :data:`MAX_PATTERN`
characters, compiled in bounded memory.

Every search also has a time budget (:data:`BUDGET_SECONDS` from its parse): a search
still confirming matches when it runs out is refused with one line (QueryError) rather
than left to run, so a huge tree bounds its own cost too.

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
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

# google-re2 ships no type hints (pyproject's [tool.mypy] lets it be untyped); what memfs
# uses of it is typed by the Matcher and BytesMatcher protocols below.
import re2

from memfs.errors import QueryError

__all__ = ["Query", "QueryError", "decode_text", "parse_query"]

MAX_LINES = 10
LINE_CHARS = 200
DEFAULT_LIMIT = 20
# Shorter literals cannot narrow a trigram index (SQLite FTS5's ``trigram`` tokenizer).
MIN_FRAGMENT = 3

MAX_PATTERN = 4096
# Far above any real search of a memory tree (100,000 files answer in about 0.6 s), and
# low enough that nothing holds a door for long.
BUDGET_SECONDS = 10.0
_CHECK_EVERY = 512  # lines between looks at the clock

_TERM = re.compile(r'"([^"]*)"|(\S+)')


class Span(Protocol):
    def start(self) -> int: ...

    def end(self) -> int: ...


class BytesMatcher(Protocol):
    def search(self, text: bytes, pos: int) -> Span | None: ...


class Matcher(Protocol):
    """What a compiled pattern offers here: Python's ``re`` and RE2's alike."""

    @property
    def pattern(self) -> str: ...

    def search(self, text: str) -> Span | None: ...

    def finditer(self, text: str) -> Iterator[Span]: ...


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: the exact test, plus what an index may use to narrow files."""

    text: str
    regex: bool
    patterns: tuple[Matcher, ...]
    # Literal substrings every matching file contains (case-insensitively); empty when
    # nothing is known, and the index cannot narrow: every text file is a candidate.
    fragments: tuple[str, ...]
    # time.monotonic() past which confirming matches stops (see the module docstring).
    deadline: float = field(default_factory=lambda: time.monotonic() + BUDGET_SECONDS)
    # A regex's multi-line twin, run over the whole text to find candidate lines in one
    # pass (see :meth:`_regex_lines`); None when the pattern anchors to the text itself.
    whole: BytesMatcher | None = None

    def check_time(self) -> None:
        """Refuse the search once its time budget is spent."""
        if time.monotonic() > self.deadline:
            raise QueryError(
                f"the search for {shorten(self.text)} ran past its time budget of"
                f" {BUDGET_SECONDS:g} seconds; search below a directory or give a more"
                " specific query"
            )

    def matching_lines(self, text: str) -> list[tuple[int, str]] | None:
        """The file's matching lines (numbers from 1), or None when the file does not
        match: a plain query needs every term somewhere in the file."""
        self.check_time()
        if self.whole is not None:
            return self._regex_lines(text)
        if not self.regex and not all(p.search(text) for p in self.patterns):
            return None
        found: list[tuple[int, str]] = []
        lines = text.split("\n")  # grep's lines: only "\n" ends one
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if number % _CHECK_EVERY == 0:
                self.check_time()
            for pattern in self.patterns:
                match = pattern.search(line)
                if match is not None:
                    if len(found) < MAX_LINES:
                        found.append((number, cut(line, match.start(), match.end())))
                    else:
                        return found
                    break
        return found or None

    def _regex_lines(self, text: str) -> list[tuple[int, str]] | None:
        """:meth:`matching_lines` for a regex: the multi-line twin finds the next line
        that may match (a line's match is always one of the twin's, which may also span
        lines), the line itself is then confirmed, and the search goes on at the next
        line. One pass of RE2 over the file instead of a call per line."""
        assert self.whole is not None
        (pattern,) = self.patterns
        data = text.encode("utf-8")
        found: list[tuple[int, str]] = []
        pos, number, counted = 0, 1, 0
        while pos <= len(data):
            match = self.whole.search(data, pos)
            if match is None:
                break
            start = data.rfind(b"\n", 0, match.start()) + 1
            if start == len(data) and (not data or data.endswith(b"\n")):
                break  # past the last line: grep counts no empty line after the final "\n"
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            number += data.count(b"\n", counted, start)
            counted = start
            line = data[start:end].decode("utf-8")
            hit = pattern.search(line)
            if hit is not None:
                found.append((number, cut(line, hit.start(), hit.end())))
                if len(found) == MAX_LINES:
                    break
            pos = end + 1
            if len(found) % 64 == 63:
                self.check_time()
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


def parse_query(text: str, *, regex: bool = False, budget: float = BUDGET_SECONDS) -> Query:
    """Parse ``text`` as a plain query or (``regex``) a regular expression; the search
    must be done within ``budget`` seconds from now."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the search query is empty")
    deadline = time.monotonic() + budget
    if regex:
        pattern = compile_regex(text)
        whole = None
        if _ANCHORED.search(text) is None:
            whole = re2.compile("(?m)" + text, _options())
        return Query(text, True, (pattern,), regex_fragments(text), deadline, whole)
    terms = [quoted or bare for quoted, bare in _TERM.findall(text)]
    terms = [t for t in terms if t.strip()]
    if not terms:
        raise QueryError("the search query is empty")
    # Escaped literals: Python's engine has nothing to backtrack over in them.
    patterns = tuple(re.compile(re.escape(t), re.IGNORECASE) for t in terms)
    fragments = tuple(t for t in terms if len(t) >= MIN_FRAGMENT)
    return Query(text, False, patterns, fragments, deadline)


def shorten(text: str, limit: int = 60) -> str:
    """``text`` quoted for a one-line message: cut, and escaped only when it holds
    characters a terminal would act on (a pattern's backslashes stay as typed)."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return f"'{text}'" if text.isprintable() else repr(text)


# What RE2 refuses that Python's re reads, keyed by the start of RE2's own message.
_RE2_REFUSALS = (
    ("invalid escape sequence: \\Z", "write \\z for the end of a line (\\Z is Python's spelling)"),
    *(
        (f"invalid escape sequence: \\{c}", "back references (\\1, \\g<name>) are not supported")
        for c in "123456789g"
    ),
    ("invalid perl operator: (?=", "look-ahead (?=...) is not supported"),
    ("invalid perl operator: (?!", "look-ahead (?!...) is not supported"),
    ("invalid perl operator: (?<=", "look-behind (?<=...) is not supported"),
    ("invalid perl operator: (?<!", "look-behind (?<!...) is not supported"),
    ("invalid perl operator: (?>", "atomic groups (?>...) are not supported"),
    ("invalid perl operator: (?P", "back references (?P=name) are not supported"),
    ("invalid perl operator: (?(", "conditional groups (?(...)...) are not supported"),
    ("invalid perl operator: (?#", "comments (?#...) are not supported"),
    ("invalid perl operator: (?", "that inline flag is not supported (i, m, s and U are)"),
    ("bad repetition operator", "possessive quantifiers (a++, a*+) are not supported"),
    ("invalid repetition size", "a repetition count above 1,000 is not supported"),
    ("pattern too large", "the pattern is too large to run in bounded memory"),
)


# \A, \z or a flag turned off (``(?-m)``) would mean something else in the whole text
# than in one line: such patterns are matched line by line.
_ANCHORED = re.compile(r"\\[Az]|\(\?[A-Za-z]*-")


def _options() -> object:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    return options


def compile_regex(text: str) -> Matcher:
    """``text`` compiled by RE2, or one line saying why memfs will not run it."""
    if len(text) > MAX_PATTERN:
        raise QueryError(
            f"the regular expression is {len(text):,} characters long; at most"
            f" {MAX_PATTERN:,} are searched"
        )
    try:
        re.compile(text)
    except re.error as e:
        raise QueryError(f"not a valid regular expression: {e}") from None
    except (OverflowError, RecursionError):
        raise QueryError("not a valid regular expression: it is nested too deeply") from None
    try:
        compiled: Matcher = re2.compile(text, _options())
        return compiled
    except re2.error as e:
        reason = e.args[0] if e.args else ""
        said = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        why = next((why for start, why in _RE2_REFUSALS if said.startswith(start)), said)
        raise QueryError(
            f"memfs runs regular expressions in linear time (RE2 syntax), so it cannot run"
            f" {shorten(text)}: {why}"
        ) from None


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


def regex_fragments(src: str) -> tuple[str, ...]:
    """Literal runs of at least :data:`MIN_FRAGMENT` characters that every match of
    the pattern ``src`` contains, read conservatively from its top level: any top-level
    ``|`` gives none (no narrowing), groups and classes end a run, and a character made
    optional by ``?``, ``*`` or ``{`` is dropped from its run. (Verbose mode, which
    would make spaces mean nothing, is one RE2 refuses.)"""
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
