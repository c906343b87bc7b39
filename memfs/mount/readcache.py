"""Content of files read or saved through the mount, by path and revision, so a large
file is not fetched from the store once per 128 KiB read request, and a file this
mount just saved or renamed is not fetched at all. Content only; entries live in
:mod:`meta`.

Kept with the revision it is the content of: revisions are numbered once per tree and
never change, so content is served only for the revision the entry shows now, and
a copy left from before a change can never be served as its result.

A file larger than a quarter of the cache (:meth:`ReadCache.keeps`) is not kept whole:
it is read by range through a reader of its revision (:mod:`memfs.store.ranges`), kept
here while the file is open, which checks the file's bytes once when it is opened and
then fetches only what each request asks for. So the daemon's memory for reads stays
bounded (the cache's bytes, plus about a chunk per open large file) whatever the size
of the files read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from memfs.store.ranges import RevisionReader

# Range readers kept at once (each holds at most a request and a chunk, or, from a
# store that can only read whole revisions, its content: see MAX_READER_BYTES).
MAX_READERS = 64
MAX_READER_BYTES = 256 << 20


class ReadCache:
    """The last few files read or saved, each with its revision."""

    def __init__(self, max_files: int = 4096, max_bytes: int = 64 << 20) -> None:
        self._items: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._bytes = 0
        self._max_files = max_files
        self._max_bytes = max_bytes
        self._readers: OrderedDict[tuple[str, int], RevisionReader] = OrderedDict()
        self._gates: dict[tuple[str, int], threading.Lock] = {}
        self._lock = threading.Lock()

    def keeps(self, size: int) -> bool:
        """Whether a file of ``size`` bytes is kept whole (else read by range)."""
        return size <= self._max_bytes // 4

    def reader(self, path: str, rev: int) -> RevisionReader | None:
        """The range reader of ``path`` at revision ``rev``, if one is open here."""
        with self._lock:
            found = self._readers.get((path, rev))
            if found is not None:
                self._readers.move_to_end((path, rev))
            return found

    def open_reader(
        self, path: str, rev: int, opener: Callable[[], RevisionReader]
    ) -> RevisionReader:
        """The range reader of ``path`` at ``rev``, opened by ``opener`` if none is
        kept. One thread opens it (the kernel's readahead sends several reads of a file
        at once, and each open checks the whole file); the others wait for it."""
        found = self.reader(path, rev)
        if found is not None:
            return found
        with self._lock:
            gate = self._gates.setdefault((path, rev), threading.Lock())
        try:
            with gate:
                found = self.reader(path, rev)
                if found is None:
                    found = self.keep_reader(path, opener())
                return found
        finally:
            with self._lock:
                self._gates.pop((path, rev), None)

    def keep_reader(self, path: str, reader: RevisionReader) -> RevisionReader:
        """Keep ``reader`` for ``path``; the one kept already if another thread opened
        the same revision meanwhile."""
        dropped: list[RevisionReader] = []
        with self._lock:
            key = (path, reader.rev)
            kept = self._readers.setdefault(key, reader)
            if kept is not reader:
                dropped.append(reader)
            self._readers.move_to_end(key)
            while len(self._readers) > 1 and (
                len(self._readers) > MAX_READERS
                or sum(r.held for r in self._readers.values()) > MAX_READER_BYTES
            ):
                dropped.append(self._readers.popitem(last=False)[1])
        _close(dropped)
        return kept

    def close_readers(self, path: str) -> None:
        """The last handle on ``path`` closed: its next open checks its bytes again."""
        with self._lock:
            dropped = [self._readers.pop(k) for k in [k for k in self._readers if k[0] == path]]
        _close(dropped)

    def get(self, path: str, rev: int) -> bytes | None:
        """``path``'s content at revision ``rev``, if kept."""
        with self._lock:
            item = self._items.get(path)
            if item is None or item[0] != rev:
                return None
            self._items.move_to_end(path)
            return item[1]

    def put(self, path: str, rev: int, data: bytes | bytearray) -> None:
        if len(data) > self._max_bytes // 4:
            return
        data = bytes(data)  # a commit's bytes may be a buffer's (memfs.mount.buffer)
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
        # Readers go too: one that read a revision whole would serve it after a
        # redaction of it.
        with self._lock:
            self._items.clear()
            self._bytes = 0
            dropped = list(self._readers.values())
            self._readers.clear()
        _close(dropped)


def _close(readers: list[RevisionReader]) -> None:
    """Close readers no longer kept (a read still going on through one fails as the
    file's would; the kernel asks again and the next read opens a new one)."""
    for reader in readers:
        reader.close()
