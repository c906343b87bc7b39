"""Change notices: what other people and agents changed under ``/memories`` since an
agent last looked, as one short text block for the model.

Two sources give the same :class:`Notice` list:

- :class:`ChangeFeed` follows a store's change feed (exact: it knows authors, renames
  and the order of events). Each :meth:`ChangeFeed.poll` coalesces the records since the
  previous poll per path: created then edited is *created*, created then deleted is
  nothing, a file saved by writing a temporary file and renaming it over the original is
  *edited*, and a rename stays a rename ``old -> new``.
- :class:`SnapshotWatcher` is the fallback for a root that is not a memfs mount: it
  compares ``path -> (kind, size, mtime_ns, inode)`` snapshots of the directory tree.
  The agent re-takes the snapshot right after its own tool calls, so only what changed
  while the model was thinking is reported (authors are unknown there).

Hidden entries (a name starting with ``.``: editor swap files, lock files) are left out,
as the memory tool's ``view`` leaves them out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from memfs.paths import parent_of
from memfs.store.base import Change, Store

NoticeKind = Literal["created", "edited", "deleted", "renamed"]
Exclude = Callable[[str], bool] | int | None

MAX_LISTED = 20
PREFIX = "/memories"


@dataclass(frozen=True, slots=True)
class Notice:
    """One coalesced change, with model paths (``/memories/...``)."""

    kind: NoticeKind
    path: str
    old_path: str | None = None  # renames only
    authors: tuple[str, ...] = ()
    edited: bool = False  # a rename whose content changed too


class Watcher(Protocol):
    """What the agent needs from a notice source."""

    def poll(self) -> list[Notice]:
        """What others changed since the previous poll (or since the watcher started)."""
        ...

    def own_changes_done(self) -> None:
        """The agent's own tool calls just ran: whatever changed since the poll is its own."""
        ...

    def close(self) -> None: ...


def model_path(rel: str) -> str:
    return f"{PREFIX}/{rel}" if rel else PREFIX


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/") if part)


def _excluder(exclude: Exclude) -> Callable[[str], bool]:
    if exclude is None:
        return lambda author: False
    if isinstance(exclude, int):
        # The mount records authors as "{comm} (pid {tgid})"; the suffix is the contract.
        suffix = f"(pid {exclude})"
        return lambda author: author.endswith(suffix)
    return exclude


@dataclass
class _Track:
    """The object now at a path: where it was when the poll window opened (None: made
    during the window), whether its content changed, and who touched it."""

    origin: str | None
    changed: bool = False
    authors: list[str] = field(default_factory=list)

    def touch(self, author: str) -> None:
        if author not in self.authors:
            self.authors.append(author)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _moved(path: str, old: str, new: str) -> str:
    return new + path[len(old) :]


