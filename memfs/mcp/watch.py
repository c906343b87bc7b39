"""What changed in the tree, for the clients subscribed to its files.

On a memfs mount the store's change feed is the truth: it sees every writer (people
through the mount, other mounts, ``memfs sync``, the model's handler) and FUSE gives no
inotify events for changes made by other processes' mounts. On a plain directory a
watchdog observer does the job. Both hand the model paths that changed to ``on_change``
from their own thread; the server coalesces and delivers them.

Neither thread dies quietly: a failing poll is logged once per failure streak and retried.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from memfs.errors import StoreError
from memfs.mcp.tree import MemoryTree
from memfs.paths import MemPath, parse_rel

log = logging.getLogger(__name__)

OnChange = Callable[[list[MemPath], bool], None]  # paths, whether the file list changed
POLL_INTERVAL = 0.1  # seconds; the mount's own follower polls at the same pace
_LIST_KINDS = frozenset({"create", "delete", "rename", "symlink", "mkdir", "rmdir"})


class StoreWatch(threading.Thread):
    """Follows ``store.changes(since)`` and reports each changed path under the tree."""

    def __init__(self, tree: MemoryTree, on_change: OnChange, interval: float = POLL_INTERVAL):
        super().__init__(name="memfs-mcp-feed", daemon=True)
        assert tree.store is not None
        self.store = tree.store
        self.tree = tree
        self.on_change = on_change
        self.interval = interval
        self.cursor = self.store.last_seq()
        self._halt = threading.Event()

    def step(self) -> None:
        changes = self.store.changes(since=self.cursor)
        if not changes:
            return
        self.cursor = changes[-1].seq
        paths: list[MemPath] = []
        listing = False
        for change in changes:
            listing = listing or change.kind in _LIST_KINDS
            for store_path in (change.path, change.old_path):
                if store_path is None:
                    continue
                model = self.tree.model_path(store_path)
                if model is not None and model not in paths:
                    paths.append(model)
        if paths:
            self.on_change(paths, listing)

    def _wait(self) -> bool:
        """Wait for the next poll; True when asked to stop. A store with a push hook
        (``wait_for_changes(since, timeout)``) wakes this at once instead."""
        push = getattr(self.store, "wait_for_changes", None)
        if push is None:
            return self._halt.wait(self.interval)
        try:
            push(self.cursor, timeout=self.interval)
        except StoreError:
            return self._halt.wait(self.interval)
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
                self.watch.on_change(paths, kind in ("created", "deleted", "moved"))
        except Exception:
            log.exception("memfs mcp: handling a file system event failed")


Watch = StoreWatch | DirWatch


def watch_for(tree: MemoryTree, on_change: OnChange) -> Watch:
    """The change source for ``tree``: its store's feed, or watchdog on a plain directory."""
    if tree.store is not None:
        return StoreWatch(tree, on_change)
    return DirWatch(tree, on_change)
