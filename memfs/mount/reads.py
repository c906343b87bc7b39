"""Which revision of a file each process read: the base its next save of the file is
merged against (:mod:`memfs.store.rebase`).

Editors and agents save by reading a file, thinking, and writing it back whole (a
truncate and a write, or a temporary file renamed over it). By then another mount, host
or door may have changed it; the save must carry the revision its writer *read*, not
the one that is there when it writes, or the other writer's change is silently undone.

The mount records each open that reads (not O_TRUNC) under the opening process, and
each save a process commits (it knows what it wrote). A save's base is then its own
process's record of the path or, for a command line whose reading and writing are done
by different processes (``x=$(cat f); ... > f``), a record of the same process group
made by a process that started after the writer (a child or a later sibling, never an
older process the writer merely shares a group with). No record: the base is unknown,
and the save lands on what is there (last writer wins).

A process's own save that landed merged with another writer's change (or rebased) left
it holding what it wrote, which is no stored revision: its next save is built on that.
The record then keeps that content, its *view*, beside the revision the save was built
on: the next save merges against the view (a merge against the older revision took
the first save's lines for new on both sides and doubled them; against the merged
revision it would undo the other writer's lines). Views are bounded by count and bytes;
one not kept leaves the older revision as the base, as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TypeVar

from memfs.mount.bursts import Writer

V = TypeVar("V")

# Paths remembered per mount (oldest forgotten first): one per process and file read.
MAX_READS = 1 << 16
# Views kept (see the module docstring): how many, and their bytes in all.
MAX_VIEWS = 256
MAX_VIEW_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class Read:
    """What a process's save is built on: revision ``rev``, or, when ``view`` is set,
    those bytes (its own save that landed otherwise, built on ``rev``)."""

    rev: int
    view: bytes | None = None


class ReadRevisions:
    """``(process, path) -> revision`` and ``(process group, path) -> (revision,
    reader's start)``, bounded; thread-safe."""

    def __init__(self, limit: int = MAX_READS) -> None:
        self._limit = limit
        self._by_process: OrderedDict[tuple[int, int, str], int] = OrderedDict()
        self._by_group: OrderedDict[tuple[int, int, str], tuple[int, int]] = OrderedDict()
        self._views: OrderedDict[tuple[int, int, str], tuple[int, bytes]] = OrderedDict()
        self._view_bytes = 0
        self._lock = threading.Lock()

    def read(self, who: Writer, path: str, rev: int) -> None:
        """``who`` opened revision ``rev`` of ``path`` to read it, or saved it."""
        if who.pid <= 0 or rev <= 0:
            return  # the kernel itself, or a file not in the store yet
        with self._lock:
            self._drop_view((who.pid, who.started, path))
            _put(self._by_process, (who.pid, who.started, path), rev, self._limit)
            if who.group > 0:
                group = (who.group, who.group_started, path)
                _put(self._by_group, group, (rev, who.started), self._limit)

    def saw(self, who: Writer, path: str, rev: int, view: bytes | bytearray) -> None:
        """``who``'s save of ``path``, built on revision ``rev``, landed otherwise than
        it wrote it (merged, rebased): ``who`` holds ``view``, and its next save is
        built on that."""
        if who.pid <= 0 or rev <= 0:
            return
        key = (who.pid, who.started, path)
        with self._lock:
            self._drop_view(key)
            _put(self._by_process, key, rev, self._limit)
            if len(view) > MAX_VIEW_BYTES // 4:
                return  # too large to keep: the next save merges against ``rev``
            self._views[key] = (rev, bytes(view))
            self._view_bytes += len(view)
            while len(self._views) > MAX_VIEWS or self._view_bytes > MAX_VIEW_BYTES:
                self._drop_view(next(iter(self._views)))

    def _drop_view(self, key: tuple[int, int, str]) -> None:
        gone = self._views.pop(key, None)
        if gone is not None:
            self._view_bytes -= len(gone[1])

    def read_of(self, who: Writer, path: str) -> Read | None:
        """What ``who``'s save of ``path`` is built on, if known (see :meth:`base`)."""
        rev = self.base(who, path)
        if rev is None:
            return None
        with self._lock:
            seen = self._views.get((who.pid, who.started, path))
        return Read(rev, seen[1] if seen is not None and seen[0] == rev else None)

    def base(self, who: Writer, path: str) -> int | None:
        """The revision of ``path`` that ``who``'s save was built on, if known."""
        with self._lock:
            rev = self._by_process.get((who.pid, who.started, path))
            if rev is not None:
                return rev
            if who.group <= 0:
                return None
            hit = self._by_group.get((who.group, who.group_started, path))
        if hit is None:
            return None
        rev, reader_started = hit
        return rev if reader_started >= who.started else None


def _put(table: OrderedDict[tuple[int, int, str], V], key: tuple[int, int, str], value: V,
         limit: int) -> None:  # fmt: skip
    table[key] = value
    table.move_to_end(key)
    while len(table) > limit:
        table.popitem(last=False)
