"""Which revision's size the kernel holds for each file, as far as this mount knows.

The kernel serves a read through its page cache up to the size its attributes give
the file, and when the daemon's answer for a page is shorter than that, it fills the
rest with zeros. So a handle that reads one revision of a file while the kernel holds
another one's size reads wrong bytes: cut short (a longer revision through a shorter
size) or padded with zeros (a shorter revision through a longer size). Two programs
on two mounts saving one file through a temporary file and a rename met both: each
opened the revision there at the open (the handle pins it: memfs.mount.handles) while
the kernel's size was already the other's next revision's, or still the one before;
one saved the zeros, and the binary save then replaced the other's lines
(``scripts/bench_many_writers.py --rename-savers``).

The mount notes the revision of each size it gives the kernel (a getattr's reply; a
commit of exactly what the kernel wrote) and forgets it whenever the kernel's size may
have moved otherwise (an invalidation, a change made here). An open to read a revision
whose size the kernel is not known to hold bypasses the page cache (direct I/O: no cap
at the kernel's size, no zeros), so the reader gets that revision, all of it.
"""

from __future__ import annotations

from collections.abc import Iterable

# Paths remembered (all forgotten at once past this: unknown only costs direct reads).
MAX_PATHS = 1 << 16


class KernelSizes:
    """path -> the revision whose size the kernel was last given, when known.

    Lock-free: each step is one dict operation (atomic under the GIL), and a wrong
    "unknown" only makes an open direct."""

    def __init__(self, limit: int = MAX_PATHS) -> None:
        self._limit = limit
        self._revs: dict[str, int] = {}

    def told(self, path: str, rev: int) -> None:
        """The kernel was given revision ``rev``'s size for ``path``."""
        if len(self._revs) >= self._limit and path not in self._revs:
            self._revs.clear()
        self._revs[path] = rev

    def forget(self, paths: Iterable[str]) -> None:
        """What the kernel holds for ``paths`` may have moved (invalidated, changed)."""
        for path in paths:
            self._revs.pop(path, None)

    def forget_under(self, directories: Iterable[str]) -> None:
        """As :meth:`forget`, for everything below ``directories`` (moved, removed)."""
        dirs = list(directories)
        tops = tuple(d + "/" for d in dirs if d)
        if "" in dirs:
            self._revs.clear()
        elif tops:
            for path in [p for p in list(self._revs) if p.startswith(tops)]:
                self._revs.pop(path, None)

    def holds(self, path: str, rev: int) -> bool:
        """Whether the kernel is known to hold revision ``rev``'s size for ``path``."""
        return rev > 0 and self._revs.get(path) == rev
