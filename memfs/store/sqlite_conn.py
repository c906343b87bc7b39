"""The SQLite store's connections and transactions, and its cursor for the engine.

Each thread gets its own connection rather than all sharing one behind a lock. Raw
query throughput is about the same either way under the GIL (scripts/bench_store.py
measures both), but with one shared connection a writer waiting up to ``busy_timeout``
for another process's lock would stall every reader of the FUSE daemon; with one per
thread, WAL lets readers go on. Every transaction is ``BEGIN IMMEDIATE``, so a writer
holds the file's write lock before it reads what it changes.

A store opened read-only connects with ``mode=ro`` (or as ``immutable``, see
:func:`memfs.store.sqlite_schema.open_readonly`) and never writes.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from memfs.errors import StoreError, StoreUnavailable
from memfs.store import sqlite_schema as schema
from memfs.store.sql import Params, Pending, Row
from memfs.store.sqlite_files import Connection, count_open
from memfs.store.sqlite_options import SqliteOptions
from memfs.store.sqlite_schema import translate
from memfs.store.sqlite_wake import WalWake

# SQLite's default: the commit that fills the WAL past 1,000 pages copies it back into
# the database file itself, a pause of up to ~100 ms on that one write.
DEFAULT_AUTOCHECKPOINT = 1000
_NO_PARAMS: Params = {}
# How long a wait for changes sleeps where no inotify tells of commits (the pace of a
# follower of a polling store: its poll_interval's default).
POLL_WITHOUT_WAKE = 0.1
# The pace of the tries for another process's write lock (see SqliteConnections._begin).
BUSY_FIRST_PAUSE = 50e-6
BUSY_MAX_PAUSE = 2e-3
# Looks again after a write to the -wal file woke a wait and its commit did not show yet
# (seconds, ~64 ms in all: a commit shows microseconds after its write unless the
# committing process is held off the CPU in between).
SETTLE_PAUSES = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032)


class Rows:
    """Rows already read (SQLite runs a statement when it is asked)."""

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    def one(self) -> Row | None:
        return self._rows[0] if self._rows else None

    def all(self) -> list[Row]:
        return self._rows


class SqliteCursor:
    """:class:`memfs.store.sql.Cursor` on one connection; errors become memfs's."""

    __slots__ = ("db", "path")

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    def ask(self, sql: str, params: Params = _NO_PARAMS) -> Pending:
        return Rows(self.all(sql, params))

    def expect(self, sql: str, params: Params, guess: Row | None) -> Pending:
        return self.ask(sql, params)  # a read costs no round trip here

    def one(self, sql: str, params: Params = _NO_PARAMS) -> Row | None:
        try:
            row: Row | None = self.db.execute(sql, params).fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return row

    def all(self, sql: str, params: Params = _NO_PARAMS) -> list[Row]:
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def run(self, sql: str, params: Params = _NO_PARAMS) -> None:
        try:
            self.db.execute(sql, params)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def many(self, sql: str, rows: Sequence[Params]) -> None:
        try:
            self.db.executemany(sql, rows)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def sync(self) -> None:
        return None  # every statement has run when its call returns


class _Holder:
    """A thread's connection, kept in its thread-local slot.

    CPython drops a thread's locals when the thread ends; the finalizer attached to the
    holder then closes the connection, so worker threads that come and go (the FUSE
    daemon's) do not leak file descriptors.
    """

    __slots__ = ("__weakref__", "autocheckpoint", "cursor", "db")

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.cursor = SqliteCursor(db, path)
        self.autocheckpoint = DEFAULT_AUTOCHECKPOINT


def _release(conns: set[sqlite3.Connection], lock: threading.RLock, db: sqlite3.Connection) -> None:
    with lock:
        if db not in conns:
            return  # close() got there first
        conns.discard(db)
    db.close()


