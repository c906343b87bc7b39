"""Points in time and spans as people write them: ``2h``, ``3d``, ``2026-11-30T12:00``,
a revision number, a checkpoint's name.

A span (:func:`parse_duration`) is a whole number with a unit: ``s``, ``min``, ``h``,
``d`` or ``w`` (``90min``, ``2h``, ``3d``); several may follow each other (``1d12h``).
``m`` alone is refused (:class:`Ambiguous`): a minute to some, a month to others, and
``expire`` deletes by it; every command that takes a span reads it here, so all agree.
A point (:func:`resolve_point`) is, in this order: a checkpoint name, a revision number
(digits only), an ISO 8601 time (local time when it names no zone), or a span meaning
that long before the store's clock says now. It resolves to a change ``seq`` of the
store's feed: the tree after that change is the tree at that point.

This is also the one parse of the numbers people write (operation and revision ids,
page cursors) for every door: a number past what a store keeps (a signed 64-bit
integer) or a time outside what its nanosecond clock can say (1677 to 2262) is a
:class:`BadWhen` saying so in one sentence, which the CLI shows as one line (exit 2)
and the web as a 400 page, never an overflow deep in a store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memfs.errors import MemfsError
from memfs.store.base import Store

_UNITS = {"s": 1, "min": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
# "min" before "m", so "m" is only ever the ambiguous unit.
_SPAN = re.compile(r"(\d+)(min|m|[shdw])")
SECOND_NS = 10**9
# Ids, revisions, sequence numbers and times are 64-bit signed integers in every store.
MAX_NUMBER = 2**63 - 1
MIN_NS, MAX_NS = -(2**63), 2**63 - 1
_TIME_RANGE = "memfs's clock counts from 1677-09-22 to 2262-04-11"


class BadWhen(MemfsError):
    """A time, span, revision or number a person wrote that memfs cannot read."""


class OutOfRange(BadWhen):
    """A number or time of the right form, past what a store can hold."""


class Ambiguous(BadWhen):
    """A span in ``m``, which reads as minutes or months."""


def parse_number(text: str, what: str) -> int:
    """A whole number from 0 to :data:`MAX_NUMBER` (an id, a revision, a cursor)."""
    value = text.strip()
    if not value.isascii() or not value.isdigit():
        raise BadWhen(f"{what} {text!r} is not a whole number")
    return check_number(int(value), what)


def check_number(value: int, what: str) -> int:
    """``value`` when a store can hold it; BadWhen saying the range otherwise."""
    if not 0 <= value <= MAX_NUMBER:
        raise OutOfRange(f"{what} {value} is out of range (0 to {MAX_NUMBER})")
    return value


def _time_in_range(ns: int, text: str) -> int:
    if not MIN_NS <= ns <= MAX_NS:
        raise OutOfRange(f"{text.strip()!r} is out of range: {_TIME_RANGE}")
    return ns


def parse_duration(text: str) -> int:
    """The span ``text`` names, in nanoseconds; BadWhen for anything else."""
    compact = text.strip().lower()
    parts = _SPAN.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise BadWhen(f"{text!r} is not a duration; write a number and a unit, e.g. 90min, 2h, 3d")
    if any(u == "m" for _, u in parts):
        number = next(n for n, u in parts if u == "m")
        raise Ambiguous(
            f"{text.strip()!r} is ambiguous (minutes or months?): write {number}min for"
            f" minutes, or days for months (30d)"
        )
    total = sum(int(n) * _UNITS[u] for n, u in parts)
    if total <= 0:
        raise BadWhen(f"{text!r} is an empty duration; give at least 1s")
    if total * SECOND_NS > MAX_NS:
        raise OutOfRange(f"{text.strip()!r} is out of range: {_TIME_RANGE}")
    return total * SECOND_NS


def ago(now_ns: int, text: str) -> int:
    """The moment the span ``text`` before ``now_ns``; BadWhen as :func:`parse_duration`."""
    return _time_in_range(now_ns - parse_duration(text), text)


def parse_time(text: str) -> int | None:
    """Nanoseconds since the epoch of an ISO 8601 time, or None if ``text`` is not one;
    BadWhen for a time memfs's clock cannot say."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    try:
        if moment.tzinfo is None:
            moment = moment.astimezone()  # a time without a zone is the person's local time
        stamp = moment.timestamp()
    except (OverflowError, ValueError, OSError):
        # Year 1 in a zone east of UTC, or 9999 west of it, has no local time.
        raise OutOfRange(f"{text.strip()!r} is out of range: {_TIME_RANGE}") from None
    return _time_in_range(int(stamp * SECOND_NS), text)


@dataclass(frozen=True, slots=True)
class Point:
    """Where in the feed a point falls: after change ``seq``; ``label`` says how it
    was named, for messages."""

    seq: int
    label: str


def resolve_point(store: Store, text: str) -> Point:
    """The feed position ``text`` names (see the module docstring)."""
    spec = text.strip()
    for checkpoint in store.checkpoints():
        if checkpoint.name == spec:
            return Point(checkpoint.seq, f"checkpoint {spec}")
    if spec.isascii() and spec.isdigit():
        return Point(seq_of_revision(store, parse_number(spec, "revision")), f"revision {spec}")
    moment = parse_time(spec)
    if moment is None:
        try:
            moment = ago(store.clock(), spec)
        except (OutOfRange, Ambiguous):
            raise
        except BadWhen:
            raise BadWhen(
                f"{text!r} is neither a checkpoint, a revision number, an ISO time"
                " (2026-11-30T12:00) nor a duration (2h, 3d)"
            ) from None
    return Point(seq_at_time(store, moment), f"{spec}")


def seq_of_revision(store: Store, rev: int) -> int:
    """The change that made revision ``rev`` (or, for a number no change made, the last
    change with a smaller revision): the tree at ``rev`` is the tree after it."""
    # The feed is read newest first, in pages, until a change at or below ``rev``.
    until: int | None = None
    while True:
        page = store.changes(0, 1000, until=until, newest_first=True)
        for change in page:
            if change.rev is not None and change.rev <= rev:
                return change.seq
        if len(page) < 1000:
            return 0
        until = page[-1].seq - 1


def seq_at_time(store: Store, time_ns: int) -> int:
    """The last change made at or before ``time_ns`` (0: before the first)."""
    until: int | None = None
    while True:
        page = store.changes(0, 1000, until=until, newest_first=True)
        for change in page:
            if change.time_ns <= time_ns:
                return change.seq
        if len(page) < 1000:
            return 0
        until = page[-1].seq - 1


def resolve_time(store: Store, text: str) -> int:
    """The moment ``text`` names, in nanoseconds: a time or span as it says, a
    checkpoint or revision as the time of the change it resolves to (0: before all)."""
    spec = text.strip()
    moment = parse_time(spec)
    if moment is not None:
        return moment
    try:
        return ago(store.clock(), spec)
    except OutOfRange:
        raise
    except BadWhen:
        pass
    seq = resolve_point(store, spec).seq
    found = store.changes(seq - 1, 1) if seq > 0 else []
    return found[0].time_ns if found else 0
