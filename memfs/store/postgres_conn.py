"""The PostgreSQL store's connections and transactions, and coming back after the server
went away.

Connections come from a :class:`psycopg_pool.ConnectionPool` shared by the store's
threads (PostgreSQL forks a process per connection, and FUSE worker threads come and
go); a thread inside a batch keeps its connection and transaction until the batch ends.

A write transaction runs in pipeline mode: statements whose results the engine reads
later (:meth:`PgCursor.ask`) and those it never reads (:meth:`PgCursor.run`) are sent
without waiting, so a mutation costs one round trip for what its checks read (with the
tree's row lock) and one for its writes and the commit, however many statements it
makes. The pipeline's implicit transaction is the mutation's (see
:meth:`PgConnections.writing`). Every write transaction first locks its tree's row in
``memfs.trees`` (see :mod:`memfs.store.postgres_schema`) and sends ``NOTIFY`` before it
commits, so followers wake when the change is visible.

A lost connection (server stopped, restarted, network gone) fails that call with
:class:`~memfs.errors.StoreUnavailable`. The pool is then closed, and every call
connects on its own, failing at once while the server is away, until one succeeds: a
fresh pool takes over from there. The first failure and the first success after it are
logged, and :attr:`PgConnections.outage` says since when the server has been away.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors

from memfs.errors import StoreError, StoreFull, StoreUnavailable
from memfs.store.postgres_url import PgOptions, connect_error, user_of
from memfs.store.sql import GuessMissed, Params, Pending, Row

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 16  # per open store; more threads wait for one
# How long a call waits for a free connection when all are in use.
BUSY_S = 30.0
# How long a new pool may take for its first connection.
FIRST_S = 10.0
_NO_PARAMS: Params = {}
Fail = Callable[[psycopg.Error], StoreError]
_GUARDS: dict[tuple[str, int], str] = {}


class PgPending:
    """A statement sent in pipeline mode (or already run), its rows read on demand."""

    __slots__ = ("_cur", "_fail")

    def __init__(self, cur: psycopg.Cursor[Row], fail: Fail) -> None:
        self._cur = cur
        self._fail = fail

    def one(self) -> Row | None:
        try:
            return self._cur.fetchone()
        except psycopg.Error as e:
            raise self._fail(e) from e

    def all(self) -> list[Row]:
        try:
            return self._cur.fetchall()
        except psycopg.Error as e:
            raise self._fail(e) from e


class Known:
    """A statement's row as it was guessed: the guard sent in its place checks it."""

    __slots__ = ("_row",)

    def __init__(self, row: Row) -> None:
        self._row = row

    def one(self) -> Row | None:
        return self._row

    def all(self) -> list[Row]:
        return [self._row]


# A guess checked on the server: the statement's rows equal to the guess are counted,
# and none makes the division fail (the one error a statement can raise on a condition
# without a function in the schema). Every statement of the transaction after it is
# then skipped, and the pipeline's Sync rolls it all back.
_GUARD = ("SELECT 1 / count(*)::int FROM (", ") q WHERE ROW(q.*) IS NOT DISTINCT FROM ROW(", ")")


class PgCursor:
    """:class:`memfs.store.sql.Cursor` on one connection; every statement is given the
    store's tree as ``:tree``."""

    __slots__ = ("_fail", "_pipe", "_runner", "_tree", "db", "explicit", "guessed")

    def __init__(
        self, db: psycopg.Connection, tree: int, fail: Fail, pipe: psycopg.Pipeline | None
    ) -> None:
        self.db = db
        self._tree = tree
        self._fail = fail
        self._pipe = pipe
        # In a write transaction: whether a BEGIN made its block explicit (see writing).
        self.explicit = False
        # One cursor for every statement whose result nobody reads (a cursor costs as
        # much as a small statement's own work in psycopg's pipeline).
        self._runner: psycopg.Cursor[Row] | None = None
        self.guessed = False  # a guard was sent: its failure is a GuessMissed

    def fail(self, e: psycopg.Error) -> StoreError:
        """The memfs error for a failure of this cursor's statements."""
        if self.guessed and isinstance(e, pg_errors.DivisionByZero):
            return GuessMissed("a guessed answer was not the store's; rolled back")
        return self._fail(e)

    def ask(self, sql: str, params: Params = _NO_PARAMS) -> Pending:
        cur = self.db.cursor()
        try:
            cur.execute(sql, {"tree": self._tree, **params})
        except psycopg.Error as e:
            raise self.fail(e) from e
        return PgPending(cur, self.fail)

    def expect(self, sql: str, params: Params, guess: Row | None) -> Pending:
        if guess is None or self._pipe is None:
            return self.ask(sql, params)
        guard = _GUARDS.get((sql, len(guess)))
        if guard is None:
            values = ", ".join(f"%(guess_{i})s" for i in range(len(guess)))
            head, middle, tail = _GUARD
            guard = _GUARDS[(sql, len(guess))] = head + sql + middle + values + tail
        self.guessed = True
        self.run(guard, {**params, **{f"guess_{i}": value for i, value in enumerate(guess)}})
        return Known(guess)

    def one(self, sql: str, params: Params = _NO_PARAMS) -> Row | None:
        return self.ask(sql, params).one()

    def all(self, sql: str, params: Params = _NO_PARAMS) -> list[Row]:
        return self.ask(sql, params).all()

    def run(self, sql: str, params: Params = _NO_PARAMS) -> None:
        if self._pipe is not None and not self.explicit and sql.startswith("SAVEPOINT"):
            # A batch nests its mutations: savepoints need a transaction block of their
            # own, which a BEGIN makes of the implicit one (keeping what it did).
            self.explicit = True
            self.run("BEGIN")
        if self._runner is None:
            self._runner = self.db.cursor()
        try:
            self._runner.execute(sql, {"tree": self._tree, **params})
        except psycopg.Error as e:
            raise self.fail(e) from e

    def many(self, sql: str, rows: Sequence[Params]) -> None:
        if not rows:
            return
        try:
            with self.db.cursor() as cur:
                cur.executemany(sql, [{"tree": self._tree, **row} for row in rows])
        except psycopg.Error as e:
            raise self.fail(e) from e

    def sync(self) -> None:
        if self._pipe is None:
            return
        try:
            self._pipe.sync()
        except psycopg.Error as e:
            raise self.fail(e) from e


