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

A directory's names, once read whole (a listing, or on a lookup of a name it lacks),
answer "no such entry" for any other name without a query: the temporary names of
atomic saves and the paths a tool checks before it creates them. A change only ever
adds the names it touches to their directory's set (a name there that is gone costs a
query; a name missing from it would hide a file), and a directory that is itself
changed, moved or removed is forgotten whole.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memfs.paths import parent_of
from memfs.store.base import Entry

MAX_ENTRIES = 200_000
MAX_LISTINGS = 8192
MAX_NAMES = 4096  # a directory with more is not kept whole


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
        self._names: dict[str, set[str]] = {}  # directory -> every name in it, or more
        self._big: dict[str, None] = {}  # directories with more than MAX_NAMES names
        self._lock = threading.Lock()

    # --- reading ------------------------------------------------------------------------
    def entry(self, path: str) -> Entry | None:
        return self._entries.get(path)

    def listing(self, path: str) -> Listing | None:
        return self._listings.get(path)

    def absent(self, path: str) -> bool:
        """True if ``path``'s directory is known whole and has no such name."""
        if not path:
            return False
        parent, _, name = path.rpartition("/")
        names = self._names.get(parent)
        return names is not None and name not in names

    def knows_names(self, directory: str) -> bool:
        """Whether ``directory``'s names were read whole, or found too many to keep
        (then it is not read whole again for each name it lacks)."""
        return directory in self._names or directory in self._big

    def names_of(self, directories: Iterable[str]) -> dict[str, set[str]]:
        """A copy of the names known whole of each of ``directories`` that has them."""
        with self._lock:
            return {d: set(self._names[d]) for d in directories if d in self._names}

    def put_names(self, gen: int, directory: str, names: Iterable[str]) -> None:
        """Every name in ``directory``, read while the generation was ``gen``."""
        known = set(names)
        if len(known) > MAX_NAMES:
            self._put(gen, self._big, directory, None)
        else:
            self._put(gen, self._names, directory, known)

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
        self._put(gen, self._listings, path, listing)

    def _put(self, gen: int, table: dict[str, Any], directory: str, value: Any) -> None:
        """Keep what was read of ``directory`` while the generation was ``gen``."""
        with self._lock:
            if gen != self.gen:
                return
            if len(table) > MAX_LISTINGS:
                table.clear()
            table[directory] = value

    # --- changing -----------------------------------------------------------------------
    @contextmanager
    def changing(
        self,
        paths: Iterable[str],
        subtrees: Iterable[str] = (),
        touched: Callable[[], Mapping[str, int]] = dict,
        settled: Callable[[], Mapping[str, Entry]] = dict,
        names: Mapping[str, set[str]] | None = None,
    ) -> Iterator[None]:
        """Bracket a change of ``paths`` (and of everything below ``subtrees``).

        The directories holding ``paths`` keep their cached entries (the kernel asks
        for them again after every create): unchanged, or with the times the store
        gave them, which ``touched`` says once the change is made (Store.touched). The
        entries the change left, where the store knows them whole (``settled``:
        Store.settled), are cached as they are: the kernel looks a saved file up next.
        ``names``: directories whose names are known once the change is made (one it
        made has none, so the first file made in it needs no query to say it is not
        there yet; an attribute change leaves them as they were: names_of).
        """
        paths, subtrees = list(paths), list(subtrees)
        cached = {parent_of(p): self._entries.get(parent_of(p)) for p in paths if p}
        parents = {d: e for d, e in cached.items() if e is not None}
        self.bump()
        start = self.gen
        done = False
        try:
            yield
            done = True
        finally:
            self.forget(paths, subtrees)
            self.bump()
            if done:
                self._put_back(
                    start + 1, parents, touched(), settled(), paths, subtrees, names or {}
                )

    def _put_back(
        self,
        gen: int,
        parents: dict[str, Entry],
        touched: Mapping[str, int],
        settled: Mapping[str, Entry],
        paths: list[str],
        subtrees: list[str],
        names: Mapping[str, set[str]],
    ) -> None:
        if not parents and not settled and not names:
            return
        with self._lock:
            if self.gen != gen:
                return  # another change came between: what it did is not known here
            for path, entry in parents.items():
                if path in paths or any(path == t or path.startswith(t + "/") for t in subtrees):
                    continue  # changed itself
                now = touched.get(path)
                if now is not None:
                    entry = dataclasses.replace(entry, mtime_ns=now, ctime_ns=now)
                self._entries[path] = entry
            if len(self._entries) > MAX_ENTRIES:
                self._entries.clear()
            self._entries.update(settled)
            if len(self._names) > MAX_LISTINGS:
                self._names.clear()
            self._names.update(names)

    def bump(self) -> None:
        with self._lock:
            self.gen += 1

    def forget(self, paths: Iterable[str], subtrees: Iterable[str] = ()) -> None:
        with self._lock:
            for p in paths:
                for q in (p, parent_of(p)):
                    self._entries.pop(q, None)
                    self._listings.pop(q, None)
                self._name_touched(p)
            for top in subtrees:
                if top == "":
                    self._entries.clear()
                    self._listings.clear()
                    self._names.clear()
                    self._big.clear()
                    continue
                self._name_touched(top)
                self._big.pop(top, None)
                below = top + "/"
                for table in (self._entries, self._listings, self._names, self._big):
                    for key in [k for k in table if k.startswith(below)]:
                        del table[key]

    def _name_touched(self, path: str) -> None:
        """``path`` may exist now: its directory's set keeps its name, and a set of its
        own (it was a directory) goes."""
        self._names.pop(path, None)
        if path:
            parent, _, name = path.rpartition("/")
            names = self._names.get(parent)
            if names is not None:
                names.add(name)
