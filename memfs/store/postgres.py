"""The server store: memory trees in a PostgreSQL database, shared by every host.

``postgresql://USER@HOST:PORT/DB?tree=NAME`` (URL, options and connection problems:
:mod:`memfs.store.postgres_url`). One database holds many trees; every row is keyed
by its tree (:mod:`memfs.store.postgres_schema`, which memfs creates and migrates).

Guarantees, as :mod:`memfs.store.base` states them: every mutation is one transaction
that holds its tree's row lock, so a tree's revisions and feed numbers commit in order
(:mod:`memfs.store.postgres_conn`); a commit is durable as the server's settings make it
(``synchronous_commit``, replication). Followers are woken by LISTEN/NOTIFY
(:mod:`memfs.store.postgres_feed`). History follows the SQLite store's rules
(:mod:`memfs.store.postgres_history`); mutations: :mod:`memfs.store.postgres_writes`.

When the server goes away, calls fail with StoreUnavailable and the next call after it
is back connects again; see :mod:`memfs.store.postgres_conn`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import psycopg

from memfs.errors import NotADirectory, NotFound, StoreUnavailable
from memfs.store.base import Entry, Store, Usage
from memfs.store.postgres_feed import PgFeed
from memfs.store.postgres_history import COLS, STAT
from memfs.store.postgres_url import PgOptions, parse
from memfs.store.sqlite_conn import need_file

__all__ = ["PostgresStore", "open_postgres"]

_READ = (
    "SELECT e.path, e.kind, e.size, e.mode, e.mtime_ns, e.ctime_ns, e.rev, e.uid, e.gid,"
    " e.target, b.content FROM memfs.entries e LEFT JOIN memfs.revisions r"
    " ON r.tree = e.tree AND r.path = e.path AND r.rev = e.rev AND e.kind = 'file'"
    " LEFT JOIN memfs.blobs b ON b.tree = r.tree AND b.sha256 = r.sha256"
    " WHERE e.tree = %s AND e.path = %s"
)


def open_postgres(url: str, options: Mapping[str, object]) -> PostgresStore:
    """Registry opener for ``postgresql://`` and ``postgres://`` URLs."""
    return PostgresStore(parse(url, options))


class PostgresStore(PgFeed, Store):
    """One memory tree in a PostgreSQL database; see the module docstring."""

    def __init__(self, options: PgOptions) -> None:
        super().__init__(options)
        self.url = options.url
        self.max_file_bytes = options.max_file_bytes
        self.max_tree_bytes = options.max_tree_bytes
        self.max_files = options.max_files

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    # --- reading -------------------------------------------------------------------------
    def stat(self, path: str) -> Entry:
        with self._conn() as db:
            row = db.execute(STAT, (self.tree, path)).fetchone()
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        return Entry(*row)

    def listdir(self, path: str) -> list[Entry]:
        with self._read() as db:
            rows = db.execute(
                f"SELECT {COLS} FROM memfs.entries WHERE tree = %s AND parent = %s ORDER BY path",
                (self.tree, path),
            ).fetchall()
            if not rows:
                # No children: say whether the directory is empty, missing or not one.
                row = db.execute(STAT, (self.tree, path)).fetchone()
                if row is None:
                    raise NotFound(f"no entry at '{path}'", path=path)
                if row[1] != "dir":
                    raise NotADirectory(f"'{path}' is not a directory", path=path)
        return [Entry(*row) for row in rows]

    def read(self, path: str) -> tuple[bytes, Entry]:
        with self._conn() as db:
            row = db.execute(_READ, (self.tree, path)).fetchone()
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        entry = Entry(*row[:-1])
        need_file(entry)
        return (b"" if row[-1] is None else bytes(row[-1])), entry

    def walk(self, path: str = "") -> Iterator[Entry]:
        with self._read() as db:
            row = db.execute(STAT, (self.tree, path)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{path}'", path=path)
            if row[1] != "dir":
                raise NotADirectory(f"'{path}' is not a directory", path=path)
            if path == "":
                sql = f"SELECT {COLS} FROM memfs.entries WHERE tree = %(t)s AND path <> ''"
            else:
                sql = (
                    f"SELECT {COLS} FROM memfs.entries WHERE tree = %(t)s"
                    " AND path > %(p)s || '/' AND path < %(p)s || '0'"
                )
            rows = db.execute(sql + " ORDER BY path", {"t": self.tree, "p": path}).fetchall()
        # Sorted by path in byte order, every entry comes after its parent.
        for r in rows:
            yield Entry(*r)

    def subtree_extent(self, path: str) -> tuple[int, int]:
        with self._conn() as db:
            return self._extent(db, path)

    def _extent(self, db: psycopg.Connection, path: str) -> tuple[int, int]:
        if path == "":
            where, args = "tree = %(t)s AND path <> ''", {"t": self.tree}
        else:
            where = "tree = %(t)s AND path > %(p)s || '/' AND path < %(p)s || '0'"
            args = {"t": self.tree, "p": path}
        row = db.execute(
            "SELECT max(length(path) - length(replace(path, '/', ''))),"
            f" max(octet_length(path)) FROM memfs.entries WHERE {where}",
            args,
        ).fetchone()
        if row is None or row[0] is None:
            return 0, 0
        if path == "":
            return int(row[0]) + 1, int(row[1]) + 1
        return int(row[0]) - path.count("/"), int(row[1]) - len(path.encode("utf-8"))

    # --- housekeeping --------------------------------------------------------------------
    def storage_problem(self) -> str | None:
        try:
            with self._conn() as db:
                row = db.execute("SELECT 1 FROM memfs.trees WHERE id = %s", (self.tree,)).fetchone()
        except StoreUnavailable:
            return None  # the server away: an outage, which the follower reports itself
        if row is None:
            return f"the tree {self.options.tree!r} was dropped from {self.options.where}"
        return None

    def usage(self) -> Usage:
        with self._conn() as db:
            row = db.execute(
                "SELECT files, dirs, bytes FROM memfs.trees WHERE id = %s", (self.tree,)
            ).fetchone()
        assert row is not None
        return Usage(files=int(row[0]), dirs=int(row[1]), bytes=int(row[2]))
