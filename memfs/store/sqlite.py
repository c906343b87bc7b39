"""The embedded default store: one SQLite file shared by every process that opens it.

Durability: WAL with ``synchronous=NORMAL`` by default. A call that returned has its
transaction in the WAL, so it survives the process being killed (kill -9, a crash of the
FUSE daemon); only a power loss or OS crash can drop the last few commits.
``synchronous=full`` (URL option) makes each commit wait for fsync and survive that too.

Concurrency: every mutation is one ``BEGIN IMMEDIATE`` transaction; writers in other
processes wait up to ``busy_timeout`` seconds (default 5) for the lock. Readers never
wait (WAL). Each thread gets its own connection, so the FUSE daemon's threads read in
parallel.

History: each file keeps its current revision plus the ``history`` previous ones
(default 50; 0 keeps only the current content), pruned in the writing transaction.
Deleting a file deletes its history; the change feed keeps the record of the delete.
A renamed file keeps its history (revisions belong to the entry, not to the path).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from memfs.errors import (
    AlreadyExists,
    Conflict,
    CorruptStore,
    DirectoryNotEmpty,
    InvalidMove,
    IsADirectory,
    NotADirectory,
    NotFound,
    StoreError,
    StoreUnavailable,
    TooLarge,
)
from memfs.paths import parse_rel
from memfs.store import sqlite_schema as schema
from memfs.store.base import (
    DEFAULT_DIR_MODE,
    DEFAULT_FILE_MODE,
    Change,
    ChangeKind,
    Entry,
    Revision,
    Store,
    Usage,
)
from memfs.store.sqlite_options import SqliteOptions, parse_options, path_from_url

__all__ = ["SqliteStore", "open_sqlite"]

_COLS = "path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, target"
_STAT = f"SELECT {_COLS} FROM entries WHERE path = ?"
_LIST = f"SELECT {_COLS} FROM entries WHERE parent = ? ORDER BY path"
_READ = (
    "SELECT e.path, e.kind, e.size, e.mode, e.mtime_ns, e.ctime_ns, e.rev, e.uid, e.gid,"
    " e.target, r.content FROM entries e LEFT JOIN revisions r ON r.rev = e.rev"
    " AND e.kind = 'file' WHERE e.path = ?"
)
_LOOKUP = "SELECT id, kind, rev FROM entries WHERE path = ?"
# Descendants of P are exactly the paths in [P + "/", P + "0"): "0" follows "/" in
# byte order, and this range uses the primary index where LIKE would not (and LIKE
# would treat "%" and "_" in names as wildcards).
_SUBTREE = "path = :p OR (path >= :p || '/' AND path < :p || '0')"
_NEXT_REV = "UPDATE counters SET value = value + 1 WHERE name = 'rev' RETURNING value"
_RECORD = (
    "INSERT INTO changes (kind, path, old_path, author, time_ns, rev) VALUES (?, ?, ?, ?, ?, ?)"
)
_TOUCH = "UPDATE entries SET mtime_ns = ?, ctime_ns = ? WHERE path = ?"
_PRUNE = (
    "DELETE FROM revisions WHERE entry_id = :id AND rev < (SELECT rev FROM revisions"
    " WHERE entry_id = :id ORDER BY rev DESC LIMIT 1 OFFSET :keep)"
)


def open_sqlite(url: str, options: Mapping[str, object]) -> SqliteStore:
    """Registry opener for ``sqlite://`` URLs and bare file paths."""
    return SqliteStore(path_from_url(url), parse_options(options))


def _translate(e: sqlite3.Error, path: Path) -> StoreError:
    """A typed memfs error for an SQLite failure, saying what to do about it."""
    name = getattr(e, "sqlite_errorname", "")
    if isinstance(e, sqlite3.ProgrammingError) and "closed" in str(e):
        return StoreUnavailable(f"the store {path} is closed")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreUnavailable(
            f"the store {path} is busy: another process held its write lock too long; retry"
        )
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return CorruptStore(f"the store {path} is damaged ({e}); restore it from a backup")
    if name.startswith("SQLITE_FULL"):
        return StoreUnavailable(f"the disk holding the store {path} is full")
    if name.startswith("SQLITE_READONLY"):
        return StoreUnavailable(f"the store {path} is read-only here ({e})")
    return StoreUnavailable(f"the store {path} failed: {e}")


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


