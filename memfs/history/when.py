"""Points in time and spans as people write them: ``2h``, ``3d``, ``2026-11-30T12:00``,
a revision number, a checkpoint's name.

A span (:func:`parse_duration`) is a whole number with a unit: ``s``, ``m``, ``h``,
``d`` or ``w`` (``90m``, ``2h``, ``3d``); several may follow each other (``1d12h``).
A point (:func:`resolve_point`) is, in this order: a checkpoint name, a revision number
(digits only), an ISO 8601 time (local time when it names no zone), or a span meaning
that long before the store's clock says now. It resolves to a change ``seq`` of the
store's feed: the tree after that change is the tree at that point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memfs.errors import MemfsError
from memfs.store.base import Store

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
_SPAN = re.compile(r"(\d+)([smhdw])")
SECOND_NS = 10**9


class BadWhen(MemfsError):
    """A time, span or revision a person wrote that memfs cannot read."""


def parse_duration(text: str) -> int:
    """The span ``text`` names, in nanoseconds; BadWhen for anything else."""
    compact = text.strip().lower()
    parts = _SPAN.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise BadWhen(f"{text!r} is not a duration; write a number and a unit, e.g. 90m, 2h, 3d")
    total = sum(int(n) * _UNITS[u] for n, u in parts)
    if total <= 0:
        raise BadWhen(f"{text!r} is an empty duration; give at least 1s")
    return total * SECOND_NS


def parse_time(text: str) -> int | None:
    """Nanoseconds since the epoch of an ISO 8601 time, or None if ``text`` is not one."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a time without a zone is the person's local time
    return int(moment.timestamp() * SECOND_NS)


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
        return Point(seq_of_revision(store, int(spec)), f"revision {spec}")
    moment = parse_time(spec)
    if moment is None:
        try:
            moment = store.clock() - parse_duration(spec)
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
        return store.clock() - parse_duration(spec)
    except BadWhen:
        pass
    seq = resolve_point(store, spec).seq
    found = store.changes(seq - 1, 1) if seq > 0 else []
    return found[0].time_ns if found else 0