class _Window:
    """The changes of one poll window, folded per path."""

    def __init__(self, known: set[str]) -> None:
        self.known = known  # paths that exist, kept current through every change
        self.cur: dict[str, _Track] = {}
        self.gone: dict[str, list[str]] = {}  # original path -> authors of its removal

    def _track(self, path: str) -> _Track:
        track = self.cur.get(path)
        if track is None:
            track = self.cur[path] = _Track(origin=path)
        return track

    def _destroy(self, path: str, author: str | None) -> None:
        """The object at ``path`` no longer exists (deleted, or replaced by a rename)."""
        track = self.cur.pop(path, None)
        origin = path if track is None else track.origin
        if origin is not None:
            authors = [] if track is None else list(track.authors)
            if author is not None and author not in authors:
                authors.append(author)
            self.gone[origin] = authors

    def apply(self, change: Change, own: bool) -> None:
        kind, path, old = change.kind, change.path, change.old_path
        if kind == "rename" and old is not None:
            self._rename(old, path, change.author, own)
        elif kind in ("delete", "rmdir"):
            self.known.discard(path)
            if own:
                self.cur.pop(path, None)
                self.gone.pop(path, None)
            else:
                self._destroy(path, change.author)
        elif kind in ("create", "mkdir", "symlink"):
            self.known.add(path)
            if own:
                self.cur.pop(path, None)
                self.gone.pop(path, None)
            else:
                track = self.cur[path] = _Track(origin=None, changed=True)
                track.touch(change.author)
        elif kind != "attr":  # modify, truncate and kinds added later: content changed
            self.known.add(path)
            if own:
                self.cur.pop(path, None)
            else:
                track = self._track(path)
                track.changed = True
                track.touch(change.author)

    def _rename(self, old: str, new: str, author: str, own: bool) -> None:
        replaced = new in self.known
        self.known = {_moved(p, old, new) if _under(p, old) else p for p in self.known}
        self.known.add(new)
        moving = {p: t for p, t in self.cur.items() if _under(p, old)}
        for p in moving:
            del self.cur[p]
        if own:
            for p in (old, new):
                self.gone.pop(p, None)
            self.cur.pop(new, None)
            return
        if replaced:
            self._destroy(new, author)
        for p, track in moving.items():
            self.cur[_moved(p, old, new)] = track
        track = self.cur.get(new)
        if track is None:
            track = self.cur[new] = _Track(origin=old)
        track.touch(author)

    def notices(self) -> list[Notice]:
        live_origins = {t.origin for t in self.cur.values() if t.origin is not None}
        found: list[Notice] = []
        for path, track in self.cur.items():
            authors = tuple(track.authors)
            if track.origin is None:
                replaced = path in self.gone and path not in live_origins
                found.append(Notice("edited" if replaced else "created", path, authors=authors))
            elif track.origin == path:
                if track.changed:
                    found.append(Notice("edited", path, authors=authors))
            else:
                found.append(Notice("renamed", path, track.origin, authors, track.changed))
        for path, authors in self.gone.items():
            if path in self.cur or path in live_origins:
                continue
            found.append(Notice("deleted", path, authors=tuple(authors)))
        deleted = {n.path for n in found if n.kind == "deleted"}
        # A recursive delete records every child; the directory's own notice covers them.
        return [
            n
            for n in found
            if not (n.kind == "deleted" and any(_under(n.path, d) and n.path != d for d in deleted))
        ]


class ChangeFeed:
    """Notices from a store's change feed. ``since=None`` starts at the feed's end (now).

    ``root`` is the store directory that ``/memories`` maps to (``""`` for the whole
    store, or a subdirectory when the agent's root is a directory inside a mount).
    """

    def __init__(
        self,
        store: Store,
        since: int | None = None,
        *,
        root: str = "",
        exclude: Exclude = None,
        close_store: bool = False,
    ) -> None:
        self.store = store
        self.root = root.strip("/")
        self.exclude = exclude
        # The feed records a door made itself on the store (memfs.handler.storetree keeps
        # them): never news to the agent whose handler made them.
        self.own_seqs: Callable[[], Collection[int]] = frozenset
        self._close_store = close_store
        self.seq = store.last_seq() if since is None else since
        # Which paths exist tells a rename onto an existing file (an editor's save) from
        # a new file; the store records the replaced destination only implicitly.
        self._known = {entry.path for entry in store.walk()}

    def _rel(self, path: str) -> str | None:
        if not self.root:
            return path
        if path == self.root:
            return ""
        if path.startswith(self.root + "/"):
            return path[len(self.root) + 1 :]
        return None

    def poll(self, exclude: Exclude = None) -> list[Notice]:
        is_own = _excluder(exclude if exclude is not None else self.exclude)
        changes = self.store.changes(self.seq)
        if changes:
            self.seq = changes[-1].seq
        return self.fold(changes, is_own)

    def fold(self, changes: Iterable[Change], is_own: Callable[[str], bool]) -> list[Notice]:
        window = _Window(self._known)
        mine = self.own_seqs()
        for change in changes:
            window.apply(change, change.seq in mine or is_own(change.author))
        self._known = window.known
        result: list[Notice] = []
        for notice in window.notices():
            rel = self._rel(notice.path)
            old = self._rel(notice.old_path) if notice.old_path is not None else None
            if rel is None or _hidden(rel):
                continue
            if notice.kind == "renamed" and (old is None or _hidden(old)):
                # Moved in from outside the root or from a hidden name: new to the reader.
                kind: NoticeKind = "created"
                result.append(Notice(kind, model_path(rel), authors=notice.authors))
                continue
            old_model = model_path(old) if old is not None else None
            result.append(
                Notice(notice.kind, model_path(rel), old_model, notice.authors, notice.edited)
            )
        return result

    def own_changes_done(self) -> None:
        pass  # own changes are recognised by their author

    def close(self) -> None:
        if self._close_store:
            self.store.close()


