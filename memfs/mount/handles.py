"""File handles of files created through the mount, so they outlive an unlink.

In "no open" mode only CREATE hands the kernel a file handle (every other request
carries fh 0). Those handles are what make the classic temp-file pattern work:
create, unlink, keep reading and writing, close. With ``hard_remove`` libfuse passes no
path for such a file after the unlink, so the handle is the only way to find its data;
the data then lives in an orphan buffer until RELEASE, and never reaches the store.

Limits of no-open mode: files opened (not created) and then unlinked have no handle,
so their reads and writes after the unlink fail with ESTALE; and ``fstat`` of any
unlinked file may fail with ESTALE once its cached attributes expire, because the
kernel sends GETATTR without a handle.

RELEASE stops too: once the kernel is in no-open mode (after the first OPEN answered
ENOSYS) it never sends RELEASE, even for created files (fs/fuse/file.c,
fuse_file_put). Nothing says when a handle is closed, so the table keeps only the
:data:`MAX_HANDLES` newest handles and :data:`MAX_ORPHANS` newest orphans; without the
bound every save leaked an entry, and each rename scanned them all (~0.9 ms a rename
after a few thousand saves). A created file still open after that many newer creates,
then unlinked, answers ESTALE like an opened one.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

# Files kept open across this many newer creates are rare (editors hold one or two).
MAX_HANDLES = 1024
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


class Handles:
    """fh -> path for created files; fh -> orphan buffer once the path is unlinked.

    Both tables are bounded (oldest evicted first): see the module docstring.
    """

    def __init__(self) -> None:
        self._paths: dict[int, str] = {}  # insertion order is age order
        self._by_path: dict[str, set[int]] = {}
        self._orphans: dict[int, Orphan] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def new(self, path: str) -> int:
        with self._lock:
            fh = next(self._ids)
            self._paths[fh] = path
            self._by_path.setdefault(path, set()).add(fh)
            while len(self._paths) > MAX_HANDLES:
                self._drop_path(next(iter(self._paths)))
            return fh

    def _drop_path(self, fh: int) -> None:
        path = self._paths.pop(fh, None)
        if path is None:
            return
        fhs = self._by_path.get(path)
        if fhs is not None:
            fhs.discard(fh)
            if not fhs:
                del self._by_path[path]

    def release(self, fh: int) -> None:
        with self._lock:
            self._drop_path(fh)
            self._orphans.pop(fh, None)

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
