"""Operations: what one actor did in one go, the unit the web page shows and undoes.

PROVISIONAL. This is an adapter over today's change feed, kept to the names and
signatures the real operation log (issue #16) will keep: an operation is a run of
consecutive feed records with the same author and time (one store mutation or batch,
as :func:`memfs.history.undo.select` groups them today), and its id is the ``seq`` of
its first record. The lead replaces the internals with the operations table; callers
keep working.

Until then the actor is the feed's author with a trailing ``(pid N)`` moved to
``detail``, and filters read the feed newest first (a time filter stops at the first
operation older than ``since_ns``, since the feed's times follow its order).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from memfs.errors import NotFound
from memfs.history.undo import Outcome, undo
from memfs.store.base import Change, Store

PAGE = 1000
_PID = re.compile(r"^(?P<actor>.*?) \((?P<detail>pid \d+)\)$")
_VERBS = {
    "create": "created",
    "modify": "edited",
    "delete": "deleted",
    "rename": "renamed",
    "mkdir": "made directory",
    "rmdir": "removed directory",
    "attr": "changed attributes of",
    "symlink": "made link",
}
_NOUNS = {
    "create": ("created", "file"),
    "modify": ("edited", "file"),
    "delete": ("deleted", "file"),
    "rename": ("renamed", "entry"),
    "mkdir": ("made", "directory"),
    "rmdir": ("removed", "directory"),
    "attr": ("changed attributes of", "entry"),
    "symlink": ("made", "link"),
}


@dataclass(frozen=True, slots=True)
class Operation:
    id: int
    actor: str
    detail: str
    start_ns: int
    end_ns: int
    summary: str
    counts: dict[str, int] = field(hash=False)
    top: str

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "actor": self.actor,
            "detail": self.detail,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "time": self.start_ns / 1e9,
            "summary": self.summary,
            "counts": dict(self.counts),
            "top": self.top,
        }


@dataclass(frozen=True, slots=True)
class UndoResult:
    conflicts: list[str]  # why, naming the path, for each path changed since by others
    done: bool
    made: int
    new_op: int | None


def _key(change: Change) -> tuple[str, int]:
    return change.author, change.time_ns


def _actor(author: str) -> tuple[str, str]:
    found = _PID.match(author)
    return (found["actor"], found["detail"]) if found else (author, "")


def _paths(change: Change) -> list[str]:
    return [change.path] if change.old_path is None else [change.old_path, change.path]


def _top(changes: list[Change]) -> str:
    """The deepest directory holding every path the changes touched ("" the root)."""
    common: list[str] | None = None
    for change in changes:
        for path in _paths(change):
            parts = path.split("/")
            # A path names an entry; its directory is what holds it (a directory made
            # or removed holds what is below it, so it counts as its own top).
            dirs = (
                parts if change.kind in ("mkdir", "rmdir") and path == change.path else parts[:-1]
            )
            if common is None:
                common = dirs
            else:
                n = 0
                while n < min(len(common), len(dirs)) and common[n] == dirs[n]:
                    n += 1
                common = common[:n]
    return "/".join(common or [])


def _summary(actor: str, changes: list[Change], counts: dict[str, int], top: str) -> str:
    program = actor.split(" ", 1)[0] if not actor.startswith("memfs ") else actor.split(" (")[0]
    if len(changes) == 1:
        change = changes[0]
        what = change.path if change.old_path is None else f"{change.old_path} -> {change.path}"
        return f"{program}: {_VERBS.get(change.kind, change.kind)} {what or '/'}"
    parts = []
    for kind, n in counts.items():
        verb, noun = _NOUNS.get(kind, (kind, "entry"))
        noun = noun if n == 1 else ("directories" if noun == "directory" else noun + "s")
        parts.append(f"{verb} {n:,} {noun}")
    where = f" in {top}/" if top else ""
    return f"{program}: {', '.join(parts)}{where}"


def _operation(changes: list[Change]) -> Operation:
    """The operation of one group of records, oldest first."""
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    actor, detail = _actor(changes[0].author)
    top = _top(changes)
    return Operation(
        id=changes[0].seq,
        actor=actor,
        detail=detail,
        start_ns=changes[0].time_ns,
        end_ns=changes[-1].time_ns,
        summary=_summary(actor, changes, counts, top),
        counts=counts,
        top=top,
    )


def _groups(store: Store, before: int | None) -> Iterator[list[Change]]:
    """The records in groups, newest operation first, each group oldest first; with
    ``before`` (an id from an earlier page), only records below it."""
    until = None if before is None else before - 1
    group: list[Change] = []  # newest first while it grows
    while until is None or until > 0:
        page = store.changes(0, PAGE, until=until, newest_first=True)
        for change in page:
            if group and _key(change) != _key(group[0]):
                yield group[::-1]
                group = []
            group.append(change)
        if len(page) < PAGE:
            break
        until = page[-1].seq - 1
    if group:
        yield group[::-1]


def _touches(changes: list[Change], path: str) -> bool:
    if path == "":
        return True
    return any(p == path or p.startswith(path + "/") for change in changes for p in _paths(change))


def operations(
    store: Store,
    *,
    path: str = "",
    actor: str | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    before: int | None = None,
    limit: int = 20,
) -> list[Operation]:
    """Operations newest first: only ids below ``before`` (paging), touching ``path``
    or below it, by an actor containing ``actor``, that started within the times."""
    found: list[Operation] = []
    if limit < 1:
        return found
    for group in _groups(store, before):
        if since_ns is not None and group[-1].time_ns < since_ns:
            break
        if until_ns is not None and group[0].time_ns > until_ns:
            continue
        if actor is not None and actor not in group[0].author:
            continue
        if not _touches(group, path):
            continue
        found.append(_operation(group))
        if len(found) >= limit:
            break
    return found


def operation_changes(store: Store, op_id: int) -> list[Change]:
    """The records of operation ``op_id``, oldest first; NotFound if no operation
    starts there."""
    if op_id < 1:
        raise NotFound(f"no operation {op_id}")
    first = store.changes(op_id - 1, 1)
    if not first or first[0].seq != op_id:
        raise NotFound(f"no operation {op_id}")
    previous = store.changes(0, 1, until=op_id - 1, newest_first=True)
    if previous and _key(previous[0]) == _key(first[0]):
        raise NotFound(f"no operation {op_id} (change {op_id} is inside an earlier one)")
    key = _key(first[0])
    changes: list[Change] = []
    after = op_id - 1
    while True:
        page = store.changes(after, PAGE)
        for change in page:
            if _key(change) != key:
                return changes
            changes.append(change)
        if len(page) < PAGE:
            return changes
        after = page[-1].seq


def operation(store: Store, op_id: int) -> Operation:
    """Operation ``op_id``; NotFound if there is none."""
    return _operation(operation_changes(store, op_id))


class _Refused(Exception):
    """Conflicts met while undoing for real: the batch is rolled back."""


def undo_operation(
    store: Store, op_id: int, *, actor: str, force: bool = False, dry_run: bool = False
) -> UndoResult:
    """Take operation ``op_id`` back whole, as one new operation by ``actor``: all or
    nothing. Paths changed since by others (or whose earlier content is gone) are
    ``conflicts``; with any and not ``force``, nothing changes. ``dry_run`` says what
    would happen."""
    chosen = list(reversed(operation_changes(store, op_id)))
    conflicts: list[str] = []
    try:
        with store.batch():
            start = store.last_seq()
            check = undo(store, chosen, author=actor, dry_run=True)
            conflicts = _conflicts(check.outcomes)
            if dry_run or (conflicts and not force):
                return UndoResult(conflicts, False, 0, None)
            report = undo(store, chosen, author=actor)
            late = _conflicts(report.outcomes)
            if late and not force:
                conflicts = late
                raise _Refused
    except _Refused:
        return UndoResult(conflicts, False, 0, None)
    return UndoResult(conflicts, True, report.made, start + 1 if report.made else None)


def _conflicts(outcomes: list[Outcome]) -> list[str]:
    return [
        o.why or o.change.path  # undo's reasons name the path ("'a.md' was changed since")
        for o in outcomes
        if o.result in ("conflict", "unavailable")
    ]