def _roll_back(db: psycopg.Connection) -> None:
    """End a transaction left open by a failure, if the connection still has one."""
    status = db.info.transaction_status
    if status in (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR):
        with contextlib.suppress(psycopg.Error):
            db.execute("ROLLBACK")


def _forget_prepared(db: psycopg.Connection) -> None:
    """After a pipeline a failed statement aborted: psycopg (3.3) takes a statement it
    asked the server to prepare there for prepared, but the server skipped it, and each
    later use of it on this connection would fail ("prepared statement does not
    exist"). psycopg forgets what it prepared, and has the server forget it too, when
    a transaction block rolls back."""
    with contextlib.suppress(psycopg.Error), db.transaction(force_rollback=True):
        pass


class PgConnections:
    """The pool, transactions and error translation of one open tree."""

    def __init__(self, options: PgOptions, configure: Callable[[psycopg.Connection], None]) -> None:
        self.options = options
        self.tree = 0  # set by the opener once the tree is known
        self._configure = configure
        self._lock = threading.Lock()
        self._pool: psycopg_pool.ConnectionPool | None = None
        self._closed = False
        self.outage: float | None = None  # time.time() of the first failure in a row
        self.reconnects = 0

    # --- connections -----------------------------------------------------------------
    def connect(self) -> psycopg.Connection:
        """A connection of its own (not the pool's), configured for the store."""
        if self._closed:
            raise StoreUnavailable(f"the store {self.options.url} is closed")
        try:
            db = psycopg.connect(self.options.conninfo, autocommit=True, application_name="memfs")
            self._configure(db)
        except psycopg.Error as e:
            self._failed(e)
            raise connect_error(e, self.options) from e
        if self.outage is not None:
            down = time.time() - self.outage
            self.outage = None
            self.reconnects += 1
            log.warning(
                "memfs: reconnected to PostgreSQL at %s after %.1f s", self.options.where, down
            )
        return db

    def _failed(self, e: BaseException) -> None:
        """The server went away: log it once, and retire the pool (whose own attempts
        would make callers wait for its back-off instead of failing at once)."""
        with self._lock:
            first = self.outage is None
            if first:
                self.outage = time.time()
            pool, self._pool = self._pool, None
        if first:
            log.warning(
                "memfs: lost PostgreSQL at %s: %s (reconnecting on the next call)",
                self.options.where,
                " ".join(str(e).split())[:200],
            )
        if pool is not None:
            pool.close(timeout=0)

    def _current_pool(self) -> psycopg_pool.ConnectionPool:
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"the store {self.options.url} is closed")
            if self._pool is not None:
                return self._pool
            lost = self.outage is not None
        if lost:
            # The server was lost: one connection of our own says at once whether it is
            # back (and logs it), where the pool would wait out its back-off.
            self.connect().close()
        made = self._new_pool()
        spare: psycopg_pool.ConnectionPool | None = made
        with self._lock:
            if self._pool is None and not self._closed:
                self._pool, spare = made, None
            current = self._pool
        if spare is not None:  # another thread made one meanwhile, or the store closed
            spare.close(timeout=0)
        if current is None:
            raise StoreUnavailable(f"the store {self.options.url} is closed")
        return current

    def _new_pool(self) -> psycopg_pool.ConnectionPool:
        pool = psycopg_pool.ConnectionPool(
            self.options.conninfo,
            min_size=1,
            max_size=MAX_CONNECTIONS,
            kwargs={"autocommit": True, "application_name": "memfs"},
            configure=self._configure,
            timeout=BUSY_S,
            name=f"memfs-tree-{self.tree}",
            open=False,
        )
        try:
            # Its first connection made now, so a server gone since the last answer is
            # an error at once, not a wait for the pool's attempts.
            pool.open(wait=True, timeout=FIRST_S)
        except psycopg_pool.PoolTimeout as e:
            pool.close(timeout=0)
            self._failed(e)
            raise StoreUnavailable(
                f"no PostgreSQL server answers at {self.options.where};"
                " memfs reconnects when it is back"
            ) from e
        return pool

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        pool = self._current_pool()
        try:
            with pool.connection() as db:
                try:
                    yield db
                except psycopg.Error as e:
                    raise self.translate(e, db) from e
        except psycopg_pool.PoolTimeout as e:
            raise StoreUnavailable(
                f"the store {self.options.url} is busy: all {MAX_CONNECTIONS} of its"
                f" connections stayed in use for {BUSY_S:.0f} s; retry"
            ) from e
        except psycopg_pool.PoolClosed as e:
            # Retired under us by another thread's failure, or the store was closed.
            if self._closed:
                raise StoreUnavailable(f"the store {self.options.url} is closed") from e
            raise StoreUnavailable(
                f"lost the connection to PostgreSQL at {self.options.where};"
                " memfs reconnects when it is back"
            ) from e

    def translate(self, e: psycopg.Error, db: psycopg.Connection | None = None) -> StoreError:
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
            self._failed(e)
            return StoreUnavailable(
                f"lost the connection to PostgreSQL at {self.options.where}"
                f" ({' '.join(str(e).split())[:160]}); memfs reconnects when it is back"
            )
        return StoreUnavailable(f"the store {self.options.url} failed: {e}")

    # --- transactions (memfs.store.sql.Backend) -----------------------------------------
    def one(self, sql: str, params: Params = _NO_PARAMS) -> Row | None:
        with self._connection() as db:
            row: Row | None = db.execute(sql, {"tree": self.tree, **params}).fetchone()
            return row

    def all(self, sql: str, params: Params = _NO_PARAMS) -> list[Row]:
        with self._connection() as db:
            return db.execute(sql, {"tree": self.tree, **params}).fetchall()

    @contextmanager
    def reading(self, snapshot: bool = False) -> Iterator[PgCursor]:
        with self._connection() as db:
            cursor = PgCursor(db, self.tree, lambda e: self.translate(e, db), None)
            if not snapshot:
                yield cursor
                return
            with db.transaction():
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield cursor

    @contextmanager
    def writing(self) -> Iterator[PgCursor]:
        # A pipeline's statements up to its Sync (sent when it ends; reads in between
        # ask the server to flush, not to sync) are one implicit transaction: the
        # server commits it at the Sync, or rolls it back whole if one of them failed.
        # So a lone mutation sends no BEGIN nor COMMIT (the first statement of a
        # pipeline cost 30-70 us to send); a batch's first savepoint begins a block.
        with self._connection() as db:
            cursor: PgCursor | None = None
            aborted = False  # a statement failed: the server skipped every later one
            try:
                with db.pipeline() as pipe:
                    cursor = PgCursor(db, self.tree, lambda e: self.translate(e, db), pipe)
                    try:
                        yield cursor
                    except BaseException:
                        # Before the Sync would commit what was sent: a block made
                        # explicit and rolled back (a bare ROLLBACK would do it too, with
                        # a warning in the server's log each time).
                        # (A statement that failed aborted the pipeline: the Sync rolls
                        # all of it back by itself.)
                        aborted = pipe.status == psycopg.pq.PipelineStatus.ABORTED
                        if not aborted:
                            with contextlib.suppress(psycopg.Error, StoreError):
                                if not cursor.explicit:
                                    cursor.run("BEGIN")
                                cursor.run("ROLLBACK")
                        try:
                            # Here, not in the pipeline's exit, which would log a failure
                            # found now (a guard not yet read) and drop it.
                            pipe.sync()
                        except psycopg.Error:
                            aborted = True
                        raise
                    if cursor.explicit:
                        cursor.run("COMMIT")
            except psycopg.Error as e:  # met at the commit, when the pipeline is read
                aborted = True
                _roll_back(db)
                raise (self.translate(e, db) if cursor is None else cursor.fail(e)) from e
            except BaseException:
                _roll_back(db)
                raise
            finally:
                if aborted:
                    _forget_prepared(db)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(Exception):  # closing must not fail
                pool.close(timeout=1)