class SqliteStore(Store):
    def __init__(self, path: Path, options: SqliteOptions | None = None) -> None:
        self.path = path
        self.options = options or SqliteOptions()
        self.url = "sqlite://" + str(path)
        self._local = threading.local()
        self._conns: dict[int, sqlite3.Connection] = {}
        self._conns_lock = threading.Lock()
        self._closed = False
        schema.prepare(
            path, busy_timeout=self.options.busy_timeout, synchronous=self.options.synchronous
        )

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # --- connections and transactions ----------------------------------------------
    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or self._closed:
            db = self._connect()
        return db

    def _connect(self) -> sqlite3.Connection:
        with self._conns_lock:
            if self._closed:
                raise StoreUnavailable(f"the store {self.path} is closed")
            # Connections of threads that ended are closed here rather than leaked: the
            # FUSE daemon's worker threads come and go.
            alive = {t.ident for t in threading.enumerate()}
            for ident in [i for i in self._conns if i not in alive]:
                self._conns.pop(ident).close()
            try:
                db = schema.connect(
                    self.path,
                    busy_timeout=self.options.busy_timeout,
                    synchronous=self.options.synchronous,
                )
            except sqlite3.Error as e:
                raise _translate(e, self.path) from e
            self._conns[threading.get_ident()] = db
            self._local.db = db
            return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        try:
            yield db
            db.execute("COMMIT")
        except BaseException as e:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise _translate(e, self.path) from e
            raise

    def _next_rev(self, db: sqlite3.Connection) -> int:
        return int(db.execute(_NEXT_REV).fetchone()[0])

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
    ) -> None:
        db.execute(_RECORD, (kind, path, old_path, author, now, rev))

    # --- reading ----------------------------------------------------------------------
    def stat(self, path: str) -> Entry:
        try:
            row = self._db().execute(_STAT, (path,)).fetchone()
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        return Entry(*row)

    def listdir(self, path: str) -> list[Entry]:
        try:
            rows = self._db().execute(_LIST, (path,)).fetchall()
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        if not rows:
            # No children: say whether the directory is empty, missing or not one.
            entry = self.stat(path)
            if not entry.is_dir:
                raise NotADirectory(f"'{path}' is not a directory", path=path)
        return [Entry(*row) for row in rows]

    def read(self, path: str) -> tuple[bytes, Entry]:
        try:
            row = self._db().execute(_READ, (path,)).fetchone()
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        entry = Entry(*row[:-1])
        self._need_file(entry)
        return bytes(row[-1]), entry

    def walk(self, path: str = "") -> Iterator[Entry]:
        entry = self.stat(path)
        if not entry.is_dir:
            raise NotADirectory(f"'{path}' is not a directory", path=path)
        if path == "":
            sql, args = f"SELECT {_COLS} FROM entries WHERE path != '' ORDER BY path", {}
        else:
            sql = f"SELECT {_COLS} FROM entries WHERE path > :p || '/' AND path < :p || '0'"
            sql, args = sql + " ORDER BY path", {"p": path}
        try:
            rows = self._db().execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        # Sorted by path, every entry comes after its parent (a prefix sorts first).
        for row in rows:
            yield Entry(*row)

    def _need_file(self, entry: Entry) -> None:
        if entry.kind == "dir":
            raise IsADirectory(f"'{entry.path}' is a directory", path=entry.path)
        if entry.kind == "symlink":
            raise NotFound(
                f"'{entry.path}' is a symlink; memfs never follows symlinks", path=entry.path
            )

    # --- writing helpers ----------------------------------------------------------------
    def _valid(self, path: str, *, what: str = "path") -> str:
        rel = parse_rel(path).rel
        if rel == "":
            raise InvalidMove(f"the root of the store cannot be the {what} of this operation")
        return rel

    def _ensure_parent(
        self, db: sqlite3.Connection, path: str, author: str, now: int, parents: bool
    ) -> None:
        missing: list[str] = []
        parent = _parent(path)
        while True:
            row = db.execute("SELECT kind FROM entries WHERE path = ?", (parent,)).fetchone()
            if row is not None:
                if row[0] != "dir":
                    raise NotADirectory(f"'{parent}' is not a directory", path=parent)
                break
            if not parents:
                raise NotFound(f"the parent directory '{parent}' does not exist", path=parent)
            missing.append(parent)
            parent = _parent(parent)
        for directory in reversed(missing):
            self._insert_dir(db, directory, author, now, DEFAULT_DIR_MODE)

    def _insert_dir(
        self, db: sqlite3.Connection, path: str, author: str, now: int, mode: int
    ) -> None:
        rev = self._next_rev(db)
        db.execute(
            "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns, rev)"
            " VALUES (?, ?, 'dir', 0, ?, ?, ?, ?)",
            (path, _parent(path), mode & 0o7777, now, now, rev),
        )
        db.execute(_TOUCH, (now, now, _parent(path)))
        self._record(db, "mkdir", path, author, now, rev=rev)

    def _add_revision(
        self, db: sqlite3.Connection, entry_id: int, rev: int, data: bytes, author: str, now: int
    ) -> None:
        db.execute(
            "INSERT INTO revisions (rev, entry_id, author, time_ns, size, sha256, content)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, entry_id, author, now, len(data), hashlib.sha256(data).hexdigest(), data),
        )
        db.execute(_PRUNE, {"id": entry_id, "keep": self.options.history})

    def _check_size(self, path: str, size: int) -> None:
        if size > self.options.max_file_bytes:
            raise TooLarge(
                f"'{path}' would be {size} bytes; this store's limit is"
                f" {self.options.max_file_bytes} bytes per file",
                path=path,
            )

    # --- writing -----------------------------------------------------------------------
    def write(
        self,
        path: str,
        data: bytes,
        *,
        author: str,
        expected_rev: int | None = None,
        mode: int | None = None,
        parents: bool = False,
    ) -> Entry:
        rel = self._valid(path)
        data = bytes(data)
        self._check_size(rel, len(data))
        now = time.time_ns()
        with self._tx() as db:
            row = db.execute(_LOOKUP, (rel,)).fetchone()
            if row is None:
                if expected_rev is not None and expected_rev != 0:
                    raise Conflict(
                        f"'{rel}' changed: expected revision {expected_rev}, but it no"
                        " longer exists",
                        path=rel,
                    )
                self._ensure_parent(db, rel, author, now, parents)
                rev = self._next_rev(db)
                file_mode = DEFAULT_FILE_MODE if mode is None else mode & 0o7777
                entry_id = db.execute(
                    "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns,"
                    " rev) VALUES (?, ?, 'file', ?, ?, ?, ?, ?)",
                    (rel, _parent(rel), len(data), file_mode, now, now, rev),
                ).lastrowid
                assert entry_id is not None
                db.execute(_TOUCH, (now, now, _parent(rel)))
                self._record(db, "create", rel, author, now, rev=rev)
            else:
                entry_id, kind, current = row
                if kind == "dir":
                    raise IsADirectory(f"'{rel}' is a directory", path=rel)
                if kind == "symlink":
                    raise AlreadyExists(
                        f"'{rel}' is a symlink; memfs does not write through symlinks", path=rel
                    )
                if expected_rev == 0:
                    raise AlreadyExists(f"'{rel}' already exists", path=rel)
                if expected_rev is not None and expected_rev != current:
                    raise Conflict(
                        f"'{rel}' changed: expected revision {expected_rev}, current is {current}",
                        path=rel,
                    )
                rev = self._next_rev(db)
                db.execute(
                    "UPDATE entries SET size = ?, mtime_ns = ?, ctime_ns = ?, rev = ? WHERE id = ?",
                    (len(data), now, now, rev, entry_id),
                )
                self._record(db, "modify", rel, author, now, rev=rev)
            self._add_revision(db, entry_id, rev, data, author, now)
            return Entry(*db.execute(_STAT, (rel,)).fetchone())

    def mkdir(
        self,
        path: str,
        *,
        author: str,
        mode: int = DEFAULT_DIR_MODE,
        parents: bool = False,
        exist_ok: bool = False,
    ) -> Entry:
        rel = parse_rel(path).rel
        now = time.time_ns()
        with self._tx() as db:
            row = db.execute(_STAT, (rel,)).fetchone()
            if row is not None:
                if exist_ok and row[1] == "dir":
                    return Entry(*row)
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(db, rel, author, now, parents)
            self._insert_dir(db, rel, author, now, mode)
            return Entry(*db.execute(_STAT, (rel,)).fetchone())

    def symlink(self, path: str, target: str, *, author: str) -> Entry:
        rel = self._valid(path)
        if not isinstance(target, str) or not target or "\x00" in target:
            raise StoreUnavailable("a symlink target must be non-empty text without NUL")
        size = len(target.encode("utf-8", errors="surrogateescape"))
        if size > 4096:
            raise TooLarge(f"the symlink target for '{rel}' is longer than 4096 bytes", path=rel)
        now = time.time_ns()
        with self._tx() as db:
            if db.execute(_LOOKUP, (rel,)).fetchone() is not None:
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(db, rel, author, now, False)
            rev = self._next_rev(db)
            db.execute(
                "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns, rev,"
                " target) VALUES (?, ?, 'symlink', ?, 511, ?, ?, ?, ?)",
                (rel, _parent(rel), size, now, now, rev, target),
            )
            db.execute(_TOUCH, (now, now, _parent(rel)))
            self._record(db, "symlink", rel, author, now, rev=rev)
            return Entry(*db.execute(_STAT, (rel,)).fetchone())

    def delete(self, path: str, *, author: str, recursive: bool = False) -> None:
        rel = self._valid(path, what="target")
        now = time.time_ns()
        with self._tx() as db:
            row = db.execute(_LOOKUP, (rel,)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            victims = db.execute(
                f"SELECT id, path, kind FROM entries WHERE {_SUBTREE} ORDER BY path DESC",
                {"p": rel},
            ).fetchall()
            if len(victims) > 1 and not recursive:
                raise DirectoryNotEmpty(f"the directory '{rel}' is not empty", path=rel)
            self._remove(db, rel, victims, author, now)
            db.execute(_TOUCH, (now, now, _parent(rel)))

    def _remove(
        self,
        db: sqlite3.Connection,
        top: str,
        victims: list[tuple[int, str, str]],
        author: str,
        now: int,
    ) -> None:
        # One record per removed entry, children before their directory, so a follower
        # of the feed learns every path that disappeared without walking anything.
        db.executemany(
            _RECORD,
            [
                (("rmdir" if kind == "dir" else "delete"), path, None, author, now, None)
                for _, path, kind in victims
            ],
        )
        db.execute(
            f"DELETE FROM revisions WHERE entry_id IN (SELECT id FROM entries WHERE {_SUBTREE})",
            {"p": top},
        )
        db.execute(f"DELETE FROM entries WHERE {_SUBTREE}", {"p": top})

    def rename(self, src: str, dst: str, *, author: str, overwrite: bool = False) -> None:
        src = self._valid(src, what="source")
        dst = self._valid(dst, what="destination")
        if src == dst:
            # rename(2) of a name onto itself succeeds and changes nothing
            self.stat(src)
            return
        if dst.startswith(src + "/"):
            raise InvalidMove(f"cannot move '{src}' into itself ('{dst}')", path=src)
        now = time.time_ns()
        with self._tx() as db:
            row = db.execute(_LOOKUP, (src,)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{src}'", path=src)
            src_kind = row[1]
            self._ensure_parent(db, dst, author, now, False)
            existing = db.execute(_LOOKUP, (dst,)).fetchone()
            if existing is not None:
                self._replace(db, src, src_kind, dst, existing[1], overwrite, author, now)
            db.execute(
                "UPDATE entries SET path = :dst || substr(path, :n + 1), parent = CASE"
                " WHEN path = :p THEN :dparent ELSE :dst || substr(parent, :n + 1) END"
                f" WHERE {_SUBTREE}",
                {"p": src, "dst": dst, "n": len(src), "dparent": _parent(dst)},
            )
            db.execute("UPDATE entries SET ctime_ns = ? WHERE path = ?", (now, dst))
            db.execute(_TOUCH, (now, now, _parent(src)))
            db.execute(_TOUCH, (now, now, _parent(dst)))
            self._record(db, "rename", dst, author, now, old_path=src)

    def _replace(
        self,
        db: sqlite3.Connection,
        src: str,
        src_kind: str,
        dst: str,
        dst_kind: str,
        overwrite: bool,
        author: str,
        now: int,
    ) -> None:
        """Remove ``dst`` so ``src`` can take its name, if the rules allow it."""
        if not overwrite:
            raise AlreadyExists(f"the destination '{dst}' already exists", path=dst)
        if src_kind == "dir" and dst_kind != "dir":
            raise NotADirectory(f"cannot replace the non-directory '{dst}' with a directory")
        if src_kind != "dir" and dst_kind == "dir":
            raise IsADirectory(f"cannot replace the directory '{dst}' with a file", path=dst)
        victims = db.execute(
            f"SELECT id, path, kind FROM entries WHERE {_SUBTREE} ORDER BY path DESC",
            {"p": dst},
        ).fetchall()
        if len(victims) > 1:
            raise DirectoryNotEmpty(f"the directory '{dst}' is not empty", path=dst)
        # The rename record that follows says dst was replaced; no separate delete.
        db.execute("DELETE FROM revisions WHERE entry_id = ?", (victims[0][0],))
        db.execute("DELETE FROM entries WHERE id = ?", (victims[0][0],))

    def set_attrs(
        self,
        path: str,
        *,
        author: str,
        mode: int | None = None,
        uid: int | None = None,
        gid: int | None = None,
        mtime_ns: int | None = None,
    ) -> Entry:
        rel = parse_rel(path).rel
        now = time.time_ns()
        with self._tx() as db:
            if db.execute(_LOOKUP, (rel,)).fetchone() is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            db.execute(
                "UPDATE entries SET mode = coalesce(?, mode), uid = coalesce(?, uid),"
                " gid = coalesce(?, gid), mtime_ns = coalesce(?, mtime_ns), ctime_ns = ?"
                " WHERE path = ?",
                (None if mode is None else mode & 0o7777, uid, gid, mtime_ns, now, rel),
            )
            self._record(db, "attr", rel, author, now)
            return Entry(*db.execute(_STAT, (rel,)).fetchone())

    def truncate(self, path: str, size: int, *, author: str) -> Entry:
        rel = self._valid(path)
        if size < 0:
            raise TooLarge(f"cannot truncate '{rel}' to a negative size", path=rel)
        self._check_size(rel, size)
        now = time.time_ns()
        with self._tx() as db:
            row = db.execute(_READ, (rel,)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            self._need_file(Entry(*row[:-1]))
            old = bytes(row[-1])
            data = old[:size] + b"\x00" * (size - len(old))
            entry_id = db.execute(_LOOKUP, (rel,)).fetchone()[0]
            rev = self._next_rev(db)
            db.execute(
                "UPDATE entries SET size = ?, mtime_ns = ?, ctime_ns = ?, rev = ? WHERE id = ?",
                (size, now, now, rev, entry_id),
            )
            self._record(db, "modify", rel, author, now, rev=rev)
            self._add_revision(db, entry_id, rev, data, author, now)
            return Entry(*db.execute(_STAT, (rel,)).fetchone())

    # --- history and change feed ---------------------------------------------------------
    def history(self, path: str, limit: int | None = None) -> list[Revision]:
        entry = self.stat(path)
        self._need_file(entry)
        try:
            rows = (
                self._db()
                .execute(
                    "SELECT r.rev, r.author, r.time_ns, r.size, r.sha256 FROM revisions r"
                    " JOIN entries e ON e.id = r.entry_id WHERE e.path = ?"
                    " ORDER BY r.rev DESC LIMIT ?",
                    (path, -1 if limit is None else limit),
                )
                .fetchall()
            )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        return [Revision(path, *row) for row in rows]

    def read_revision(self, path: str, rev: int) -> bytes:
        entry = self.stat(path)
        self._need_file(entry)
        try:
            row = (
                self._db()
                .execute(
                    "SELECT r.content FROM revisions r JOIN entries e ON e.id = r.entry_id"
                    " WHERE e.path = ? AND r.rev = ?",
                    (path, rev),
                )
                .fetchone()
            )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        if row is None:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        return bytes(row[0])

    def changes(self, since: int = 0, limit: int | None = None) -> list[Change]:
        try:
            rows = (
                self._db()
                .execute(
                    "SELECT seq, kind, path, author, time_ns, old_path, rev FROM changes"
                    " WHERE seq > ? ORDER BY seq LIMIT ?",
                    (since, -1 if limit is None else limit),
                )
                .fetchall()
            )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        return [Change(*row) for row in rows]

    def last_seq(self) -> int:
        try:
            row = self._db().execute("SELECT max(seq) FROM changes").fetchone()
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        return int(row[0] or 0)

    # --- housekeeping ------------------------------------------------------------------------
    def usage(self) -> Usage:
        try:
            files, dirs, total = (
                self._db()
                .execute(
                    "SELECT count(*) FILTER (WHERE kind = 'file'),"
                    " count(*) FILTER (WHERE kind = 'dir' AND path != ''),"
                    " coalesce(sum(size) FILTER (WHERE kind = 'file'), 0) FROM entries"
                )
                .fetchone()
            )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        return Usage(files=files, dirs=dirs, bytes=total)

    def close(self) -> None:
        with self._conns_lock:
            self._closed = True
            conns, self._conns = list(self._conns.values()), {}
        for db in conns:
            db.close()
