"""What a backend gives the store's one algorithm (:mod:`memfs.store.engine`): its SQL
dialect, statements that run on its connections, and its transactions.

A backend is two small objects:

- a :class:`Dialect`: how this database spells the few things that differ (the tree
  column of a server that holds many trees, its placeholders, where a revision's bytes
  live and how they are packed, the statements that read and store the tree's counters
  and take its write lock). :mod:`memfs.store.statements` writes every other statement
  once, through these. A third SQL database is a page of this: see
  :class:`memfs.store.sqlite.SqliteDialect` and :class:`memfs.store.postgres.PgDialect`.
- a :class:`Backend`: connections and transactions on its driver, turning the driver's
  errors into :mod:`memfs.errors`, and its change feed (a server may push; a file is
  polled).

Statements go through a :class:`Cursor`. A mutation reads everything its checks need
first, with :meth:`Cursor.ask` (a server backend sends those reads together), then only
writes (:meth:`Cursor.run`, sent without waiting), so a mutation on a server is a round
trip for what it reads and one for what it writes and its commit.

A server backend can make that one round trip (:attr:`Backend.guesses`): a read whose
answer the engine can foresee (:mod:`memfs.store.foresight`) is sent as a guard,
:meth:`Cursor.expect`, that fails on the server unless the answer is the one foreseen,
and the writes computed from the foreseen answer follow in the same round. A guard that
fails rolls the whole transaction back (:class:`GuessMissed`), and the engine runs the
mutation again, reading first: a wrong guess costs time, never a wrong write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from memfs.errors import StoreError
from memfs.store.base import SearchHit, Usage
from memfs.store.rules import Limits

Row = tuple[Any, ...]
Params = Mapping[str, object]


class GuessMissed(StoreError):
    """A guard of :meth:`Cursor.expect` found another answer than the one foreseen: the
    transaction was rolled back whole. The engine runs the mutation again without
    guessing; this never leaves :mod:`memfs.store.engine`."""


class Pending(Protocol):
    """A statement sent (or, on a local database, run) whose rows are read later."""

    def one(self) -> Row | None: ...

    def all(self) -> list[Row]: ...


class Cursor(Protocol):
    """Statements on one connection, in the backend's transaction if it has one. Every
    driver error leaves it as a :class:`~memfs.errors.StoreError`."""

    def ask(self, sql: str, params: Params = ...) -> Pending: ...

    def expect(self, sql: str, params: Params, guess: Row | None) -> Pending:
        """:meth:`ask`, answered at once with ``guess`` where the backend guesses (a
        guard sent in its place makes the transaction fail with :class:`GuessMissed`
        unless the statement's one row is ``guess``); ``None``: no guess, ask."""

    def one(self, sql: str, params: Params = ...) -> Row | None: ...

    def all(self, sql: str, params: Params = ...) -> list[Row]: ...

    def run(self, sql: str, params: Params = ...) -> None:
        """Run a statement whose result nobody reads (a server sends it at once and
        reports its failure at the next read or at the commit)."""

    def many(self, sql: str, rows: Sequence[Params]) -> None: ...

    def sync(self) -> None:
        """Wait until everything sent has run (raising what failed)."""


class Dialect(Protocol):
    """How one database spells what differs between backends; see the module docstring."""

    def t(self, alias: str = "") -> str:
        """The condition (ending in ``AND``) that keeps a statement to this store's tree
        for table ``alias`` (its own columns when ""), or "" for a one-tree database."""

    # Before a column list / value list of an INSERT into a tree-keyed table: "tree, " and
    # ":tree, " on a server, "" on a file.
    tree_column: str
    tree_value: str

    def greatest(self, a: str, b: str) -> str:
        """The larger of two expressions."""

    def contains(self, text: str, part: str) -> str:
        """Whether text expression ``text`` contains ``part`` (no wildcards)."""

    def octets(self, column: str) -> str:
        """The length of a text column in UTF-8 bytes."""

    # The stored bytes the joins below expose, as five columns (a :data:`STORED` row):
    # the row's codec and content, the SHA-256 of the base its content continues (NULL:
    # it holds the whole content), and that base's codec and content.
    stored: str

    def content(self, rev: str, *, left: bool = False, on: str = "") -> str:
        """Joins from revision alias ``rev`` to its stored bytes and their base,
        exposed as :attr:`stored` (``left``: a LEFT join, for rows with no content;
        ``on``: a further condition on the join)."""

    def render(self, sql: str) -> str:
        """``sql``, written with ``:name`` placeholders, in this driver's style."""

    # Reads (rev, seq, earliest due sweep) and holds the tree's write lock until commit;
    # no row means the tree is gone.
    begin: str
    # (files, dirs, bytes) of the tree.
    usage: str

    def append(self, db: Cursor, records: Sequence[Params]) -> None:
        """Write change records: each a mapping of seq, kind, p (path), old (old path),
        author, now (time), rev, size and sha."""

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
        """At the end of a transaction that took numbers: write its operation rows
        (``operations``: statements with their parameters, to run first) and the
        ``records`` left, store the tree's counters (revision, feed, operation), add
        what the transaction changed in its totals (``grown``: files, directories,
        bytes) and wake followers (a server's NOTIFY)."""

    def put_blob(self, db: Cursor, sha256: str, data: bytes | bytearray) -> None:
        """Store ``data`` whole under its SHA-256 unless it is stored already (stored
        bytes that no longer hold it, damaged, are replaced by it)."""

    def put_delta(
        self, db: Cursor, sha256: str, base: str, tail: bytes, *, sure: bool = False
    ) -> bool:
        """Store the content ``base``'s stored content followed by ``tail`` under its
        SHA-256, the base kept while this row is; False (nothing written) when the
        SHA-256 is stored already or ``base`` is not held whole. ``sure``: the caller
        knows ``base`` is held whole (this transaction's last put_delta of it said
        so), so a server need not wait for the answer: True, and a SHA-256 stored
        already is kept as it is."""

    # The stored bytes (a :data:`STORED` row) by SHA-256 while a revision holds them;
    # :sha.
    blob: str
    # The SHA-256 of the base a content's row continues (NULL: whole), while held; :sha.
    blob_base: str
    # SHA-256s of the rows that continue base :sha (which must go whole before it goes).
    continuing: str

    def make_whole(self, db: Cursor, sha256: str, data: bytes) -> None:
        """Store the content of row ``sha256``, which continues a base, whole (its
        ``data``), letting go of the base."""

    # (packed, stored length, sliceable) of the stored bytes by SHA-256 while a revision
    # holds them, without reading them; :sha. ``packed``: zlib-packed (put_blob's
    # choice); ``sliceable``: :meth:`slice` reads only the range (else a reader reads
    # the content whole).
    blob_extent: str

    def slice(self, db: Cursor, sha256: str, offset: int, size: int) -> bytes | None:
        """Up to ``size`` of the stored bytes (as ``put_blob`` stored them, packed or
        not) with this SHA-256, from ``offset``, reading only those; None when no
        bytes are stored under it."""

    def drop_blob(self, db: Cursor, sha256: str) -> None:
        """Remove stored bytes for good (redaction), whatever still refers to them."""

    def unpack(self, codec: int | None, stored: bytes | None) -> bytes:
        """The bytes ``put_blob`` stored as ``(codec, stored)`` (a row's own: a
        continuing row's tail, without its base)."""


class Slices(Protocol):
    """Ranges of one content's stored bytes, read through a handle of their own that
    stays open between reads (see :meth:`Backend.open_slices`)."""

    def read(self, offset: int, size: int) -> bytes | None:
        """:meth:`Dialect.slice` of this content."""

    def close(self) -> None: ...


class SearchIndex(Protocol):
    """A backend's full-text index, kept in each writing transaction
    (:mod:`memfs.store.sqlite_search`); the store's search otherwise reads every file."""

    def take(self, db: Cursor, path: str, sha256: str, data: bytes | bytearray) -> None:
        """Index ``data``, now the content of file ``path``, in the caller's transaction."""

    def search(self, query: str, path: str, *, regex: bool, limit: int) -> list[SearchHit]: ...

    def pending(self) -> int: ...

    def build(self, progress: Callable[[int], None] | None) -> None: ...

    def build_step(self, limit: int) -> int:
        """Index up to ``limit`` of the files waiting, in one transaction; how many."""

    def problems(self) -> list[str]: ...


class Backend(Protocol):
    """Connections, transactions and the change feed of one open store."""

    url: str
    limits: Limits
    pushes_changes: bool
    # Whether Cursor.expect guesses (a server, where a round trip saved is worth the
    # statements that foresee the next answers); a local database just reads.
    guesses: bool

    @property
    def dialect(self) -> Dialect: ...

    def one(self, sql: str, params: Params = ...) -> Row | None:
        """One statement's first row, outside any transaction of this thread."""

    def all(self, sql: str, params: Params = ...) -> list[Row]:
        """One statement's rows, outside any transaction of this thread."""

    def reading(self, snapshot: bool = False) -> AbstractContextManager[Cursor]:
        """A connection for statements outside any transaction of this thread
        (``snapshot``: all of them see one state of the store)."""

    def writing(self) -> AbstractContextManager[Cursor]:
        """One write transaction: committed when the block ends, rolled back if it
        raises. The engine nests mutations inside it with savepoints."""

    def purging(self, db: Cursor) -> AbstractContextManager[None]:
        """Around a redaction inside the transaction of ``db``: content deleted inside
        is overwritten, not only unlinked, where the database can do that."""

    def purged(self) -> None:
        """After a redaction's commit: make the database drop what it still keeps of
        the deleted content (a file's write-ahead log, a server's dead rows)."""

    def missing_tree(self) -> StoreError:
        """The error for a tree that went away under an open store."""

    def wait_for_changes(self, since: int, timeout: float, last_seq: Callable[[], int]) -> bool:
        """:meth:`memfs.store.base.Store.wait_for_changes`."""

    def pushed_upto(self) -> int:
        """:meth:`memfs.store.base.Store.pushed_upto`."""

    def open_slices(self, sha256: str) -> Slices | None:
        """A handle reading ranges of this content's stored bytes that is cheaper than
        a :meth:`Dialect.slice` per range (SQLite: an open blob handle), or None to read
        each range with :meth:`Dialect.slice` on the usual connections."""

    def interrupt_waits(self) -> None:
        """:meth:`memfs.store.base.Store.interrupt_waits`."""

    def defer_maintenance(self) -> None: ...

    def maintain(self) -> None: ...

    def storage_problem(self) -> str | None:
        """:meth:`memfs.store.base.Store.storage_problem`."""

    def rescue(self, recovery_dir: Path) -> Path | None:
        """:meth:`memfs.store.base.Store.rescue`."""

    def close(self) -> None: ...
