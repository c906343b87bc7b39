"""What one change of an operation did to content, read from the store's history.

Each change record says its path, kind and the revision it made; what was there before
is the path's newest retained revision made before the change. Revisions are numbered
in feed order, so "before the change" is "at most the last revision number made before
it", which the caller carries along while walking an operation's changes in order
(:func:`last_rev_before` finds it once for the operation's start).
"""

from __future__ import annotations

from dataclasses import dataclass

from memfs.errors import NotFound
from memfs.history.follow import existed_before
from memfs.store.base import Change, Store
from memfs.web.render import Diff, as_text, diff, sha256

PAGE = 1000


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a change's content: ``rev`` and ``size``/``sha256``; ``gone`` says
    the content is no longer retained (or was redacted)."""

    rev: int | None
    size: int | None
    sha256: str | None
    gone: bool = False


@dataclass(frozen=True, slots=True)
class ChangeView:
    change: Change
    title: str
    before: Side | None
    after: Side | None
    diff: Diff | None  # None: nothing to compare (a directory, attributes, gone content)
    note: str = ""


def last_rev_before(store: Store, seq: int) -> int:
    """The highest revision number made by a change before ``seq`` (0 for none)."""
    until = seq - 1
    while until > 0:
        page = store.changes(0, PAGE, until=until, newest_first=True)
        for change in page:
            if change.rev is not None:
                return change.rev
        if len(page) < PAGE:
            break
        until = page[-1].seq - 1
    return 0


def _read(store: Store, path: str, rev: int) -> bytes | None:
    try:
        return store.read_revision(path, rev)
    except NotFound:
        return None


def _previous(store: Store, path: str, below: int) -> tuple[int | None, bytes | None, int | None]:
    """The newest revision at ``path`` numbered at most ``below``: rev, content, size."""
    try:
        revisions = store.history(path)
    except NotFound:
        return None, None, None
    for revision in revisions:
        if revision.rev <= below:
            return revision.rev, _read(store, path, revision.rev), revision.size
    return None, None, None


def view(store: Store, change: Change, last_rev: int, limit: int) -> ChangeView:
    """What ``change`` did; ``last_rev`` is the highest revision made before it."""
    kind, path = change.kind, change.path
    if kind == "rename":
        title = f"renamed {change.old_path} → {path}"
        if change.rev is None or not existed_before(store, path, change.seq):
            return ChangeView(change, title, None, None, None, "content unchanged")
        # A file renamed over another (an atomic save): what the path held before and
        # what arrived.
        kind = "modify"
    if kind in ("mkdir", "rmdir", "attr", "symlink"):
        title = {
            "mkdir": "made directory",
            "rmdir": "removed directory",
            "attr": "changed attributes of",
            "symlink": "made link",
        }[kind]
        return ChangeView(change, f"{title} {path}", None, None, None)
    after_data: bytes | None = None
    after: Side | None = None
    if kind in ("create", "modify") and change.rev is not None:
        after_data = _read(store, path, change.rev)
        after = Side(change.rev, change.size, change.sha256, gone=after_data is None)
    before_data: bytes | None = None
    before: Side | None = None
    if kind in ("modify", "delete"):
        below = last_rev if kind == "delete" else (change.rev or 1) - 1
        rev, before_data, size = _previous(store, path, below)
        if rev is not None:
            digest = sha256(before_data) if before_data is not None else None
            before = Side(rev, size, digest, gone=before_data is None)
        else:
            before = Side(None, None, None, gone=True)
    title = {"create": "created", "modify": "edited", "delete": "deleted"}[kind] + f" {path}"
    if change.kind == "rename":
        title = f"replaced {path} with {change.old_path}"
    if (before is not None and before.gone) or (after is not None and after.gone):
        return ChangeView(change, title, before, after, None, "content no longer retained")
    binary = any(d is not None and as_text(d) is None for d in (before_data, after_data))
    if binary:
        return ChangeView(change, title, before, after, Diff([], 0, binary=True))
    old_name = f"a/{path}@{before.rev}" if before is not None else "a"
    new_name = f"b/{path}@{after.rev}" if after is not None else "b"
    shown = diff(before_data, after_data, old_name, new_name, limit)
    return ChangeView(change, title, before, after, shown)


def views(
    store: Store, changes: list[Change], start: int, count: int, limit: int
) -> list[ChangeView]:
    """Views of ``changes[start:start+count]`` (an operation's changes, oldest first)."""
    if not changes:
        return []
    last_rev = last_rev_before(store, changes[0].seq)
    shown: list[ChangeView] = []
    for index, change in enumerate(changes[: start + count]):
        if index >= start:
            shown.append(view(store, change, last_rev, limit))
        if change.rev is not None:
            last_rev = max(last_rev, change.rev)
    return shown
