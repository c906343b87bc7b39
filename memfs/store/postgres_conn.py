"""Connections to the server, transactions, and coming back after the server went away.

A small pool of autocommit connections (threads take one per call and give it back), so
the FUSE daemon's threads read in parallel without a connection each: PostgreSQL forks
a process per connection, and FUSE worker threads come and go. A thread inside
:meth:`PgConnections.batch` keeps its connection and transaction until the batch ends.

Every mutation is one transaction that first locks its tree's row in ``memfs.trees``
(see :mod:`memfs.store.postgres_schema`), takes its revision and feed numbers from the
counters held there, and sends ``NOTIFY`` before it commits, so followers wake when the
change is visible (:mod:`memfs.store.postgres_feed`).

A lost connection (server stopped, restarted, network gone) fails that call with
:class:`~memfs.errors.StoreUnavailable` and drops the connection; the next call
connects again. The first failure and the first success after it are logged, and
:attr:`PgConnections.outage` says since when the server has been unreachable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import errors as pg_errors

from memfs.errors import StoreError, StoreFull, StoreUnavailable
from memfs.store import postgres_schema as schema
from memfs.store.base import ChangeKind
from memfs.store.postgres_url import PgOptions, connect_error, user_of
from memfs.store.rules import BatchTime

log = logging.getLogger(__name__)

MAX_IDLE = 8  # connections kept open between calls


@dataclass
class Tx:
    """One mutation's transaction: its connection and the tree's counters it holds."""

    db: psycopg.Connection
    rev: int
    seq: int
    start_seq: int
    records: list[tuple[object, ...]]

    def next_rev(self) -> int:
        self.rev += 1
        return self.rev

    def record(
        self,
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
        self.seq += 1
        self.records.append((self.seq, kind, path, old_path, author, now, rev, size, sha256))


class PgConnections:
    """The pool, transactions and error translation of one open tree."""

    def __init__(self, options: PgOptions) -> None:
        self.options = options
        self.clock: Callable[[], int] = time.time_ns
        self._idle: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self._local = threading.local()
        self._batch_time = BatchTime()
        self._closed = False
        self.outage: float | None = None  # time.time() of the first failure in a row
        self.reconnects = 0
        db = self._connect()
        try:
            schema.prepare(db, options.where)
            tree = schema.tree_id(db, options.tree, self.clock())
        except psycopg.Error as e:
            db.close()
            raise self._translate(e) from e
        except BaseException:
            db.close()
            raise
        assert tree is not None
        self.tree = tree
        self.channel = f"memfs_tree_{tree}"
        self._give(db)

    # --- connections ---------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection:
        if self._closed:
            raise StoreUnavailable(f"the store {self.options.url} is closed")
        try:
            db = psycopg.connect(self.options.conninfo, autocommit=True, application_name="memfs")
        except psycopg.Error as e:
            self._failed(e)
            raise connect_error(e, self.options) from e
        if self.outage is not None:
            down = time.time() - self.outage
            self.outage = None
            self.reconnects += 1
            log.warning(
                "memfs: reconnected to PostgreSQL at %s after %.1f s",
                self.options.where,
                down,
            )
        return db

    def _failed(self, e: BaseException) -> None:
        if self.outage is None:
            self.outage = time.time()
            log.warning(
                "memfs: lost PostgreSQL at %s: %s (reconnecting on the next call)",
                self.options.where,
                " ".join(str(e).split())[:200],
            )

    def _take(self) -> psycopg.Connection:
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"the store {self.options.url} is closed")
            db = self._idle.pop() if self._idle else None
        return db if db is not None else self._connect()

    def _give(self, db: psycopg.Connection) -> None:
        if (
            db.closed
            or db.broken
            or db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        ):
            db.close()
            return
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(db)
                return
        db.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        """A connection for one call: this thread's batch one, or one from the pool."""
        tx: Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            yield tx.db
            return
        db = self._take()
        try:
            yield db
        except psycopg.Error as e:
            raise self._translate(e, db) from e
        finally:
            self._give(db)

    def _translate(self, e: psycopg.Error, db: psycopg.Connection | None = None) -> StoreError:
        if isinstance(e, pg_errors.DiskFull | pg_errors.OutOfMemory):
            return StoreFull(f"the PostgreSQL server at {self.options.where} is out of room: {e}")
        if isinstance(e, pg_errors.InsufficientPrivilege):
            return StoreUnavailable(
                f"PostgreSQL at {self.options.where} refused role"
                f" {user_of(self.options.conninfo)!r}: {' '.join(str(e).split())[:160]}",
                remedy="have the owner of the memfs schema grant it (README: one server for"
                " a team)",
            )
        if isinstance(e, psycopg.OperationalError) or (db is not None and db.broken):
            if db is not None:
                db.close()
            self._failed(e)
            return StoreUnavailable(
                f"lost the connection to PostgreSQL at {self.options.where}"
                f" ({' '.join(str(e).split())[:160]}); memfs reconnects when it is back"
            )
        return StoreUnavailable(f"the store {self.options.url} failed: {e}")

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        """A consistent snapshot for reads made of several statements."""
        with self._conn() as db:
            if getattr(self._local, "tx", None) is not None:
                yield db
                return
            db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield db
            finally:
                if not db.closed and not db.broken:
                    db.execute("ROLLBACK")

    # --- transactions ----------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        """One mutation: the whole transaction, or a savepoint inside this thread's batch."""
        outer: Tx | None = getattr(self._local, "tx", None)
        if outer is not None:
            saved = (outer.rev, outer.seq, len(outer.records))
            try:
                with outer.db.transaction():  # a savepoint: a refused mutation undoes itself
                    yield outer
            except BaseException as e:
                outer.rev, outer.seq = saved[0], saved[1]
                del outer.records[saved[2] :]
                if isinstance(e, psycopg.Error):
                    raise self._translate(e, outer.db) from e
                raise
            return
        with self._conn() as db, db.transaction():
            tx = self._begin(db)
            self._local.tx = tx
            try:
                yield tx
                self._finish(tx)
            finally:
                self._local.tx = None

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every mutation this thread makes inside is one transaction (nested: joins),
        all at the clock's time when it began unless the clock is replaced inside."""
        with self._batch_time.during(self.clock), self._tx():
            yield

    def _now(self) -> int:
        """The time a mutation records: its batch's (see Store.batch), else the clock's."""
        return self._batch_time.now(self.clock)

    def _begin(self, db: psycopg.Connection) -> Tx:
        row = db.execute(
            "SELECT rev, seq FROM memfs.trees WHERE id = %s FOR UPDATE", (self.tree,)
        ).fetchone()
        if row is None:
            raise StoreUnavailable(f"the tree {self.options.tree!r} was removed from the database")
        return Tx(db, int(row[0]), int(row[1]), int(row[1]), [])

    def _finish(self, tx: Tx) -> None:
        if tx.records:
            with tx.db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memfs.changes (tree, seq, kind, path, old_path, author,"
                    " time_ns, rev, size, sha256)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(self.tree, *r) for r in tx.records],
                )
        tx.db.execute(
            "UPDATE memfs.trees SET rev = %s, seq = %s WHERE id = %s", (tx.rev, tx.seq, self.tree)
        )
        if tx.seq != tx.start_seq:
            # Delivered at commit, to listeners only once the change is visible.
            tx.db.execute("SELECT pg_notify(%s, %s)", (self.channel, str(tx.seq)))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()
