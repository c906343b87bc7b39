"""Watching DIR: the watchdog handler and the per-path debouncer it feeds.

The watchdog observer thread only records *which* paths were touched and when; the
mirror's worker takes a path once it has been quiet for ``quiet`` seconds, so an
editor's burst (temp file, rename, chmod, close) becomes one look at the final file, and
a file still being written is not read until the writes stop. This is the only module
(with :mod:`memfs.sync.mirror` and :mod:`memfs.sync.inotify`) that imports watchdog.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from memfs.sync.names import ignored_path

# Opened/closed-without-write events come from every read (the mirror's own included)
# and directory "modified" events only echo their children's: none says content changed.
EVENTS = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


@dataclass(slots=True)
class Due:
    """What the worker should look at now."""

    paths: set[str] = field(default_factory=set)
    subtrees: set[str] = field(default_factory=set)
    moves: list[tuple[str, str, bool]] = field(default_factory=list)  # (src, dst, is_dir)

    def __bool__(self) -> bool:
        return bool(self.paths or self.subtrees or self.moves)


class Debouncer:
    """Paths waiting for quiet, shared by the observer thread and the worker."""

    def __init__(self, quiet: float) -> None:
        self.quiet = quiet
        self._cond = threading.Condition()
        self._due: dict[str, float] = {}
        self._subtree: set[str] = set()
        self._moves: list[tuple[str, str, bool]] = []
        self._woken = False

    def touch(self, rel: str, *, subtree: bool = False, at: float | None = None) -> None:
        """Look at ``rel`` once it has been quiet (or at ``at``, if that is later)."""
        with self._cond:
            if at is None:
                self._due[rel] = time.monotonic() + self.quiet
            else:
                self._due[rel] = max(self._due.get(rel, 0.0), at)
            if subtree:
                self._subtree.add(rel)
            self._woken = True
            self._cond.notify()

    def moved(self, src: str, dst: str, is_dir: bool) -> None:
        with self._cond:
            self._moves.append((src, dst, is_dir))
        self.touch(src, subtree=is_dir)
        self.touch(dst, subtree=is_dir)

    def pending(self, rel: str) -> bool:
        with self._cond:
            return rel in self._due

    def take(self, *, flush: bool = False) -> Due:
        """The paths whose quiet period is over (all of them with ``flush``)."""
        now = time.monotonic()
        out = Due()
        with self._cond:
            for rel, when in list(self._due.items()):
                if flush or when <= now:
                    del self._due[rel]
                    if rel in self._subtree:
                        self._subtree.discard(rel)
                        out.subtrees.add(rel)
                    else:
                        out.paths.add(rel)
            taken = out.paths | out.subtrees
            keep: list[tuple[str, str, bool]] = []
            for move in self._moves:
                (out.moves if move[1] in taken else keep).append(move)
            self._moves = keep
        return out

    def next_due(self) -> float | None:
        with self._cond:
            return min(self._due.values(), default=None)

    def wait(self, timeout: float) -> None:
        """Sleep up to ``timeout`` seconds, less if a path is touched or :meth:`wake`."""
        with self._cond:
            if not self._woken and timeout > 0:
                self._cond.wait(timeout)
            self._woken = False

    def wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify()


class TreeHandler(FileSystemEventHandler):
    """Turns watchdog events under ``root`` into debouncer touches (store-relative)."""

    def __init__(self, root: str, debouncer: Debouncer) -> None:
        self.root = root
        self.debouncer = debouncer
        self.root_gone = threading.Event()

    def _rel(self, path: str | bytes) -> str | None:
        text = os.fsdecode(path)
        if text == self.root:
            return ""
        prefix = self.root + os.sep
        if not text.startswith(prefix):
            return None
        rel = text[len(prefix) :]
        return None if ignored_path(rel) else rel

    def on_any_event(self, event: FileSystemEvent) -> None:
        src = self._rel(event.src_path)
        if src == "":
            # DIR itself was deleted or moved: the worker re-checks its identity.
            if event.event_type in ("deleted", "moved"):
                self.root_gone.set()
                self.debouncer.wake()
            return
        is_dir = event.is_directory
        if event.event_type == "moved":
            dst = self._rel(event.dest_path)
            if src is not None and dst:
                self.debouncer.moved(src, dst, is_dir)
            elif dst:  # a temp file renamed into place: the usual atomic save
                self.debouncer.touch(dst, subtree=is_dir)
            elif src is not None:  # renamed to a temp or out of DIR
                self.debouncer.touch(src, subtree=is_dir)
            return
        if src is not None:
            self.debouncer.touch(src, subtree=is_dir)


def watch_tree(root: Path, debouncer: Debouncer) -> tuple[BaseObserver, TreeHandler]:
    """Start an observer feeding ``debouncer`` with the changes under ``root``; the
    caller stops and joins it."""
    observer = _new_observer()
    handler = TreeHandler(str(root), debouncer)
    observer.schedule(handler, str(root), recursive=True, event_filter=EVENTS)
    observer.start()
    return observer, handler


def _new_observer() -> BaseObserver:
    if Observer.__module__ == "watchdog.observers.inotify":
        # Where watchdog uses inotify, the same observer without its double registration
        # of new directories (see memfs.sync.inotify).
        from memfs.sync.inotify import RegisterOnceObserver

        return RegisterOnceObserver()
    return Observer()
