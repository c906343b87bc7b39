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
"""

from __future__ import annotations

import itertools
import threading

from memfs.mount.buffers import Buffer


class Handles:
    """fh -> path for created files; fh -> orphan buffer once the path is unlinked."""

    def __init__(self) -> None:
        self._paths: dict[int, str] = {}
        self._orphans: dict[int, Buffer] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def new(self, path: str) -> int:
        with self._lock:
            fh = next(self._ids)
            self._paths[fh] = path
            return fh

    def release(self, fh: int) -> None:
        with self._lock:
            self._paths.pop(fh, None)
            self._orphans.pop(fh, None)

    def open_on(self, path: str) -> list[int]:
        with self._lock:
            return [fh for fh, p in self._paths.items() if p == path]

    def orphan(self, fh: int, buf: Buffer) -> None:
        with self._lock:
            self._paths.pop(fh, None)
            self._orphans[fh] = buf

    def orphaned(self, fh: int | None) -> Buffer | None:
        if not fh:
            return None
        with self._lock:
            return self._orphans.get(fh)

    def moved(self, src: str, dst: str) -> None:
        below = src + "/"
        with self._lock:
            for fh, p in self._paths.items():
                if p == src:
                    self._paths[fh] = dst
                elif p.startswith(below):
                    self._paths[fh] = dst + p[len(src) :]

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths) + len(self._orphans)
