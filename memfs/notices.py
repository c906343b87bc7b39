"""Change notices: what other people and agents did under ``/memories`` since an agent
last looked, as one short text block for the model.

Two sources give the same :class:`Notice` list:

- :class:`ChangeFeed` follows a store's change feed and speaks in operations (invariant
  12 of :mod:`memfs.store.base`): one notice per operation someone else made in the poll
  window, its actor and what it did, summed up by
  :func:`memfs.history.operations.describe` over the operation's net steps
  (:func:`memfs.history.steps.fold`). So an editor's save (a temporary file renamed over
  the original) is ``root (vim) edited /memories/todo.md``, a file made and removed in
  one operation is nothing, and ``rm -rf`` of 5,000 files is one notice, ``root (rm)
  deleted 5,000 files, removed 1 directory in /memories/many/``. An operation the poll
  sees only part of (a burst still going on) is told as far as it got; the next poll
  tells the rest.
- :class:`SnapshotWatcher` is the fallback for a root that is not a memfs mount: it
  compares ``path -> (kind, size, mtime_ns, inode)`` snapshots of the directory tree.
  The agent re-takes the snapshot right after its own tool calls, so only what changed
  while the model was thinking is reported (actors are unknown there).

Hidden entries (a name starting with ``.``: editor swap files, lock files) are left out,
as the memory tool's ``view`` leaves them out; a file moved in from a hidden name is
new to the reader, one moved to a hidden name is gone.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from memfs.history.operations import describe
from memfs.history.steps import State, Step, StepAction, fold
from memfs.paths import parent_of
from memfs.store.base import Change, Store

NoticeKind = Literal["created", "edited", "deleted", "renamed", "changed"]
# Who to leave out: a predicate on the operation's actor, or this process's pid (the
# mount keeps it as the operation's detail), or nobody.
Exclude = Callable[[str], bool] | int | None

MAX_LISTED = 20
PREFIX = "/memories"


@dataclass(frozen=True, slots=True)
class Notice:
    """What someone changed, with model paths (``/memories/...``): one path's change
    (``created`` to ``renamed``), or an operation's several (``changed``: ``path`` is
    the directory that holds them all). From the store's operation log come ``actor``,
    ``summary`` (what it did, the actor left out), ``op``, its id, and ``steps``, its net
    steps with model paths (for doors that tell each path, the MCP server); a plain
    directory has none of them."""

    kind: NoticeKind
    path: str
    old_path: str | None = None  # renames only
    actor: str | None = None
    summary: str = ""
    op: int | None = None
    steps: tuple[Step, ...] = field(default=(), compare=False, repr=False)

    @property
    def text(self) -> str:
        """The notice as one line: ``root (vim) edited /memories/todo.md``."""
        return _describe(self)


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


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _moved(path: str, old: str, new: str) -> str:
    return new + path[len(old) :]


def _ancestors(path: str) -> Iterable[str]:
    """``path`` and every directory above it (the root ``""`` last)."""
    while path:
        yield path
        path = path.rpartition("/")[0]
    yield ""


_KINDS: dict[str, NoticeKind] = {
    "create": "created",
    "mkdir": "created",
    "symlink": "created",
    "modify": "edited",
    "delete": "deleted",
    "rmdir": "deleted",
    "rename": "renamed",
}


def _making(state: State | None, replaced: State | None) -> Step:
    """What arriving at a path from out of sight is: an edit of what it replaced, or new."""
    kind = state.kind if state is not None else "file"
    if replaced is not None and kind == "file":
        return Step("modify", "", replaced, state)
    made: dict[str, StepAction] = {"dir": "mkdir", "symlink": "symlink"}
    return Step(made.get(kind, "create"), "", None, state)


def _phrase(steps: list[Step]) -> str:
    """What an operation did, its actor left out: ``describe``'s summary, and a conflict
    copy it kept named as one (the model should look at both versions)."""
    copies = [(s.path, o) for s in steps if s.action == "create" and (o := _conflict_of(s.path))]
    rest = [s for s in steps if not (s.action == "create" and _conflict_of(s.path))]
    parts: list[str] = []
    if rest:
        # describe() leads with who did it; a notice puts the actor in front itself.
        parts.append(describe(rest, "")[0].removeprefix(": "))
        step = rest[0]
        if len(rest) == 1 and step.action == "rename" and not _same_content(step):
            parts[0] += " and edited it"
    parts += [f"kept {copy} as a conflict copy beside {original}" for copy, original in copies]
    return " and ".join(parts)


def _same_content(step: Step) -> bool:
    before, after = step.before, step.after
    return before is None or after is None or before.sha256 == after.sha256


class ChangeFeed:
    """Notices from a store's change feed, one per operation of someone else.
    ``since=None`` starts at the feed's end (now).

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
        self._ops: dict[int, tuple[str, str]] = {}  # within one fold: op -> actor, detail

    def _rel(self, path: str) -> str | None:
        """The path below the root, or None when it is outside the root or hidden."""
        if not self.root:
            rel = path
        elif path == self.root:
            rel = ""
        elif path.startswith(self.root + "/"):
            rel = path[len(self.root) + 1 :]
        else:
            return None
        return None if _hidden(rel) else rel

    def poll(self, exclude: Exclude = None) -> list[Notice]:
        changes = self.store.changes(self.seq)
        if changes:
            self.seq = changes[-1].seq
        return self.fold(changes, exclude if exclude is not None else self.exclude)

    def _who(self, first: Change) -> tuple[str, str]:
        """The actor and detail of the operation ``first`` belongs to."""
        if first.op is None:
            return first.author, ""
        found = self._ops.get(first.op)
        if found is None:
            stored = self.store.operation(first.op)
            found = self._ops[first.op] = (stored.actor, stored.detail)
        return found

    def _is_own(self, first: Change, exclude: Exclude) -> bool:
        if exclude is None:
            return False
        actor, detail = self._who(first)
        if isinstance(exclude, int):
            # The mount keeps a process's id as its operation's detail; records from
            # before the operation log carry it in the author ("memfs (pid 90)").
            return detail == f"pid {exclude}" or actor.endswith(f"(pid {exclude})")
        return exclude(actor)

    def fold(self, changes: Iterable[Change], exclude: Exclude = None) -> list[Notice]:
        """The notices of these records (oldest first): one per operation not our own."""
        mine = self.own_seqs()
        self._ops = {}
        groups: dict[int, list[Change]] = {}
        for change in changes:
            # A record from before the operation log is an operation of its own.
            key = change.op if change.op is not None else -change.seq
            groups.setdefault(key, []).append(change)
        own: set[int] = set()
        for key, records in groups.items():
            first = records[0]
            if any(c.seq in mine for c in records) or self._is_own(first, exclude):
                own.add(key)
        # A path our own operation touched after someone else did is known to us as it
        # is now: their earlier change of it is no news.
        touched: dict[str, int] = {}
        for key in own:
            for change in groups[key]:
                for path in (change.path, change.old_path):
                    if path is not None:
                        touched[path] = max(touched.get(path, 0), change.seq)
        found: list[Notice] = []
        for key, records in groups.items():
            if key in own:
                continue
            last = records[-1].seq
            steps = [
                shown
                for step in fold(records)
                if not self._known_since(step, touched, last)
                and (shown := self._shown(step)) is not None
            ]
            if steps:
                found.append(self._notice(records[0], steps))
        return found

    @staticmethod
    def _known_since(step: Step, touched: dict[str, int], after: int) -> bool:
        for path in (step.path, step.old_path):
            if path is None:
                continue
            if any(touched.get(p, 0) > after for p in _ancestors(path)):
                return True
        return False

    def _shown(self, step: Step) -> Step | None:
        """The step as the model sees it (model paths), or None when it cannot see it
        (outside the root, hidden, or a mode change)."""
        if step.action == "attr":
            return None
        new = self._rel(step.path)
        if step.action != "rename":
            return None if new is None else dataclasses.replace(step, path=model_path(new))
        old = self._rel(step.old_path) if step.old_path is not None else None
        if new is not None and old is not None:
            return dataclasses.replace(step, path=model_path(new), old_path=model_path(old))
        if new is not None:  # moved in from out of sight: new to the reader
            made = _making(step.after, step.replaced)
            return dataclasses.replace(made, path=model_path(new), rev=step.rev)
        if old is not None:  # moved out of sight: gone
            kind = step.before.kind if step.before is not None else "file"
            action: StepAction = "rmdir" if kind == "dir" else "delete"
            return Step(action, model_path(old), step.before, None)
        return None

    def _notice(self, first: Change, steps: list[Step]) -> Notice:
        actor, _ = self._who(first)
        summary = _phrase(steps)
        shown = tuple(steps)
        if len(steps) == 1:
            step = steps[0]
            kind, path, old = _KINDS[step.action], step.path, step.old_path
            return Notice(kind, path, old, actor, summary, first.op, shown)
        _, _, top = describe(steps, "")
        return Notice("changed", top or PREFIX, None, actor, summary, first.op, shown)

    def own_changes_done(self) -> None:
        pass  # own changes are recognised by their feed numbers and their actor

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
    if notice.summary:
        text = notice.summary
    elif notice.kind == "renamed":
        text = f"renamed {notice.old_path} -> {notice.path}"
    elif original is not None:
        # Two writers changed the same lines: the model should look at both versions.
        text = f"kept {notice.path} as a conflict copy beside {original}"
    else:
        text = f"{notice.kind} {notice.path}"
    return f"{notice.actor} {text}" if notice.actor else text


def format_notices(notices: list[Notice], limit: int = MAX_LISTED) -> str:
    """One short text block for the model; empty when there is nothing to say."""
    if not notices:
        return ""
    listed = "; ".join(n.text for n in notices[:limit])
    more = len(notices) - limit
    if more > 0:
        listed += f"; and {more} more"
    return f"Since your last turn, people changed {PREFIX}: {listed}."
