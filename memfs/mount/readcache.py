"""The last few files read through the mount, so a large file is not fetched from the
store once per 128 KiB read request. Content only; entries live in :mod:`meta`."""

from __future__ import annotations

import threading
from collections import OrderedDict


class ReadCache:
    """The last few files read, so a large file is not fetched once per 128 KiB request."""

    def __init__(self, max_files: int = 64, max_bytes: int = 64 << 20) -> None:
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._max_files = max_files
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def get(self, path: str) -> bytes | None:
        with self._lock:
            data = self._items.get(path)
            if data is not None:
                self._items.move_to_end(path)
            return data

    def put(self, path: str, data: bytes) -> None:
        if len(data) > self._max_bytes // 4:
            return
        with self._lock:
            old = self._items.pop(path, None)
            if old is not None:
                self._bytes -= len(old)
            self._items[path] = data
            self._bytes += len(data)
            while len(self._items) > self._max_files or self._bytes > self._max_bytes:
                _, gone = self._items.popitem(last=False)
                self._bytes -= len(gone)

    def forget(self, path: str) -> None:
        with self._lock:
            old = self._items.pop(path, None)
            if old is not None:
                self._bytes -= len(old)

    def forget_under(self, prefix: str) -> None:
        below = prefix + "/" if prefix else ""
        with self._lock:
            for path in [p for p in self._items if p == prefix or p.startswith(below)]:
                self._bytes -= len(self._items.pop(path))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
