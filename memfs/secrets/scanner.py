"""Finding credentials in a text, replacing them, and showing them masked.

:func:`scan` runs every shape of :mod:`memfs.secrets.patterns` (detect-secrets' plugins
first, then the provider shapes it lacks), then the context and entropy rules of
:mod:`memfs.secrets.rules`, and keeps the findings that do not overlap an earlier,
more specific one. A private key is redacted whole (from its BEGIN line to its END
line), not only the header detect-secrets looks for, and a JWT with its signature.

Documented example keys: a finding whose secret contains ``EXAMPLE`` (AWS's
``AKIAIOSFODNN7EXAMPLE`` and ``wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY``, and the like
in other providers' docs) is dropped: such values are public, appear in notes about
those docs, and grant nothing. Other published samples (jwt.io's token, a docs page's
test key) are caught: nothing tells them from a real one.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from memfs.secrets import patterns, rules

MARKER = "[REDACTED:{kind}]"
EXAMPLE_WORD = "EXAMPLE"


@dataclass(frozen=True, slots=True)
class Finding:
    """One credential in a text: ``text[start:end]`` is the secret, on line ``line``
    (1-based) of that text. ``value`` is the secret itself: never print it (see
    :func:`mask`)."""

    kind: str
    why: str
    start: int
    end: int
    line: int
    value: str

    @property
    def marker(self) -> str:
        return MARKER.format(kind=self.kind)


# Kinds whose match is a prefixed token: it runs to the token's end, however many
# characters the library's regex counted (Stripe's keys grew from 24 to 99 after the
# prefix: cut at 24, the rest stayed in clear). The others have their own ends: a
# block, a JWT's segments, a URL's password, a connection string's value.
_OWN_END = frozenset(
    {"private-key", "jwt", "url-password", "slack-webhook", "azure-storage-key", "azure-sas-token"}
)
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")
_BLOCK_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PUTTY_END = re.compile(r"^Private-MAC: *\S*$", re.MULTILINE)
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-+/=]*")
_TRIM = " \t\"'=:"
_TRIM_END = " \t\"'"
_ACCOUNT_KEY = "AccountKey="


def _run_end(run: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run of ``run``'s characters from ``pos`` ends (``run`` is a starred class,
    so it always matches, if only the empty string)."""
    found = run.match(text, pos)
    return pos if found is None else found.end()


def _widen(kind: str, text: str, start: int, end: int) -> tuple[int, int]:
    """The whole credential around what a library regex matched."""
    if kind == "private-key":
        line_start = text.rfind("\n", 0, start) + 1
        dashes = text.rfind("-----", line_start, start)
        start = dashes if dashes != -1 else line_start
        closing = (_PUTTY_END if text.startswith("PuTTY", start) else _BLOCK_END).search(text, end)
        if closing is not None:
            return start, closing.end()
        blank = text.find("\n\n", end)  # no END line: up to the end of the paragraph
        return start, blank if blank != -1 else len(text)
    if kind == "jwt":
        if end < len(text) and text[end - 1] == ".":
            end = _run_end(_JWT_TAIL, text, end)
        return start, end
    if kind == "azure-storage-key" and text.startswith(_ACCOUNT_KEY, start):
        start += len(_ACCOUNT_KEY)  # keep the name, so the connection string still reads
    if kind not in _OWN_END and end > start and _TOKEN_TAIL.match(text[end - 1]):
        end = _run_end(_TOKEN_TAIL, text, end)
    # Some library regexes take in the character before or after the token.
    while start < end and text[start] in _TRIM:
        start += 1
    while end > start and text[end - 1] in _TRIM_END:
        end -= 1
    return start, end


_WORD = re.compile(r"\S+")
# detect-secrets' JWT regex backtracks over every "eyJ" of a long run without a dot, so
# it runs only on whitespace-free words that could hold a token, and no longer than a
# token gets.
_JWT_MAX = 16 * 1024


def _jwt_regions(text: str) -> list[tuple[int, int]]:
    return [
        m.span()
        for m in _WORD.finditer(text)
        if m.end() - m.start() <= _JWT_MAX and "eyJ" in m.group() and "." in m.group()
    ]


def _matches(pattern: patterns.Pattern, text: str) -> list[re.Match[str]]:
    if pattern.kind != "jwt":
        return list(pattern.regex.finditer(text))
    out: list[re.Match[str]] = []
    for start, end in _jwt_regions(text):
        out.extend(pattern.regex.finditer(text, start, end))
    return out


def _pattern_hits(text: str, lower: str) -> list[rules.Hit]:
    hits: list[rules.Hit] = []
    for pattern in (*patterns.library_patterns(), *patterns.PROVIDER_PATTERNS):
        if pattern.hints and not any(h in lower for h in pattern.hints):
            continue
        covered = 0  # a widened block (a private key) swallows the matches inside it
        for m in _matches(pattern, text):
            if m.group(pattern.group) is None or m.start() < covered:
                continue
            start, end = _widen(pattern.kind, text, *m.span(pattern.group))
            covered = end
            if end <= start:
                continue
            if pattern.valid is not None and not pattern.valid(text[start:end]):
                continue
            hits.append(rules.Hit(pattern.kind, pattern.why, start, end))
    return hits


def scan(text: str) -> list[Finding]:
    """The credentials in ``text``, in order, none overlapping another."""
    lower = text.lower()
    specific = sorted(_pattern_hits(text, lower), key=lambda h: (h.start, h.start - h.end))
    general = [*rules.assignments(text, lower), *rules.high_entropy(text)]
    kept: list[rules.Hit] = []  # sorted by start, none overlapping
    starts: list[int] = []
    for hit in [*specific, *general]:
        if EXAMPLE_WORD in text[hit.start : hit.end]:
            continue
        i = bisect.bisect_right(starts, hit.start)
        if (i > 0 and kept[i - 1].end > hit.start) or (i < len(kept) and kept[i].start < hit.end):
            continue
        kept.insert(i, hit)
        starts.insert(i, hit.start)
    newlines = [m.start() for m in re.finditer("\n", text)] if kept else []
    return [
        Finding(
            h.kind,
            h.why,
            h.start,
            h.end,
            bisect.bisect_left(newlines, h.start) + 1,
            text[h.start : h.end],
        )
        for h in kept
    ]


def redact(text: str, findings: list[Finding]) -> str:
    """``text`` with each finding replaced by its ``[REDACTED:kind]`` marker."""
    parts: list[str] = []
    at = 0
    for f in sorted(findings, key=lambda f: f.start):
        parts.append(text[at : f.start])
        parts.append(f.marker)
        at = f.end
    parts.append(text[at:])
    return "".join(parts)


def mask(value: str) -> str:
    """A secret shown safely: at most its first four characters (and never more than a
    quarter of it), then its length. ``AKIA… (20 chars)``."""
    first = value.split("\n", 1)[0]
    shown = first[: min(4, len(value) // 4)]
    return f"{shown}… ({len(value)} chars)"
