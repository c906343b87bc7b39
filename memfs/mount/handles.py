"""File handles: what each open file reads, and the files that outlive an unlink.

Every OPEN and CREATE gets a handle (``fh``), and RELEASE frees it. A handle *pins* the
revision its open saw (:class:`Pin`): reads through it serve that revision whole until
it is closed, as a local disk keeps serving an open file whose name another writer
replaced, whatever other mounts, hosts or doors commit meanwhile; a new open sees the
new content. This mount's own writes to the file are in place and show through every
handle, as on a local disk (a commit here moves the pins of the handles that saw its
base). A handle of a file created here pins 0: it follows the file.

The kernel's page cache is one per file, shared by all its handles, so a handle that
pins another revision than the others on the file is opened with direct I/O (its reads
bypass the cache the others fill), and an open that sees another revision than the
cache may hold asks the kernel to drop it (no keep_cache): see :meth:`Handles.open`.

When a file's name goes away here while it is open (unlinked, or replaced by a rename),
its handles get a private copy of its data, an :class:`Orphan`, and never reach the
store (with ``hard_remove`` libfuse passes no path for such a file after the unlink, so
the handle is the only way to find its data). Orphans are bounded by count and bytes;
a handle whose orphan was dropped answers ESTALE. Handles themselves are bounded too
(:data:`MAX_HANDLES`), against a kernel that never releases.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

# Open files at once, per mount (RELEASE frees them; the bound is against leaks).
MAX_HANDLES = 1 << 16
# Orphans hold their file's data; fewer of them are kept, and not past this many bytes
# (the daemon's memory stays bounded however many big files are unlinked while open).
MAX_ORPHANS = 64
MAX_ORPHAN_BYTES = 128 << 20


@dataclass(slots=True, eq=False)
class Orphan:
    """The data of an unlinked file still open through a created handle: it lives here
    until the handle goes, and never reaches the store (the file no longer exists)."""

    path: str
    data: bytearray
    mode: int
    mtime_ns: int = field(default_factory=time.time_ns)
    uid: int | None = None
    gid: int | None = None

    def write(self, data: bytes, offset: int) -> None:
        if offset > len(self.data):
            self.data.extend(b"\0" * (offset - len(self.data)))
        self.data[offset : offset + len(data)] = data
        self.mtime_ns = time.time_ns()

    def resize(self, size: int) -> None:
        if size < len(self.data):
            del self.data[size:]
        else:
            self.data.extend(b"\0" * (size - len(self.data)))
        self.mtime_ns = time.time_ns()


@dataclass(frozen=True, slots=True)
class Pin:
    """What one open reads: revision ``rev`` of its file (0: it follows the file, one
    created here), and whether it bypasses the page cache (``direct``)."""

    rev: int
    direct: bool = False
    # Its revision's size, when the open knew it (a stored revision read through the
    # page cache): the size the kernel is shown while this handle reads (see shown).
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Opened:
    """The answer to an OPEN: the handle, and the flags the kernel gets with it."""

    fh: int
    direct_io: bool
    keep_cache: bool


class Handles:
    """fh -> path and pin; fh -> orphan buffer once the path is unlinked.

    Both tables are bounded (oldest evicted first): see the module docstring.
    """

    def __init__(self) -> None:
        self._paths: dict[int, str] = {}  # insertion order is age order
        self._pins: dict[int, Pin] = {}
        self._by_path: dict[str, set[int]] = {}
        self._orphans: dict[int, Orphan] = {}
        # The revision whose pages the kernel may cache for a path, as last read through
        # a handle that uses the cache.
        self._cached: dict[str, int] = {}
        # Paths whose size was shown as an open handle's revision's instead of the
        # file's (see shown): the kernel must forget it when the last one closes.
        self._owed: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def new(self, path: str, rev: int = 0) -> int:
        """A handle on ``path`` reading revision ``rev`` (0: the file as it goes)."""
        return self.open(path, rev).fh

    def open(self, path: str, rev: int, *, direct: bool = False, size: int | None = None) -> Opened:
        """A handle on ``path`` pinning revision ``rev``, and how the kernel is to treat
        its pages: another open on the file reading another revision makes this one
        direct (their pages stay theirs), as ``direct`` does (the caller's reason:
        memfs.mount.sizes); pages cached of another revision are dropped."""
        with self._lock:
            fh = next(self._ids)
            # Handles that follow the file (0) read what a new open reads.
            others = {self._pins[o].rev for o in self._by_path.get(path, ())} - {0, rev}
            shared = bool(others) and rev != 0
            direct = (direct or shared) and rev != 0
            # Pages of a revision this table does not know (forgotten, or bytes written
            # here that landed otherwise than written) are dropped, unless other handles
            # read them.
            keep = shared or self._cached.get(path) == rev
            if not direct:
                self._cache_of(path, rev)
            self._paths[fh] = path
            self._pins[fh] = Pin(rev, direct, None if direct else size)
            self._by_path.setdefault(path, set()).add(fh)
            while len(self._paths) > MAX_HANDLES:
                self._drop_path(next(iter(self._paths)))
            return Opened(fh, direct, keep)

    def pin(self, fh: int | None) -> Pin | None:
        """What handle ``fh`` reads; None for no handle (0) or one not known here."""
        if not fh:
            return None
        return self._pins.get(fh)

    def served(self, path: str, pin: Pin | None, rev: int) -> None:
        """A read of ``path`` through ``pin`` served revision ``rev`` (its pages are in
        the kernel's cache unless the handle is direct)."""
        if pin is None or not pin.direct:
            with self._lock:
                self._cache_of(path, rev)

    def _cache_of(self, path: str, rev: int) -> None:
        if len(self._cached) >= MAX_HANDLES and path not in self._cached:
            self._cached.clear()  # forgetting costs one dropped page cache per file
        self._cached[path] = rev

    def repin(self, path: str, old: int, new: int, *, as_written: bool) -> None:
        """This mount committed revision ``new`` of ``path`` over ``old`` in place: the
        handles that read ``old`` read ``new`` now. ``as_written``: ``new`` holds the
        bytes written here (what the kernel's pages hold); else (merged with another
        writer's change, rebased) those pages are not ``new``'s, and the next open
        drops them. Taking them for ``new``'s served an editor its own save again
        after it merged, and its next save, built on that but based on the merge,
        undid the other writer's lines (two savers on two mounts lost thousands)."""
        with self._lock:
            for fh in self._by_path.get(path, ()):
                pin = self._pins[fh]
                if pin.rev == old and old != 0:
                    self._pins[fh] = Pin(new, pin.direct)
            if not as_written:
                self._cached.pop(path, None)
            elif self._cached.get(path) == old:
                self._cached[path] = new

    def follow(self, path: str) -> None:
        """The handles on ``path`` follow the file from now on (it was renamed here)."""
        with self._lock:
            for fh in self._by_path.get(path, ()):
                self._pins[fh] = Pin(0, self._pins[fh].direct)
            self._cached.pop(path, None)

    def _drop_path(self, fh: int) -> None:
        path = self._paths.pop(fh, None)
        self._pins.pop(fh, None)
        if path is None:
            return
        fhs = self._by_path.get(path)
        if fhs is not None:
            fhs.discard(fh)
            if not fhs:
                del self._by_path[path]

    def shown(self, path: str, rev: int) -> int | None:
        """The size to give the kernel for ``path``, whose revision is ``rev`` now, when
        handles reading through the page cache still read another revision: theirs
        (None: the file's own). The kernel's pages of the file are theirs, and a size
        of another revision would cut their reads short or pad them with zeros
        (memfs.mount.sizes); the kernel is told the file's own when they close."""
        with self._lock:
            for fh in self._by_path.get(path, ()):
                pin = self._pins[fh]
                if pin.size is not None and pin.rev not in (0, rev) and not pin.direct:
                    self._owed.add(path)
                    return pin.size
            return None

    def owed(self, path: str) -> bool:
        """Whether ``path``, whose last handle just closed, was shown another size."""
        with self._lock:
            if path in self._by_path or path not in self._owed:
                return False
            self._owed.discard(path)
            return True

    def release(self, fh: int) -> str | None:
        """Free ``fh``; the path it was open on when no other handle is open on it
        now (its last reader closed), else None."""
        with self._lock:
            path = self._paths.get(fh)
            self._drop_path(fh)
            self._orphans.pop(fh, None)
            return None if path is None or path in self._by_path else path

    def open_on(self, path: str) -> list[int]:
        with self._lock:
            return sorted(self._by_path.get(path, ()))

    def orphan(self, fh: int, buf: Orphan) -> None:
        with self._lock:
            self._drop_path(fh)
            self._orphans[fh] = buf
            # Several handles may share one orphan: count each orphan's bytes once.
            while len(self._orphans) > 1 and (
                len(self._orphans) > MAX_ORPHANS
                or sum(len(o.data) for o in {id(o): o for o in self._orphans.values()}.values())
                > MAX_ORPHAN_BYTES
            ):
                del self._orphans[next(iter(self._orphans))]

    def orphaned(self, fh: int | None) -> Orphan | None:
        if not fh:
            return None
        with self._lock:
            return self._orphans.get(fh)

    def moved(self, src: str, dst: str, *, subtree: bool) -> None:
        """``src`` is now ``dst``; ``subtree``: src is a directory, move what is below."""
        with self._lock:
            self._repoint(src, dst)
            if subtree:
                below = src + "/"
                for p in [p for p in self._by_path if p.startswith(below)]:
                    self._repoint(p, dst + p[len(src) :])

    def _repoint(self, old: str, new: str) -> None:
        fhs = self._by_path.pop(old, None)
        if not fhs:
            return
        for fh in fhs:
            self._paths[fh] = new
        self._by_path.setdefault(new, set()).update(fhs)

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths) + len(self._orphans)