Snapshot = dict[str, tuple[str, int, int, int]]  # rel -> (kind, size, mtime_ns, inode)


def snapshot(root: str | os.PathLike[str]) -> Snapshot:
    """The visible tree under ``root``: hidden names and node_modules left out, symlinks
    not followed."""
    found: Snapshot = {}
    base = Path(root)
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "node_modules")
        rel_dir = os.path.relpath(dirpath, base)
        for name in [*dirnames, *sorted(f for f in filenames if not f.startswith("."))]:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue  # removed while we walked: the next snapshot will say so
            kind = "dir" if name in dirnames else "file"
            found[rel] = (kind, st.st_size, st.st_mtime_ns, st.st_ino)
    return found


def diff_snapshots(before: Snapshot, after: Snapshot) -> list[Notice]:
    """What changed between two snapshots. A rename is an entry that vanished and one that
    appeared with the same inode, kind, size and mtime (a new file with a reused inode
    has a new mtime); entries inside a renamed or deleted directory are left to it."""
    removed = {p: v for p, v in before.items() if p not in after}
    added = {p: v for p, v in after.items() if p not in before}
    by_identity = {v: p for p, v in removed.items()}
    renames: dict[str, str] = {}  # new -> old
    for path in sorted(added):
        old = by_identity.get(added[path])
        if old is None:
            continue
        implied = any(
            _under(path, new) and old == _moved(path, new, top) for new, top in renames.items()
        )
        renames[path] = old if not implied else ""
    found: list[Notice] = []
    for path in sorted(added):
        old = renames.get(path)
        if old:
            found.append(Notice("renamed", model_path(path), model_path(old)))
        elif old is None:
            found.append(Notice("created", model_path(path)))
    for path in sorted(after):
        if path in before and after[path][0] == "file" and before[path][1:] != after[path][1:]:
            found.append(Notice("edited", model_path(path)))
    moved_away = {old for old in renames.values() if old}
    for path in sorted(removed):
        if any(_under(path, old) for old in moved_away):
            continue
        parent = parent_of(path)
        if parent and parent in removed and parent not in moved_away:
            continue  # covered by its directory's notice
        found.append(Notice("deleted", model_path(path)))
    return found


class SnapshotWatcher:
    """Notices for a plain directory, from snapshots of its tree."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._before = snapshot(self.root)

    def poll(self) -> list[Notice]:
        now = snapshot(self.root)
        notices = diff_snapshots(self._before, now)
        self._before = now
        return notices

    def own_changes_done(self) -> None:
        self._before = snapshot(self.root)

    def close(self) -> None:
        pass


# A conflict copy's name (memfs.store.rebase.conflict_name): STEM.conflict-STAMP-SIDE.EXT
_CONFLICT_COPY = re.compile(
    r"^(?P<stem>.+)\.conflict-\d{8}-\d{6}-[A-Za-z0-9_-]+(?P<ext>\.[^./]+)?$"
)


def _conflict_of(path: str) -> str | None:
    """The file a conflict copy was kept beside, or None if ``path`` is not one."""
    parent, _, name = path.rpartition("/")
    match = _CONFLICT_COPY.match(name)
    if match is None:
        return None
    original = match["stem"] + (match["ext"] or "")
    return f"{parent}/{original}" if parent else original


def _describe(notice: Notice) -> str:
    original = _conflict_of(notice.path) if notice.kind == "created" else None
    if notice.kind == "renamed":
        text = f"renamed {notice.old_path} -> {notice.path}"
        if notice.edited:
            text += " and edited it"
    elif original is not None:
        # Two writers changed the same lines: the model should look at both versions.
        text = f"kept {notice.path} as a conflict copy beside {original}"
    else:
        text = f"{notice.kind} {notice.path}"
    if notice.authors:
        text += f" (by {', '.join(notice.authors)})"
    return text


def format_notices(notices: list[Notice], limit: int = MAX_LISTED) -> str:
    """One short text block for the model; empty when there is nothing to say."""
    if not notices:
        return ""
    listed = "; ".join(_describe(n) for n in notices[:limit])
    more = len(notices) - limit
    if more > 0:
        listed += f"; and {more} more"
    return f"Since your last turn, people changed {PREFIX}: {listed}."
