"""Write buffers and a small read cache for the mount: the library part, no FUSE here.

The kernel runs in "no open" mode (see :mod:`memfs.mount.fuse`): requests carry no file
handle and no close is reported, so writes are buffered per *path*. A buffer holds the
whole new content of one file and is committed to the store as ONE revision (the store
write is atomic, so a crash never leaves a torn file). It is committed on fsync, before
any operation that must see it (rename, unlink of a directory, attribute changes), on
unmount, and by :class:`QuietCommitter` once no write has touched it for
``quiet_period`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from memfs.errors import AlreadyExists, Conflict, NotFound, StoreError
from memfs.store.base import DEFAULT_FILE_MODE, Entry, Store

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Buffer:
    """The pending content of one file. ``base_rev == 0``: the file is not in the store yet."""

    path: str
    data: bytearray
    author: str
    base_rev: int
    mode: int = DEFAULT_FILE_MODE
    dirty: bool = False
    last_write: float = field(default_factory=time.monotonic)
    mtime_ns: int = field(default_factory=time.time_ns)
    # The errno of a commit the store refused (e.g. over the size cap): the data stays
    # here, readable, and fsync keeps reporting the error instead of losing it silently.
    failed: StoreError | None = None

    def touch(self, author: str) -> None:
        # New content deserves a new attempt (the quiet committer skips failed ones).
        self.failed = None
        self.dirty = True
        self.author = author
        self.last_write = time.monotonic()
        self.mtime_ns = time.time_ns()

    def write(self, data: bytes, offset: int, author: str) -> None:
        end = offset + len(data)
        if offset > len(self.data):
            self.data.extend(b"\0" * (offset - len(self.data)))
        self.data[offset:end] = data
        self.touch(author)

    def resize(self, size: int, author: str) -> None:
        if size < len(self.data):
            del self.data[size:]
        else:
            self.data.extend(b"\0" * (size - len(self.data)))
        self.touch(author)


# (author, mutation, path): runs a store mutation of ``path`` on the mount's behalf.
CommitHook = Callable[[str, Callable[[], Entry], str], Entry]


class BufferTable:
    """Buffers keyed by store path. Callers hold ``lock`` around every method except
    :meth:`get` (a plain dict lookup) and :meth:`commit_quiet` (locks per buffer)."""

    def __init__(self, store: Store, lock: threading.RLock, run_mutation: CommitHook) -> None:
        self.store = store
        self.lock = lock
        # Every store mutation goes through this hook so the mount can tell its own
        # changes from other writers' on the change feed.
        self._run = run_mutation
        self._bufs: dict[str, Buffer] = {}

    def get(self, path: str) -> Buffer | None:
        return self._bufs.get(path)

    def __len__(self) -> int:
        return len(self._bufs)

    def pending_children(self, parent: str) -> Iterator[Buffer]:
        """Buffers of files created here but not committed yet (they belong in listings)."""
        prefix = parent + "/" if parent else ""
        for buf in self._bufs.values():
            if (
                buf.base_rev == 0
                and buf.path.startswith(prefix)
                and "/" not in buf.path[len(prefix) :]
            ):
                yield buf

    def create(self, path: str, mode: int, author: str) -> Buffer:
        buf = Buffer(path, bytearray(), author, base_rev=0, mode=mode)
        buf.touch(author)
        self._bufs[path] = buf
        return buf

    def open(self, path: str, author: str) -> Buffer:
        """The buffer for ``path``, loading the current content on first use."""
        buf = self._bufs.get(path)
        if buf is None:
            data, entry = self.store.read(path)
            buf = Buffer(path, bytearray(data), author, base_rev=entry.rev, mode=entry.mode)
            self._bufs[path] = buf
        return buf

    def open_empty(self, path: str, author: str) -> Buffer:
        """A buffer that replaces the content entirely (truncate to 0): nothing to load."""
        buf = self._bufs.get(path)
        if buf is None:
            entry = self.store.stat(path)
            if not entry.is_file:
                # Let the store raise the precise error (IsADirectory and so on).
                self.store.read(path)
            buf = Buffer(path, bytearray(), author, base_rev=entry.rev, mode=entry.mode)
            self._bufs[path] = buf
        return buf

    def drop(self, path: str) -> Buffer | None:
        return self._bufs.pop(path, None)

    def commit(self, path: str) -> None:
        """Commit the buffer of ``path`` as one revision; raise the store's error if refused."""
        buf = self._bufs.get(path)
        if buf is None:
            return
        if not buf.dirty:
            del self._bufs[path]
            return
        data = bytes(buf.data)
        try:
            self._write(buf, data)
        except StoreError as e:
            buf.failed = e
            raise
        buf.failed = None
        # Later writes may have replaced the object while the store call ran (the lock is
        # re-entrant, but be strict anyway): only drop the buffer that was committed.
        if self._bufs.get(path) is buf and bytes(buf.data) == data:
            del self._bufs[path]

    def _write(self, buf: Buffer, data: bytes) -> None:
        expected = buf.base_rev
        mode = buf.mode if expected == 0 else None

        def attempt(expected_rev: int | None) -> Entry:
            return self.store.write(
                buf.path,
                data,
                author=buf.author,
                expected_rev=expected_rev,
                mode=mode,
                parents=expected_rev is None,
            )

        try:
            entry = self._run(buf.author, lambda: attempt(expected), buf.path)
        except (Conflict, AlreadyExists, NotFound) as e:
            # Another writer changed (or removed) the file since this buffer was loaded.
            # A file system's last writer wins; the other version stays in the history.
            log.warning(
                "memfs: %s changed elsewhere while %s was writing it (%s); keeping the "
                "newer write, the other version stays in the history",
                buf.path,
                buf.author,
                type(e).__name__,
            )
            entry = self._run(buf.author, lambda: attempt(None), buf.path)
        buf.base_rev = entry.rev

    def commit_under(self, prefix: str) -> None:
        """Commit ``prefix`` itself and every buffer below it (before a directory op)."""
        below = prefix + "/" if prefix else ""
        for path in [p for p in self._bufs if p == prefix or p.startswith(below)]:
            self.commit(path)

    def commit_quiet(self, quiet_period: float) -> None:
        """Commit the buffers that are due, taking the lock once per buffer so that
        lookups and writes to other files are not held up by a long batch."""
        with self.lock:
            due = list(self._bufs)
        for path in due:
            with self.lock:
                buf = self._bufs.get(path)
                if buf is None or buf.failed is not None:
                    continue
                if time.monotonic() - buf.last_write < quiet_period:
                    continue
                try:
                    self.commit(path)
                except StoreError as e:
                    log.error("memfs: could not commit %s: %s (the data stays buffered)", path, e)

    def commit_all(self) -> None:
        for path in list(self._bufs):
            try:
                self.commit(path)
            except StoreError as e:
                log.error("memfs: could not commit %s at unmount: %s (data lost)", path, e)

    def next_due(self, quiet_period: float) -> float | None:
        """Seconds until the oldest dirty buffer is due, or None when nothing is."""
        due = [b.last_write + quiet_period for b in self._bufs.values() if b.failed is None]
        if not due:
            return None
        return max(0.0, min(due) - time.monotonic())


class QuietCommitter(threading.Thread):
    """Commits buffers that nobody has written for ``quiet_period`` seconds.

    The bound a reader of the store can rely on: a write through the mount is in the
    store at most ``quiet_period`` plus one commit after the last write to that file
    (immediately after fsync).
    """

    def __init__(self, table: BufferTable, quiet_period: float) -> None:
        super().__init__(name="memfs-committer", daemon=True)
        self.table = table
        self.quiet_period = quiet_period
        self._wake = threading.Event()
        self._halt = threading.Event()

    def poke(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._halt.set()
        self._wake.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=10)

    def run(self) -> None:
        while not self._halt.is_set():
            self.table.commit_quiet(self.quiet_period)
            with self.table.lock:
                wait = self.table.next_due(self.quiet_period)
            # Sleep until the next buffer is due, or until a write creates the first one.
            self._wake.wait(timeout=wait if wait is not None else None)
            self._wake.clear()


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
