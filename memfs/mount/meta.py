"""The daemon's cache of entries and directory listings (no FUSE here).

Lookups after the first cost a dict read instead of a store query. Coherence:

* every change to the tree, ours or another writer's (seen on the change feed), runs
  inside :meth:`MetaCache.changing`, which bumps the generation before and after and
  forgets the touched paths, their parents' listings and, for directories, everything
  cached below them;
* a result read from the store is cached only if the generation did not move while it
  was read, so a lookup racing with a change can never cache the old state.

Other writers' changes are therefore forgotten within the change feed's poll bound,
the same bound the kernel's caches get.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memfs.paths import parent_of
from memfs.store.base import Entry

MAX_ENTRIES = 200_000
MAX_LISTINGS = 8192


@dataclass(slots=True)
class Listing:
    """A directory's names and kinds (st_mode file-type bits), "." and ".." first.

    ``native`` is for the FUSE layer to keep its own encoded form of the same entries.
    """

    names: list[tuple[str, int]]
    native: Any = None


class MetaCache:
    def __init__(self) -> None:
        self.gen = 0
        self._entries: dict[str, Entry] = {}
        self._listings: dict[str, Listing] = {}
        self._lock = threading.Lock()

    # --- reading ------------------------------------------------------------------------
    def entry(self, path: str) -> Entry | None:
        return self._entries.get(path)

    def listing(self, path: str) -> Listing | None:
        return self._listings.get(path)

    def put_entries(self, gen: int, entries: Iterable[Entry]) -> None:
        """Cache entries read from the store while the generation was ``gen``."""
        with self._lock:
            if gen != self.gen:
                return
            if len(self._entries) > MAX_ENTRIES:
                self._entries.clear()
            for entry in entries:
                self._entries[entry.path] = entry

    def put_listing(self, gen: int, path: str, listing: Listing) -> None:
        with self._lock:
            if gen != self.gen:
                return
            if len(self._listings) > MAX_LISTINGS:
                self._listings.clear()
            self._listings[path] = listing

    # --- changing -----------------------------------------------------------------------
    @contextmanager
    def changing(self, paths: Iterable[str], subtrees: Iterable[str] = ()) -> Iterator[None]:
        """Bracket a change of ``paths`` (and of everything below ``subtrees``)."""
        self.bump()
        try:
            yield
        finally:
            self.forget(paths, subtrees)
            self.bump()

    def bump(self) -> None:
        with self._lock:
            self.gen += 1

    def forget(self, paths: Iterable[str], subtrees: Iterable[str] = ()) -> None:
        with self._lock:
            for p in paths:
                for q in (p, parent_of(p)):
                    self._entries.pop(q, None)
                    self._listings.pop(q, None)
            for top in subtrees:
                if top == "":
                    self._entries.clear()
                    self._listings.clear()
                    continue
                below = top + "/"
                for table in (self._entries, self._listings):
                    for key in [k for k in table if k.startswith(below)]:
                        del table[key]
