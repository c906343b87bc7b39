"""Content of files read or saved through the mount, by path and revision, so a large
file is not fetched from the store once per 128 KiB read request, and a file this
mount just saved or renamed is not fetched at all. Content only; entries live in
:mod:`meta`.

Kept with the revision it is the content of: revisions are numbered once per tree and
never change, so content is served only for the revision the entry shows now, and
a copy left from before a change can never be served as its result.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class ReadCache:
    """The last few files read or saved, each with its revision."""

    def __init__(self, max_files: int = 4096, max_bytes: int = 64 << 20) -> None:
        self._items: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._bytes = 0
        self._max_files = max_files
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def get(self, path: str, rev: int) -> bytes | None:
        """``path``'s content at revision ``rev``, if kept."""
        with self._lock:
            item = self._items.get(path)
            if item is None or item[0] != rev:
                return None
            self._items.move_to_end(path)
            return item[1]

    def put(self, path: str, rev: int, data: bytes) -> None:
        if len(data) > self._max_bytes // 4:
            return
        with self._lock:
            self._pop(path)
            self._items[path] = (rev, data)
            self._bytes += len(data)
            while len(self._items) > self._max_files or self._bytes > self._max_bytes:
                _, (_, gone) = self._items.popitem(last=False)
                self._bytes -= len(gone)

    # An older revision that an open file still reads (memfs.mount.handles) is kept under
    # a key no path can have (the gate refuses NUL): a change to the file leaves it be.
    def get_revision(self, path: str, rev: int) -> bytes | None:
        return self.get(f"{path}\0{rev}", rev)

    def put_revision(self, path: str, rev: int, data: bytes) -> None:
        self.put(f"{path}\0{rev}", rev, data)

    def _pop(self, path: str) -> None:
        old = self._items.pop(path, None)
        if old is not None:
            self._bytes -= len(old[1])

    def forget(self, path: str) -> None:
        with self._lock:
            self._pop(path)

    def forget_under(self, prefix: str) -> None:
        below = prefix + "/" if prefix else ""
        with self._lock:
            for path in [p for p in self._items if p == prefix or p.startswith(below)]:
                self._pop(path)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