class SqliteConnections:
    """Per-thread connections to one store file, prepared (created, migrated, or for a
    read-only store only checked) when the store opens."""

    def __init__(self, path: Path, options: SqliteOptions) -> None:
        self.path = path
        self.options = options
        self._local = threading.local()
        self._conns: set[sqlite3.Connection] = set()
        self._conns_lock = threading.RLock()
        self._closed = False
        self._autocheckpoint = DEFAULT_AUTOCHECKPOINT
        self._connect_to: Callable[[], sqlite3.Connection]
        # Whether this read-only open is the one that makes the -wal and -shm files
        # SQLite needs beside the store (then close() takes them away again).
        self._tidy = False
        self._wake: WalWake | None = None
        self._wake_tried = False
        self._told = 0
        if options.limits.readonly:
            self._tidy = not any(Path(f"{path}{end}").exists() for end in _SIDE_FILES)
            db, uri = schema.open_readonly(path, busy_timeout=options.busy_timeout)
            self._tidy = self._tidy and "immutable=1" not in uri
            self._connect_to = lambda: schema.connect_uri(uri, path, options.busy_timeout)
        else:
            db = schema.prepare(
                path, busy_timeout=options.busy_timeout, synchronous=options.synchronous
            )
            self._connect_to = lambda: schema.connect(
                path, busy_timeout=options.busy_timeout, synchronous=options.synchronous
            )
        self._adopt(db)

    # --- connections --------------------------------------------------------------------
    def _holder(self) -> _Holder:
        holder: _Holder | None = getattr(self._local, "holder", None)
        if holder is None or self._closed:
            return self._connect()
        if holder.autocheckpoint != self._autocheckpoint:
            # Changed by defer_maintenance(); applied by the thread that owns the
            # connection, since a connection must never be used by two threads at once.
            holder.cursor.run(f"PRAGMA wal_autocheckpoint = {self._autocheckpoint}")
            holder.autocheckpoint = self._autocheckpoint
        return holder

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection."""
        return self._holder().db

    def _connect(self) -> _Holder:
        with self._conns_lock:
            if self._closed:
                raise StoreUnavailable(f"the store {self.path} is closed")
            try:
                db = self._connect_to()
            except sqlite3.Error as e:
                raise translate(e, self.path) from e
            return self._adopt(db)

    def _adopt(self, db: sqlite3.Connection) -> _Holder:
        """Make ``db`` this thread's connection, closed when the thread or store ends."""
        with self._conns_lock:
            self._conns.add(db)
        holder = _Holder(db, self.path)
        weakref.finalize(holder, _release, self._conns, self._conns_lock, db)
        self._local.holder = holder
        return holder

    def own_connection(self) -> sqlite3.Connection:
        """A connection of no thread's own (a range reader's), closed by
        :meth:`close_own` or when the store closes."""
        with self._conns_lock:
            if self._closed:
                raise StoreUnavailable(f"the store {self.path} is closed")
            try:
                db = self._connect_to()
            except sqlite3.Error as e:
                raise translate(e, self.path) from e
            self._conns.add(db)
            return db

    def close_own(self, db: sqlite3.Connection) -> None:
        _release(self._conns, self._conns_lock, db)

    # --- transactions (memfs.store.sql.Backend) -----------------------------------------
    def one(self, sql: str, params: Params = _NO_PARAMS) -> Row | None:
        return self._holder().cursor.one(sql, params)

    def all(self, sql: str, params: Params = _NO_PARAMS) -> list[Row]:
        return self._holder().cursor.all(sql, params)

    @contextmanager
    def reading(self, snapshot: bool = False) -> Iterator[SqliteCursor]:
        holder = self._holder()
        if not snapshot or holder.db.in_transaction:
            yield holder.cursor
            return
        holder.cursor.run("BEGIN")
        try:
            yield holder.cursor
        finally:
            with contextlib.suppress(StoreError):
                holder.cursor.run("COMMIT")

    @contextmanager
    def writing(self) -> Iterator[SqliteCursor]:
        holder = self._holder()
        db = holder.db
        self._begin(db)
        try:
            yield holder.cursor
            holder.cursor.run("COMMIT")
        except BaseException:
            try:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the connection is gone (closed store); so is the transaction
            raise

    def _begin(self, db: sqlite3.Connection) -> None:
        """``BEGIN IMMEDIATE``, waiting up to ``busy_timeout`` for another process's
        write lock at a finer pace than SQLite's own: its busy handler sleeps 1, 2, 5,
        10, 15, 20, 25 ms between tries, so a lock held for a millisecond by another
        mount's commit cost several here. Two mounts committing one file in turn (four
        appenders on two mounts) ran at 0.09x of one appender, with BEGIN the daemons'
        busiest line (py-spy); here the tries come 50 us apart, doubling up to 2 ms."""
        try:
            db.execute("PRAGMA busy_timeout = 0")
            try:
                db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                if not _busy(e):
                    raise
            deadline = time.monotonic() + self.options.busy_timeout
            pause = BUSY_FIRST_PAUSE
            while True:
                time.sleep(pause)
                try:
                    db.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as e:
                    if not _busy(e) or time.monotonic() >= deadline:
                        raise
                pause = min(pause * 2, BUSY_MAX_PAUSE)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        finally:
            # The other statements (a checkpoint waiting for readers) keep SQLite's wait.
            with contextlib.suppress(sqlite3.Error):
                db.execute(f"PRAGMA busy_timeout = {int(self.options.busy_timeout * 1000)}")

    @contextmanager
    def purging(self, db: object) -> Iterator[None]:
        # Freed pages are overwritten with zeros, in the WAL and then the file.
        cursor = self._holder().cursor
        cursor.run("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            with contextlib.suppress(StoreError):
                cursor.run("PRAGMA secure_delete = OFF")

    def purged(self) -> None:
        # The blob's pages may still be in the WAL: copy it back (the freed pages were
        # zeroed) and truncate it, waiting up to busy_timeout for readers.
        self._holder().cursor.one("PRAGMA wal_checkpoint(TRUNCATE)")

    def missing_tree(self) -> StoreError:
        return StoreUnavailable(f"the store {self.path} has lost its counters table")

    def wait_for_changes(self, since: int, timeout: float, last_seq: Callable[[], int]) -> bool:
        # Every commit writes the -wal file: a watch on it wakes this at once (made on
        # the first wait, so only followers hold an inotify instance). Without one, a
        # short poll at the pace followers of a polling store keep.
        wake = self._wake_for_waiting()
        if wake is None:
            if last_seq() > since:
                return True
            time.sleep(min(timeout, POLL_WITHOUT_WAKE))
            return self._saw(last_seq(), since)
        deadline = time.monotonic() + timeout
        while True:
            mark = wake.heard()  # before the look: a commit after it is heard
            if self._saw(last_seq(), since):
                return True
            left = deadline - time.monotonic()
            if left <= 0 or not wake.wait(mark, left):
                return False
            # SQLite writes the log before it publishes the commit in its index (the
            # -shm file, written through memory, which inotify does not see): just
            # woken, the commit may not show yet, and on a loaded machine the committer
            # can be held between the two for milliseconds. Look again at growing
            # intervals, and from the shortest again after each further write: a write
            # heard in the last pause is as new as the first, and waiting for yet
            # another (as the loop above does) left such a commit unseen until the
            # caller's timeout.
            step = 0
            while step < len(SETTLE_PAUSES):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                mark = wake.heard()
                woken = wake.wait(mark, min(SETTLE_PAUSES[step], left))
                if self._saw(last_seq(), since):
                    return True
                step = 0 if woken else step + 1

    def interrupt_waits(self) -> None:
        with self._conns_lock:
            wake = self._wake
        if wake is not None:
            wake.interrupt()

    def _saw(self, newest: int, since: int) -> bool:
        if newest <= since:
            return False
        self._told = max(self._told, newest)
        return True

    def _wake_for_waiting(self) -> WalWake | None:
        with self._conns_lock:
            if self._wake is None and not self._closed and not self._wake_tried:
                self._wake_tried = True
                wake = WalWake(self.path)
                if wake.works:
                    self._wake = wake
                else:
                    wake.close()
            return self._wake

    def pushed_upto(self) -> int:
        # The newest number a wait saw: a follower whose own commits are all that came
        # need not read the feed.
        return self._told

    def defer_maintenance(self) -> None:
        # Checkpoints move to maintain(), on the caller's own thread: writes no longer
        # stall while the WAL is copied back. Other processes keep their own setting, so
        # a WAL left by a killed daemon is still checkpointed by whoever writes next.
        self._autocheckpoint = 0

    def maintain(self) -> None:
        # PASSIVE: copies what no reader still needs, and never waits for anyone.
        self._holder().cursor.one("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        with self._conns_lock:
            self._closed = True
            conns = list(self._conns)
            self._conns.clear()
            wake, self._wake = self._wake, None
        if wake is not None:
            wake.close()
        for db in conns:
            db.close()
        if self._tidy:
            _tidy_side_files(self.path)


_SIDE_FILES = ("-wal", "-shm")


def _tidy_side_files(path: Path) -> None:
    """Remove the empty -wal and -shm a read-only open left beside ``path`` when no
    other process holds the store, as a writer's last close does: SQLite deletes them
    when its last connection that may write closes, and only a connection that may
    write can. The log is empty (a read-only connection writes none), so the store file
    stays byte-identical; another process holding the store keeps them, as it needs."""
    if not any(Path(f"{path}{end}").exists() for end in _SIDE_FILES):
        return
    with contextlib.suppress(sqlite3.Error):
        uri = f"file:{quote(str(path))}?mode=rw"
        db = sqlite3.connect(uri, uri=True, isolation_level=None, factory=Connection)
        count_open(db, path)
        try:
            db.execute("PRAGMA user_version").fetchone()  # joins the WAL, to leave it
        finally:
            db.close()


def _busy(e: sqlite3.Error) -> bool:
    return str(getattr(e, "sqlite_errorname", "")).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
