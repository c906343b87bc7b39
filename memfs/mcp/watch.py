"""What changed in the tree, for the clients subscribed to its files.

On a memfs mount the store's change feed is the truth: it sees every writer (people
through the mount, other mounts, ``memfs sync``, the model's handler) and FUSE gives no
inotify events for changes made by other processes' mounts. On a plain directory a
watchdog observer does the job. Both hand what changed to ``on_change`` from their own
thread as :class:`Update` values; the server coalesces and delivers them.

On a store an update is one operation (:mod:`memfs.notices` folds it: its net steps,
temporary names folded away, hidden names left out, and its one-line summary). A
process's burst through the mount spans many commits, so an operation is told once it
has been quiet for :data:`QUIET_S` (``rm -rf`` of 5,000 files is one update, not one
per poll); one still going on after :data:`MAX_HOLD_S` is told as far as it got, and
the rest when it ends.

Neither thread dies quietly: a failing poll is logged once per failure streak and retried.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from memfs.errors import PathError, StoreError
from memfs.mcp.tree import MemoryTree
from memfs.notices import ChangeFeed, Notice
from memfs.paths import MemPath, parse, parse_rel
from memfs.store.base import Change

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.1  # seconds; the mount's own follower polls at the same pace
# An operation with no new record for this long is told (a burst through the mount
# commits every few milliseconds while it goes on).
QUIET_S = 0.2
MAX_HOLD_S = 30.0
_LISTING = frozenset({"create", "delete", "rename", "symlink", "mkdir", "rmdir"})


@dataclass(frozen=True, slots=True)
class Update:
    """What one operation (or one file system event) changed: every path it touched,
    ``top`` the deepest directory holding them all (the path itself for one), whether
    files came or went (``listing``), and its summary for people ("" when unknown)."""

    paths: list[MemPath]
    top: MemPath
    listing: bool
    summary: str = ""


OnChange = Callable[[Update], None]


@dataclass(slots=True)
class _Held:
    """An operation's records seen so far, waiting for it to go quiet."""

    records: list[Change] = field(default_factory=list)
    first: float = 0.0
    last: float = 0.0


def update_of(notice: Notice) -> Update | None:
    """The update of one operation's notice (model paths through the gate)."""
    paths: list[MemPath] = []
    listing = False
    for step in notice.steps:
        listing = listing or step.action in _LISTING
        for model in (step.path, step.old_path):
            if model is None:
                continue
            try:
                path = parse(model)
            except PathError:
                continue  # a name the gate refuses: no client can address it
            if path not in paths:
                paths.append(path)
    if not paths:
        return None
    try:
        top = parse(notice.path)
    except PathError:
        top = paths[0]
    return Update(paths, top, listing, notice.text)


class StoreWatch(threading.Thread):
    """Follows ``store.changes(since)`` and reports each operation under the tree."""

    def __init__(self, tree: MemoryTree, on_change: OnChange, interval: float = POLL_INTERVAL):
        super().__init__(name="memfs-mcp-feed", daemon=True)
        assert tree.store is not None
        self.store = tree.store
        self.tree = tree
        self.on_change = on_change
        self.interval = interval
        self.cursor = self.store.last_seq()
        # The notices' fold: one summary per operation, with this tree's model paths.
        self.feed = ChangeFeed(self.store, self.cursor, root=tree.subdir)
        self._held: dict[int, _Held] = {}  # operation -> its records not told yet
        self._halt = threading.Event()

    def step(self, now: float | None = None) -> None:
        """Read new records, and tell the operations that went quiet."""
        changes = self.store.changes(since=self.cursor)
        now = time.monotonic() if now is None else now
        for change in changes:
            # A record from before the operation log is an operation of its own.
            key = change.op if change.op is not None else -change.seq
            held = self._held.get(key)
            if held is None:
                held = self._held[key] = _Held(first=now)
            held.records.append(change)
            held.last = now
        if changes:
            self.cursor = changes[-1].seq
        for key, held in list(self._held.items()):
            if now - held.last >= QUIET_S or now - held.first >= MAX_HOLD_S:
                del self._held[key]
                self._tell(held.records)

    def flush(self) -> None:
        """Tell every held operation now (the server is stopping, or a test asks)."""
        held, self._held = self._held, {}
        for one in held.values():
            self._tell(one.records)

    def _tell(self, records: list[Change]) -> None:
        for notice in self.feed.fold(records):
            update = update_of(notice)
            if update is not None:
                self.on_change(update)

    def _wait(self) -> bool:
        """Wait for the next poll; True when asked to stop. A store with a push hook
        (``wait_for_changes(since, timeout)``) wakes this at once instead; while an
        operation is held, the poll comes back in time to tell it."""
        timeout = self.interval if not self._held else min(self.interval, QUIET_S / 2)
        if not self.store.pushes_changes:
            return self._halt.wait(timeout)
        try:
            self.store.wait_for_changes(self.cursor, timeout)
        except StoreError:
            return self._halt.wait(timeout)
        return self._halt.is_set()

    def run(self) -> None:
        failures = 0
        while not self._wait():
            try:
                self.step()
                failures = 0
            except StoreError as exc:
                if failures == 0:
                    log.warning("memfs mcp: cannot read the change feed: %s (retrying)", exc)
                failures += 1
            except Exception:
                log.exception("memfs mcp: following the change feed failed; retrying")

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=10)


class DirWatch:
    """A watchdog observer on a plain directory."""

    def __init__(self, tree: MemoryTree, on_change: OnChange) -> None:
        self.root = os.fspath(tree.root)
        self.on_change = on_change
        self.observer = Observer()
        self.observer.name = "memfs-mcp-watchdog"
        self.observer.daemon = True
        self.observer.schedule(_Events(self), self.root, recursive=True)

    def model_path(self, path: str | bytes) -> MemPath | None:
        text = os.fsdecode(path)
        rel = os.path.relpath(text, self.root)
        if rel == "." or rel.startswith(".."):
            return None
        # Hidden names (the handler's temp files, editors' swap files) are no resource.
        if any(part.startswith(".") for part in rel.split(os.sep)):
            return None
        try:
            return parse_rel(rel.replace(os.sep, "/"))
        except Exception:
            return None

    def start(self) -> None:
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()
        if self.observer.is_alive():
            self.observer.join(timeout=10)


class _Events(FileSystemEventHandler):
    def __init__(self, watch: DirWatch) -> None:
        super().__init__()
        self.watch = watch

    def on_any_event(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        try:
            paths = []
            for raw in (event.src_path, event.dest_path):
                model = self.watch.model_path(raw) if raw else None
                if model is not None:
                    paths.append(model)
            if paths:
                listing = kind in ("created", "deleted", "moved")
                self.watch.on_change(Update(paths, paths[0], listing))
        except Exception:
            log.exception("memfs mcp: handling a file system event failed")


Watch = StoreWatch | DirWatch


def watch_for(tree: MemoryTree, on_change: OnChange) -> Watch:
    """The change source for ``tree``: its store's feed, or watchdog on a plain directory."""
    if tree.store is not None:
        return StoreWatch(tree, on_change)
    return DirWatch(tree, on_change)
