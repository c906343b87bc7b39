"""The server store: memory trees in a PostgreSQL database, shared by every host.

``postgresql://USER@HOST:PORT/DB?tree=NAME`` (URL, options and connection problems:
:mod:`memfs.store.postgres_url`). One database holds many trees; every row is keyed
by its tree (:mod:`memfs.store.postgres_schema`, which memfs creates and migrates).

The algorithm is :mod:`memfs.store.engine`'s; this module is the PostgreSQL page of it
(:class:`PgDialect`): every statement kept to the store's tree, the counters and write
lock in the tree's ``trees`` row, content in ``blobs`` as it is (PostgreSQL compresses
large values itself). Guarantees, as :mod:`memfs.store.base` states them: every
mutation is one transaction that holds its tree's row lock, so a tree's revisions and
feed numbers commit in order; a commit is durable as the server's settings make it
(``synchronous_commit``, replication). A mutation is a round trip for what it reads
and one for what it writes (:mod:`memfs.store.postgres_conn`). Followers are woken by
LISTEN/NOTIFY (:mod:`memfs.store.postgres_feed`).

When the server goes away, calls fail with StoreUnavailable and the next call after it
is back connects again; see :mod:`memfs.store.postgres_conn`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import psycopg

from memfs.errors import StoreError, StoreUnavailable
from memfs.store import postgres_schema as schema
from memfs.store.base import Usage
from memfs.store.engine import SqlStore
from memfs.store.postgres_conn import PgConnections
from memfs.store.postgres_feed import Listener
from memfs.store.postgres_url import PgOptions, parse
from memfs.store.sql import Cursor, Params

__all__ = ["PgDialect", "PostgresStore", "open_postgres"]

log = logging.getLogger(__name__)

_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
# The join from a blob row ``b`` to the base it continues, ``bb`` (memfs.store.deltas).
_BASE = " LEFT JOIN blobs bb ON bb.tree = b.tree AND bb.sha256 = b.base"


class PgDialect:
    """:class:`memfs.store.sql.Dialect` for PostgreSQL (12 or newer)."""

    tree_column = "tree, "
    tree_value = ":tree, "
    stored = "0, b.content, b.base, 0, bb.content"  # bytes are stored as they are
    # The counters are the locked row's own columns: read after the lock is taken (a
    # subquery's rows would be of the snapshot from before the wait).
    begin = (
        "SELECT rev, seq, (SELECT min(due_ns) FROM gone WHERE tree = :tree), op FROM trees"
        " WHERE id = :tree FOR UPDATE"
    )
    usage = "SELECT files, dirs, bytes FROM trees WHERE id = :tree"
    blob = f"SELECT {stored} FROM blobs b{_BASE} WHERE b.tree = :tree AND b.sha256 = :sha"
    blob_base = "SELECT base FROM blobs WHERE tree = :tree AND sha256 = :sha"
    continuing = "SELECT sha256 FROM blobs WHERE tree = :tree AND base = :sha"
    # octet_length and pg_column_size read the sizes; neither detoasts the value. A
    # value PostgreSQL compressed (TOAST, the column's default storage) is not cut
    # cheaply: substring() inflates it from its start every time, so it is read whole.
    # A row continuing a base is small (memfs.store.deltas): never read by range.
    blob_extent = (
        "SELECT false, octet_length(content),"
        " pg_column_size(content) >= octet_length(content) AND base IS NULL"
        " FROM blobs WHERE tree = :tree AND sha256 = :sha"
    )

    def __init__(self, channel: str) -> None:
        self.channel = channel
        columns = (
            "tree, seq, kind, path, old_path, author, time_ns, rev, size, sha256, op, mode,"
            " target, prior_kind, prior_sha256, prior_size, prior_mode, prior_target"
        )
        one = (
            f"INSERT INTO changes ({columns}) VALUES (:tree, :seq, :kind, :p, :old, :author,"
            " :now, :rev, :size, :sha, :op, :mode, :target, :pkind, :psha, :psize, :pmode,"
            " :ptarget)"
        )
        # Many records in one statement, as one array per column: a recursive delete of
        # any size is one insert. (One record goes as plain values: sending arrays costs
        # the client more.)
        many = (
            f"INSERT INTO changes ({columns}) SELECT :tree, * FROM unnest(:seq::bigint[],"
            " :kind::text[], :p::text[], :old::text[], :author::text[], :now::bigint[],"
            " :rev::bigint[], :size::bigint[], :sha::text[], :op::bigint[], :mode::bigint[],"
            " :target::text[], :pkind::text[], :psha::text[], :psize::bigint[],"
            " :pmode::bigint[], :ptarget::text[])"
        )
        self._append_one, self._append_many = self.render(one), self.render(many)
        # NOTIFY is delivered at commit, to listeners only once the change is visible.
        counters = (
            "UPDATE trees SET rev = :count_rev, seq = :count_seq, op = :count_op,"
            " files = files + :grown_files, dirs = dirs + :grown_dirs,"
            " bytes = bytes + :grown_bytes WHERE id = :tree RETURNING pg_notify(:channel, :payload)"
        )
        self._counters = self.render(counters)
        # finish's statements by what they fold in: (records, operation statement).
        self._finishes: dict[tuple[str, str], str] = {}
        # Stored bytes that no longer match (damaged) are replaced by the ones written
        # now; the server compares, so sound content is left untouched. A row continuing
        # a base is left as it is: its bytes are only a tail (damage to it, or to its
        # base, is still found by every read and by verify).
        self._put = self.render(
            "INSERT INTO blobs (tree, sha256, content) VALUES (:tree, :sha, :data)"
            " ON CONFLICT (tree, sha256) DO UPDATE SET content = excluded.content"
            " WHERE blobs.base IS NULL AND blobs.content IS DISTINCT FROM excluded.content"
        )
        # The base must be held and whole; the tree's lock (taken by every mutation)
        # keeps it so until the commit.
        self._put_delta = self.render(
            "INSERT INTO blobs (tree, sha256, content, base) SELECT :tree, :sha, :tail, :base"
            " WHERE EXISTS (SELECT 1 FROM blobs WHERE tree = :tree AND sha256 = :base"
            " AND base IS NULL) ON CONFLICT (tree, sha256) DO NOTHING RETURNING 1"
        )
        self._blob_base = self.render(self.blob_base)
        self._make_whole = self.render(
            "UPDATE blobs SET content = :data, base = NULL"
            " WHERE tree = :tree AND sha256 = :sha AND base IS NOT NULL RETURNING 1"
        )
        # What the blob_removed trigger does when a continuing row goes.
        self._let_go = self.render(
            "DELETE FROM blobs b WHERE b.tree = :tree AND b.sha256 = :base AND NOT EXISTS"
            " (SELECT 1 FROM revisions r WHERE r.tree = :tree AND r.sha256 = :base)"
            " AND NOT EXISTS (SELECT 1 FROM blobs c WHERE c.tree = :tree AND c.base = :base)"
        )
        self._drop = self.render("DELETE FROM blobs WHERE tree = :tree AND sha256 = :sha")
        # substring() of a value stored uncompressed fetches only the TOAST chunks of
        # the range.
        self._slice = self.render(
            "SELECT substring(content FROM :start FOR :n) FROM blobs"
            " WHERE tree = :tree AND sha256 = :sha"
        )

    def t(self, alias: str = "") -> str:
        return f"{alias}.tree = :tree AND " if alias else "tree = :tree AND "

    def greatest(self, a: str, b: str) -> str:
        return f"greatest({a}, {b})"

    def contains(self, text: str, part: str) -> str:
        return f"strpos({text}, {part}) > 0"

    def octets(self, column: str) -> str:
        return f"octet_length({column})"

    def content(self, rev: str, *, left: bool = False, on: str = "") -> str:
        join = "LEFT JOIN" if left else "JOIN"
        cond = f"{on} AND " if on else ""
        return f"{join} blobs b ON {cond}b.tree = {rev}.tree AND b.sha256 = {rev}.sha256{_BASE}"

    def render(self, sql: str) -> str:
        return _PLACEHOLDER.sub(r"%(\1)s", sql.replace("%", "%%"))

    def append(self, db: Cursor, records: Sequence[Params]) -> None:
        if len(records) == 1:
            db.run(self._append_one, records[0])
        else:
            db.run(self._append_many, _columns(records))

    def finish(
        self,
        db: Cursor,
        rev: int,
        seq: int,
        op: int,
        records: Sequence[Params],
        grown: Usage,
        operations: Sequence[tuple[str, Params]],
    ) -> None:
        params: dict[str, object] = {
            "count_rev": rev,
            "count_seq": seq,
            "count_op": op,
            "grown_files": grown.files,
            "grown_dirs": grown.dirs,
            "grown_bytes": grown.bytes,
            "channel": self.channel,
            "payload": str(seq),
        }
        # One statement: the records, the operation row (one, as a lone mutation or a
        # burst's save makes; its parameters are named apart from the records') and
        # the counters, each a part of one data-modifying WITH (they touch different
        # rows, so one snapshot serves them all).
        appended = ""
        if len(records) == 1:
            appended = self._append_one
            params.update(records[0])
        elif records:
            appended = self._append_many
            params.update(_columns(records))
        folded = ""
        if len(operations) == 1:
            folded, op_params = operations[0]
            params.update(op_params)
        else:
            for sql, op_params in operations:
                db.run(sql, op_params)
        db.run(self._finish_sql(appended, folded), params)

    def _finish_sql(self, appended: str, folded: str) -> str:
        found = self._finishes.get((appended, folded))
        if found is None:
            parts = [f"{name} AS ({sql})" for name, sql in (("c", appended), ("o", folded)) if sql]
            head = f"WITH {', '.join(parts)} " if parts else ""
            found = self._finishes[(appended, folded)] = head + self._counters
        return found

    def put_blob(self, db: Cursor, sha256: str, data: bytes | bytearray) -> None:
        db.run(self._put, {"sha": sha256, "data": data})

    def put_delta(
        self, db: Cursor, sha256: str, base: str, tail: bytes, *, sure: bool = False
    ) -> bool:
        params = {"sha": sha256, "base": base, "tail": tail}
        if sure:
            db.run(self._put_delta, params)  # sent with the mutation's other writes
            return True
        return db.one(self._put_delta, params) is not None

    def make_whole(self, db: Cursor, sha256: str, data: bytes) -> None:
        row = db.one(self._blob_base, {"sha": sha256})
        if row is None or row[0] is None:
            return
        if db.one(self._make_whole, {"sha": sha256, "data": data}) is not None:
            db.run(self._let_go, {"base": row[0]})

    def drop_blob(self, db: Cursor, sha256: str) -> None:
        db.run(self._drop, {"sha": sha256})

    def slice(self, db: Cursor, sha256: str, offset: int, size: int) -> bytes | None:
        row = db.one(self._slice, {"sha": sha256, "start": offset + 1, "n": size})
        return None if row is None else bytes(row[0])

    def unpack(self, codec: int | None, stored: bytes | None) -> bytes:
        return b"" if stored is None else bytes(stored)


_RECORD = (
    "seq", "kind", "p", "old", "author", "now", "rev", "size", "sha",
    "op", "mode", "target", "pkind", "psha", "psize", "pmode", "ptarget",
)  # fmt: skip


def _columns(records: Sequence[Params]) -> dict[str, object]:
    """Change records as one array per column (psycopg sends a list as an array)."""
    return {name: [record[name] for record in records] for name in _RECORD}


# maintain() analyzes memfs's tables when the tree (its entries and its changes) has
# grown to ANALYZE_GROWTH times its size at the last analysis, plus ANALYZE_MIN_ROWS;
# it looks every STATS_LOOK_S seconds (one single-row read). Each connection plans a
# statement once (generic plans, see PgBackend), by the statistics of that moment, and
# again only after an analysis: on tables never analyzed, those plans walk the whole
# tree, so the first analysis comes within a second of the tree reaching the minimum.
ANALYZE_GROWTH = 2
ANALYZE_MIN_ROWS = 500
STATS_LOOK_S = 1.0
_ANALYZED = ("entries", "revisions", "changes", "gone", "operations")


class PgBackend(PgConnections):
    """:class:`memfs.store.sql.Backend` for one tree of a PostgreSQL database."""

    pushes_changes = True
    guesses = True

    def __init__(self, options: PgOptions, clock: Callable[[], int] = time.time_ns) -> None:
        self.limits = options.limits
        self.url = options.url
        super().__init__(options, self._configure_connection)
        db = self.connect()
        try:
            schema.prepare(db, options.where, readonly=self.limits.readonly)
            tree = schema.tree_id(db, options.tree, clock(), create=not self.limits.readonly)
            if tree is None:
                raise schema.no_such_tree(db, options.where, options.tree)
        except psycopg.Error as e:
            raise self.translate(e) from e
        finally:
            db.close()
        self.tree = tree
        channel = f"memfs_tree_{tree}"
        self.dialect = PgDialect(channel)
        self.listener = Listener(channel, self.connect, self.translate)
        self._stats_looked = -STATS_LOOK_S  # the first maintain() looks
        # The tree's size when this handle last analyzed (so once a tree is big, its
        # first maintain() analyzes: what the server counted may be another tree's).
        self._analyzed_size = 0

    def _configure_connection(self, db: psycopg.Connection) -> None:
        db.execute("SET search_path = memfs")  # the engine's statements name bare tables
        # Every statement the engine repeats is a lookup by (tree, path) or (tree, seq),
        # whose best plan does not depend on the values. The server's custom plans cost
        # a planning each time (a rename's lookup planned in 360 us and ran in 25), and
        # they read a growing tree by statistics taken when it was small: once they took
        # the tree's prefix of an index and filtered every row of the tree.
        db.execute("SET plan_cache_mode = force_generic_plan")
        if self.limits.readonly:
            db.execute("SET default_transaction_read_only = on")

    @contextmanager
    def purging(self, db: Cursor) -> Iterator[None]:
        yield  # the server frees a deleted row's space itself (purged: VACUUM)

    def purged(self) -> None:
        try:
            with self._connection() as db:
                db.execute("VACUUM memfs.blobs")
        except (StoreError, psycopg.Error) as e:
            # The content is already unreachable; only its space waits for autovacuum.
            log.warning("memfs: could not vacuum the redacted content's space: %s", e)

    def missing_tree(self) -> StoreError:
        return StoreUnavailable(f"the tree {self.options.tree!r} was removed from the database")

    def storage_problem(self) -> str | None:
        try:
            row = self.one(self.dialect.render("SELECT 1 FROM trees WHERE id = :tree"))
        except StoreUnavailable:
            return None  # the server away: an outage, which the follower reports itself
        if row is None:
            return f"the tree {self.options.tree!r} was dropped from {self.options.where}"
        return None

    def rescue(self, recovery_dir: Path) -> Path | None:
        return None  # what was committed is on the server

    def wait_for_changes(self, since: int, timeout: float, last_seq: Callable[[], int]) -> bool:
        return self.listener.wait(since, timeout, last_seq)

    def pushed_upto(self) -> int:
        return self.listener.drain()

    def interrupt_waits(self) -> None:
        return None  # a wait on the listener ends within its timeout

    def defer_maintenance(self) -> None:
        return None  # nothing to move off the write path: the server does its own

    def maintain(self) -> None:
        """Keep the planner's statistics up with a tree that grows fast. Until the
        server analyzes memfs's tables again, a new tree's rows are guessed from the
        trees it counted before (0.5% of a table never analyzed, next to nothing beside
        another tree), and a lookup by path or by operation is planned as a walk over
        the tree: a rename on a tree just filled took ten times as long. Autovacuum
        gets there in a minute or more, or never on a big table; a daemon's
        maintenance, at once: when the tree is big enough to matter, and each time it
        has doubled since."""
        now = time.monotonic()
        if now - self._stats_looked < STATS_LOOK_S:
            return
        self._stats_looked = now
        # Its changes and entries: history grows where the entries do not (saves).
        row = self.one(self.dialect.render("SELECT seq + files + dirs FROM trees WHERE id = :tree"))
        size = 0 if row is None else int(row[0])
        if size < ANALYZE_GROWTH * self._analyzed_size + ANALYZE_MIN_ROWS:
            return
        with self._connection() as db:
            # Not the tables' owner: the server skips them with a warning.
            db.execute(f"ANALYZE {', '.join(f'memfs.{t}' for t in _ANALYZED)}".encode())
        self._analyzed_size = size

    def open_slices(self, sha256: str) -> None:
        return None  # a substring() per range on the pool's connections costs no more

    def close(self) -> None:
        super().close()
        with contextlib.suppress(psycopg.Error):
            self.listener.close()


class PostgresStore(SqlStore):
    """One memory tree in a PostgreSQL database; see the module docstring."""

    def __init__(self, options: PgOptions) -> None:
        self.options = options
        self._server = PgBackend(options)
        super().__init__(self._server)
        self.tree = self._server.tree

    @property
    def outage(self) -> float | None:
        """Since when (``time.time()``) the server has been unreachable, or None."""
        return self._server.outage


def open_postgres(url: str, options: Mapping[str, object]) -> PostgresStore:
    """Registry opener for ``postgresql://`` and ``postgres://`` URLs."""
    return PostgresStore(parse(url, options))
