"""The embedded default store: one SQLite file shared by every process that opens it.

Durability: WAL with ``synchronous=NORMAL`` by default. A call that returned has its
transaction in the WAL, so it survives the process being killed (kill -9, a crash of the
FUSE daemon); only a power loss or OS crash can drop the last few commits.
``synchronous=full`` (URL option) makes each commit wait for fsync and survive that too.

Concurrency: every mutation is one ``BEGIN IMMEDIATE`` transaction; writers in other
processes wait up to ``busy_timeout`` seconds (default 5) for the lock. Readers never
wait (WAL). Each thread gets its own connection, so the FUSE daemon's threads read in
parallel. The file must be on a local file system: WAL coordinates processes through
shared memory, which network file systems do not provide; several hosts sharing one
tree need a server backend (PostgreSQL).

URL forms and options: :mod:`memfs.store.sqlite_options`; the file format, its checks
and migrations: :mod:`memfs.store.sqlite_schema`.

History belongs to paths (:mod:`memfs.store.sqlite_history`): each file path keeps
its current revision plus the ``history`` previous ones (default 50; 0 keeps only the
current content), pruned in the writing transaction; a rename adds an arrival revision
at the destination; a path that no longer exists keeps its last revision for
``deleted_history_days`` (default 30).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote

from memfs.errors import NotADirectory, NotFound
from memfs.store.base import Change, Entry, Store, Usage
from memfs.store.sqlite_conn import (
    COLS,
    LIST,
    READ,
    STAT,
    need_file,
    subtree_extent,
    translate,
    unpack_blob,
)
from memfs.store.sqlite_options import SqliteOptions, parse_options, path_from_url
from memfs.store.sqlite_watch import FileWatch, rescue
from memfs.store.sqlite_writes import SqliteWrites

__all__ = ["SqliteStore", "open_sqlite"]


def open_sqlite(url: str, options: Mapping[str, object]) -> SqliteStore:
    """Registry opener for ``sqlite://`` URLs and bare file paths."""
    return SqliteStore(path_from_url(url), parse_options(options))


class SqliteStore(SqliteWrites, Store):
    """A memory tree in one SQLite file; see the module docstring for its guarantees."""

    def __init__(self, path: Path, options: SqliteOptions | None = None) -> None:
        super().__init__(path, options)
        # Quoted so that the URL opens this same file again even if its name holds "%",
        # "?" or "#" (the URL's path part is percent-decoded, a "?" starts options).
        self.url = "sqlite://" + quote(str(path), safe="/")
        self.max_file_bytes = self.options.max_file_bytes
        self.max_tree_bytes = self.options.max_tree_bytes
        self.max_files = self.options.max_files
        self._watch = FileWatch(path)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # --- reading ---------------------------------------------------------------------
    def stat(self, path: str) -> Entry:
        try:
            row = self._db().execute(STAT, (path,)).fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        return Entry(*row)

    def listdir(self, path: str) -> list[Entry]:
        try:
            rows = self._db().execute(LIST, (path,)).fetchall()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        if not rows:
            # No children: say whether the directory is empty, missing or not one.
            entry = self.stat(path)
            if not entry.is_dir:
                raise NotADirectory(f"'{path}' is not a directory", path=path)
        return [Entry(*row) for row in rows]

    def read(self, path: str) -> tuple[bytes, Entry]:
        try:
            row = self._db().execute(READ, (path,)).fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        entry = Entry(*row[:-2])
        need_file(entry)
        return unpack_blob(row[-2], row[-1]), entry

    def walk(self, path: str = "") -> Iterator[Entry]:
        entry = self.stat(path)
        if not entry.is_dir:
            raise NotADirectory(f"'{path}' is not a directory", path=path)
        if path == "":
            sql, args = f"SELECT {COLS} FROM entries WHERE path != '' ORDER BY path", {}
        else:
            sql = f"SELECT {COLS} FROM entries WHERE path > :p || '/' AND path < :p || '0'"
            sql, args = sql + " ORDER BY path", {"p": path}
        try:
            rows = self._db().execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        # Sorted by path, every entry comes after its parent (a prefix sorts first).
        for row in rows:
            yield Entry(*row)

    def subtree_extent(self, path: str) -> tuple[int, int]:
        try:
            return subtree_extent(self._db(), path)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def changes(
        self,
        since: int = 0,
        limit: int | None = None,
        *,
        until: int | None = None,
        newest_first: bool = False,
    ) -> list[Change]:
        order = "DESC" if newest_first else ""
        try:
            rows = (
                self._db()
                .execute(
                    "SELECT seq, kind, path, author, time_ns, old_path, rev, size, sha256"
                    f" FROM changes WHERE seq > ? AND seq <= ? ORDER BY seq {order} LIMIT ?",
                    (since, _MAX_SEQ if until is None else until, -1 if limit is None else limit),
                )
                .fetchall()
            )
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return [Change(*row) for row in rows]

    def last_seq(self) -> int:
        try:
            row = self._db().execute("SELECT max(seq) FROM changes").fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return int(row[0] or 0)

    # --- housekeeping ------------------------------------------------------------------------
    def storage_problem(self) -> str | None:
        return self._watch.problem()

    def rescue(self, recovery_dir: Path) -> Path | None:
        try:
            return rescue(self._db(), self.path, recovery_dir)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def close(self) -> None:
        self._watch.close()
        super().close()

    def usage(self) -> Usage:
        try:
            values = dict(
                self._db()
                .execute(
                    "SELECT name, value FROM counters WHERE name IN ('files', 'dirs', 'bytes')"
                )
                .fetchall()
            )
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return Usage(files=values["files"], dirs=values["dirs"], bytes=values["bytes"])


_MAX_SEQ = 2**63 - 1
