"""Connections, transactions and the SQL shared by the SQLite store's two halves.

Each thread gets its own connection rather than all sharing one behind a lock. Raw
query throughput is about the same either way under the GIL (scripts/bench_store.py
measures both), but with one shared connection a writer waiting up to ``busy_timeout``
for another process's lock would stall every reader of the FUSE daemon; with one per
thread, WAL lets readers go on. Every mutation runs in one ``BEGIN IMMEDIATE``
transaction, so a writer holds the file's write lock before it reads what it changes.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from memfs.errors import IsADirectory, NotFound, StoreUnavailable
from memfs.store import sqlite_schema as schema
from memfs.store.base import ChangeKind, Entry
from memfs.store.rules import BatchTime
from memfs.store.sqlite_options import SqliteOptions
from memfs.store.sqlite_schema import translate

COLS = "path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, target"
STAT = f"SELECT {COLS} FROM entries WHERE path = ?"
LIST = f"SELECT {COLS} FROM entries WHERE parent = ? ORDER BY path"
READ = (
    "SELECT e.path, e.kind, e.size, e.mode, e.mtime_ns, e.ctime_ns, e.rev, e.uid, e.gid,"
    " e.target, b.codec, b.content FROM entries e LEFT JOIN revisions r ON r.path = e.path"
    " AND r.rev = e.rev AND e.kind = 'file' LEFT JOIN blob_refs br ON br.sha256 = r.sha256"
    " LEFT JOIN blobs b ON b.id = br.blob_id WHERE e.path = ?"
)
LOOKUP = "SELECT id, kind, rev FROM entries WHERE path = ?"

# blobs.codec: how blobs.content holds a revision's bytes.
RAW, ZLIB = 0, 1
_PACK_FROM = 4096
_SAMPLE = 64 << 10


def pack_blob(data: bytes) -> tuple[int, bytes]:
    """``(codec, stored)`` for ``data``: zlib (level 1) where it saves at least an
    eighth. Files written at offsets (holes of zeros, repeated patterns) and text shrink
    many times over, and every commit writes its blob twice (WAL, then checkpoint); a
    sample decides first so incompressible data costs no full compression."""
    if len(data) < _PACK_FROM:
        return RAW, data
    if len(data) > 2 * _SAMPLE:
        sample = data[:_SAMPLE]
        if len(zlib.compress(sample, 1)) > len(sample) * 7 // 8:
            return RAW, data
    packed = zlib.compress(data, 1)
    if len(packed) > len(data) * 7 // 8:
        return RAW, data
    return ZLIB, packed


def unpack_blob(codec: int | None, stored: bytes | None) -> bytes:
    if stored is None:
        return b""
    return zlib.decompress(stored) if codec == ZLIB else bytes(stored)


# Descendants of P are exactly the paths in [P + "/", P + "0"): "0" follows "/" in
# byte order (BINARY collation compares UTF-8 bytes), and this range is searched in the
# unique index on path where LIKE would scan (and take "%" and "_" in names as wildcards).
SUBTREE = "path = :p OR (path >= :p || '/' AND path < :p || '0')"
NEXT_REV = "UPDATE counters SET value = value + 1 WHERE name = 'rev' RETURNING value"
RECORD = (
    "INSERT INTO changes (kind, path, old_path, author, time_ns, rev, size, sha256)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
TOUCH = "UPDATE entries SET mtime_ns = ?, ctime_ns = ? WHERE path = ?"


def parent_of(path: str) -> str:
    return path.rpartition("/")[0]


def need_file(entry: Entry) -> None:
    """Refuse a directory or symlink where file content is needed."""
    if entry.kind == "dir":
        raise IsADirectory(f"'{entry.path}' is a directory", path=entry.path)
    if entry.kind == "symlink":
        raise NotFound(
            f"'{entry.path}' is a symlink; memfs never follows symlinks", path=entry.path
        )


# SQLite's default: the commit that fills the WAL past 1,000 pages copies it back into
# the database file itself, a pause of up to ~100 ms on that one write.
DEFAULT_AUTOCHECKPOINT = 1000


class _Holder:
    """A thread's connection, kept in its thread-local slot.

    CPython drops a thread's locals when the thread ends; the finalizer attached to the
    holder then closes the connection, so worker threads that come and go (the FUSE
    daemon's) do not leak file descriptors.
    """

    __slots__ = ("__weakref__", "autocheckpoint", "db")

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.autocheckpoint = DEFAULT_AUTOCHECKPOINT


def _release(conns: set[sqlite3.Connection], lock: threading.RLock, db: sqlite3.Connection) -> None:
    with lock:
        if db not in conns:
            return  # close() got there first
        conns.discard(db)
    db.close()


class SqliteConnections:
    """Per-thread connections to one store file, prepared (created, migrated) at init."""

    def __init__(self, path: Path, options: SqliteOptions | None = None) -> None:
        self.path = path
        self.options = options or SqliteOptions()
        self._local = threading.local()
        self._batch_time = BatchTime()
        self._conns: set[sqlite3.Connection] = set()
        self._conns_lock = threading.RLock()
        self._closed = False
        # Every time the store records or judges (revision times, history retention)
        # comes from here, so tests can move it instead of waiting days.
        self.clock: Callable[[], int] = time.time_ns
        self._autocheckpoint = DEFAULT_AUTOCHECKPOINT
        db = schema.prepare(
            path, busy_timeout=self.options.busy_timeout, synchronous=self.options.synchronous
        )
        self._adopt(db)

    # --- connections and transactions ----------------------------------------------
    def _db(self) -> sqlite3.Connection:
        holder: _Holder | None = getattr(self._local, "holder", None)
        if holder is None or self._closed:
            return self._connect()
        if holder.autocheckpoint != self._autocheckpoint:
            # Changed by defer_maintenance(); applied by the thread that owns the
            # connection, since a connection must never be used by two threads at once.
            self._set_autocheckpoint(holder)
        return holder.db

    def _set_autocheckpoint(self, holder: _Holder) -> None:
        pages = self._autocheckpoint
        try:
            holder.db.execute(f"PRAGMA wal_autocheckpoint = {pages}")
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        holder.autocheckpoint = pages

    def _connect(self) -> sqlite3.Connection:
        with self._conns_lock:
            if self._closed:
                raise StoreUnavailable(f"the store {self.path} is closed")
            try:
                db = schema.connect(
                    self.path,
                    busy_timeout=self.options.busy_timeout,
                    synchronous=self.options.synchronous,
                )
            except sqlite3.Error as e:
                raise translate(e, self.path) from e
            return self._adopt(db)

    def defer_maintenance(self) -> None:
        # Checkpoints move to maintain(), on the caller's own thread: writes no longer
        # stall while the WAL is copied back. Other processes keep their own setting, so
        # a WAL left by a killed daemon is still checkpointed by whoever writes next.
        self._autocheckpoint = 0

    def maintain(self) -> None:
        try:
            # PASSIVE: copies what no reader still needs, and never waits for anyone.
            self._db().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def _adopt(self, db: sqlite3.Connection) -> sqlite3.Connection:
        """Make ``db`` this thread's connection, closed when the thread or store ends."""
        with self._conns_lock:
            self._conns.add(db)
        holder = _Holder(db)
        weakref.finalize(holder, _release, self._conns, self._conns_lock, db)
        self._local.holder = holder
        return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One mutation: its own ``BEGIN IMMEDIATE`` transaction, or inside a
        :meth:`batch` a savepoint, so a mutation that fails leaves nothing there too."""
        db = self._db()
        depth: int = getattr(self._local, "batch_depth", 0)
        name = f"m{depth}"
        try:
            db.execute(f"SAVEPOINT {name}" if depth else "BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        self._local.batch_depth = depth + 1
        try:
            yield db
            db.execute(f"RELEASE {name}" if depth else "COMMIT")
        except BaseException as e:
            try:
                if depth:
                    db.execute(f"ROLLBACK TO {name}")
                    db.execute(f"RELEASE {name}")
                elif db.in_transaction:
                    db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the connection is gone (closed store); so is the transaction
            if isinstance(e, sqlite3.Error):
                raise translate(e, self.path) from e
            raise
        finally:
            self._local.batch_depth = depth

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self._batch_time.during(self.clock), self._tx():
            yield

    def _now(self) -> int:
        """The time a mutation records: the batch's (see Store.batch), else the clock's."""
        return self._batch_time.now(self.clock)

    def _counter(self, db: sqlite3.Connection, name: str) -> int:
        return int(db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()[0])

    def _next_rev(self, db: sqlite3.Connection) -> int:
        return int(db.execute(NEXT_REV).fetchone()[0])

    def _record(
        self,
        db: sqlite3.Connection,
        kind: ChangeKind,
        path: str,
        author: str,
        now: int,
        *,
        old_path: str | None = None,
        rev: int | None = None,
        size: int | None = None,
        sha256: str | None = None,
    ) -> None:
        # The content's hash stays in the feed when its revision row is pruned, so a
        # restore can still find the bytes wherever another revision keeps them.
        db.execute(RECORD, (kind, path, old_path, author, now, rev, size, sha256))

    def close(self) -> None:
        with self._conns_lock:
            self._closed = True
            conns = list(self._conns)
            self._conns.clear()
        for db in conns:
            db.close()


def subtree_extent(db: sqlite3.Connection, path: str) -> tuple[int, int]:
    """:meth:`memfs.store.base.Store.subtree_extent` as one indexed range scan; the byte
    length is of the UTF-8 encoding (CAST AS BLOB), like the gate's."""
    if path == "":
        where, args = "path != ''", {}
    else:
        where, args = "path > :p || '/' AND path < :p || '0'", {"p": path}
    row = db.execute(
        "SELECT max(length(path) - length(replace(path, '/', ''))),"
        f" max(length(CAST(path AS BLOB))) FROM entries WHERE {where}",
        args,
    ).fetchone()
    if row[0] is None:
        return 0, 0
    # A descendant "a/b/c" of "a" adds the segments and the bytes after "a".
    if path == "":
        return int(row[0]) + 1, int(row[1]) + 1
    return int(row[0]) - path.count("/"), int(row[1]) - len(path.encode("utf-8", "surrogateescape"))
