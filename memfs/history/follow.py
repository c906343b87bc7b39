"""A file's revisions across renames, as ``git log --follow`` shows a file's history.

History belongs to paths (:mod:`memfs.store.base`, invariant 6), so ``store.history(P)``
already holds every save of P, atomic saves included. What it lacks is where the file
was before it arrived at P by a plain move (a rename onto a free name, or with its
directory): :func:`lineage` reads the feed newest first and, at each such rename, goes
on with the old name's revisions from before it. A rename onto a file keeps P's own
history (that is a save, not a move).

Whether a rename replaced a file is in its own record (``prior_kind``, invariant 12).
Only records from before the operation log (``prior_kind`` ``"?"``) need the feed read
back to the last record that named the path (:func:`existed_before`).

``memfs web``'s history page and ``memfs history --follow`` both call :func:`lineage`.
"""

from __future__ import annotations

from dataclasses import dataclass

from memfs.errors import NotFound
from memfs.store.base import Change, Revision, Store

PAGE = 1000
UNRECORDED = "?"  # the prior_kind of a record written before the store kept priors


@dataclass(frozen=True, slots=True)
class Segment:
    """Revisions of ``path`` with ``low <= rev < high`` (None: unbounded) belong to the
    followed file."""

    path: str
    low: int | None
    high: int | None


def _moved(change: Change, path: str) -> str | None:
    """The name ``path`` had before rename ``change``, if the rename brought it there."""
    if change.kind != "rename" or change.old_path is None:
        return None
    if change.path == path:
        return change.old_path
    if path.startswith(change.path + "/"):
        return change.old_path + path[len(change.path) :]
    return None


def existed_before(store: Store, path: str, before_seq: int) -> bool:
    """Whether something was at ``path`` just before change ``before_seq``: the nearest
    older record that names it says. For records without priors only; a record with
    them says it itself (:func:`replaced_a_file`)."""
    until = before_seq - 1
    while until > 0:
        page = store.changes(0, PAGE, until=until, newest_first=True)
        for change in page:
            if change.old_path is not None and (
                change.old_path == path or path.startswith(change.old_path + "/")
            ):
                return False  # renamed away (or its directory was)
            if change.path == path:
                return change.kind not in ("delete", "rmdir")
        if len(page) < PAGE:
            break
        until = page[-1].seq - 1
    return False


def replaced_a_file(store: Store, change: Change) -> bool:
    """Whether rename ``change`` landed on a file that was at its destination: a save,
    whose history is the destination's own."""
    if change.prior_kind == UNRECORDED or change.op is None:
        return existed_before(store, change.path, change.seq)
    return change.prior_kind == "file"


def segments(store: Store, path: str) -> list[Segment]:
    """The names the file now at ``path`` had, newest first, with their revision ranges."""
    found: list[Segment] = []
    current, high = path, None
    until: int | None = None
    while True:
        page = store.changes(0, PAGE, until=until, newest_first=True)
        for change in page:
            old = _moved(change, current)
            if old is None or change.rev is None:
                continue
            if change.path == current and replaced_a_file(store, change):
                continue
            revs = [r.rev for r in _history(store, current) if r.rev <= change.rev]
            arrival = max(revs) if revs else change.rev
            found.append(Segment(current, arrival, high))
            current, high = old, arrival
        if len(page) < PAGE:
            break
        until = page[-1].seq - 1
    found.append(Segment(current, None, high))
    return found


def _history(store: Store, path: str) -> list[Revision]:
    try:
        return store.history(path)
    except NotFound:
        return []


def lineage(store: Store, path: str) -> list[Revision]:
    """Every retained revision of the file now at ``path`` (or last there), across the
    renames that brought it there, newest first; each keeps the path it was made at.
    NotFound when there is none; IsADirectory for a directory."""
    store.history(path, limit=1)  # the store's own errors for a directory, a symlink, none
    revisions: list[Revision] = []
    for segment in segments(store, path):
        for revision in _history(store, segment.path):
            if segment.low is not None and revision.rev < segment.low:
                continue
            if segment.high is not None and revision.rev >= segment.high:
                continue
            revisions.append(revision)
    revisions.sort(key=lambda r: r.rev, reverse=True)
    return revisions


def names_of(store: Store, path: str) -> list[str]:
    """``path`` and the names the file (or directory) now there had before, through the
    renames that brought it there, newest first."""
    names: list[str] = []
    for segment in segments(store, path):
        if segment.path not in names:
            names.append(segment.path)
    return names
