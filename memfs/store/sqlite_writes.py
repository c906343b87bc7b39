"""The SQLite store's mutations, each one ``BEGIN IMMEDIATE`` transaction.

Every path is checked by the path gate before anything is stored, and every mutation
appends its change records in the same transaction (see :mod:`memfs.store.base`).
"""

from __future__ import annotations

import sqlite3

from memfs.errors import (
    AlreadyExists,
    Conflict,
    DirectoryNotEmpty,
    IsADirectory,
    NotADirectory,
    NotFound,
    StoreError,
    TooLarge,
)
from memfs.paths import parse_rel
from memfs.store import rules
from memfs.store.base import DEFAULT_DIR_MODE, DEFAULT_FILE_MODE, Entry
from memfs.store.sqlite_conn import (
    LOOKUP,
    READ,
    RECORD,
    STAT,
    SUBTREE,
    TOUCH,
    need_file,
    parent_of,
    subtree_extent,
    unpack_blob,
)
from memfs.store.sqlite_keeping import SqliteKeeping
from memfs.store.sqlite_search import SqliteSearch

# A removal record's rev, size and sha256: it left no content behind.
_NO_CONTENT = (None, None, None)


class SqliteWrites(SqliteSearch, SqliteKeeping):
    """Mutations of the store; reads live in :class:`memfs.store.sqlite.SqliteStore`."""

    def _ensure_parent(
        self, db: sqlite3.Connection, path: str, author: str, now: int, parents: bool
    ) -> None:
        missing: list[str] = []
        parent = parent_of(path)
        while True:
            row = db.execute("SELECT kind FROM entries WHERE path = ?", (parent,)).fetchone()
            if row is not None:
                if row[0] != "dir":
                    raise NotADirectory(f"'{parent}' is not a directory", path=parent)
                break
            if not parents:
                raise NotFound(f"the parent directory '{parent}' does not exist", path=parent)
            missing.append(parent)
            parent = parent_of(parent)
        for directory in reversed(missing):
            self._insert_dir(db, directory, author, now, DEFAULT_DIR_MODE)

    def _insert_dir(
        self, db: sqlite3.Connection, path: str, author: str, now: int, mode: int
    ) -> None:
        rev = self._next_rev(db)
        db.execute(
            "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns, rev)"
            " VALUES (?, ?, 'dir', 0, ?, ?, ?, ?)",
            (path, parent_of(path), mode & 0o7777, now, now, rev),
        )
        db.execute(TOUCH, (now, now, parent_of(path)))
        self._record(db, "mkdir", path, author, now, rev=rev)

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
        rel = rules.target(path)
        data = bytes(data)
        rules.check_size(rel, len(data), self.options.max_file_bytes)
        now = self._now()
        with self._tx() as db:
            row = db.execute(LOOKUP, (rel,)).fetchone()
            if row is None:
                if expected_rev is not None and expected_rev != 0:
                    raise Conflict(
                        f"'{rel}' changed: expected revision {expected_rev}, but it no"
                        " longer exists",
                        path=rel,
                    )
                self._check_caps(db, rel, len(data), 1)
                self._ensure_parent(db, rel, author, now, parents)
                self._revive(db, rel, now)
                rev = self._next_rev(db)
                file_mode = DEFAULT_FILE_MODE if mode is None else mode & 0o7777
                entry_id = db.execute(
                    "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns,"
                    " rev) VALUES (?, ?, 'file', ?, ?, ?, ?, ?)",
                    (rel, parent_of(rel), len(data), file_mode, now, now, rev),
                ).lastrowid
                assert entry_id is not None
                db.execute(TOUCH, (now, now, parent_of(rel)))
                kind = "create"
            else:
                entry_id, kind, current = row
                if expected_rev == 0:
                    raise AlreadyExists(f"'{rel}' already exists", path=rel)
                if kind == "dir":
                    raise IsADirectory(f"'{rel}' is a directory", path=rel)
                if kind == "symlink":
                    raise AlreadyExists(
                        f"'{rel}' is a symlink; memfs does not write through symlinks", path=rel
                    )
                if expected_rev is not None and expected_rev != current:
                    raise Conflict(
                        f"'{rel}' changed: expected revision {expected_rev}, current is {current}",
                        path=rel,
                    )
                old_size = db.execute("SELECT size FROM entries WHERE id = ?", (entry_id,))
                self._check_caps(db, rel, len(data) - old_size.fetchone()[0], 0)
                rev = self._next_rev(db)
                db.execute(
                    "UPDATE entries SET size = ?, mtime_ns = ?, ctime_ns = ?, rev = ? WHERE id = ?",
                    (len(data), now, now, rev, entry_id),
                )
                kind = "modify"
            sha = self._add_revision(db, rel, rev, data, author, now)
            self._record(db, kind, rel, author, now, rev=rev, size=len(data), sha256=sha)
            self._index(db, entry_id, rel, rev, data)
            self._sweep(db, now)
            return Entry(*db.execute(STAT, (rel,)).fetchone())

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
        now = self._now()
        with self._tx() as db:
            row = db.execute(STAT, (rel,)).fetchone()
            if row is not None:
                if exist_ok and row[1] == "dir":
                    return Entry(*row)
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(db, rel, author, now, parents)
            self._insert_dir(db, rel, author, now, mode)
            return Entry(*db.execute(STAT, (rel,)).fetchone())

    def symlink(self, path: str, target: str, *, author: str) -> Entry:
        rel = rules.target(path)
        if not isinstance(target, str) or not target or "\x00" in target:
            raise StoreError("a symlink target must be non-empty text without NUL", path=rel)
        size = len(target.encode("utf-8", errors="surrogateescape"))
        if size > 4096:
            raise TooLarge(f"the symlink target for '{rel}' is longer than 4096 bytes", path=rel)
        now = self._now()
        with self._tx() as db:
            if db.execute(LOOKUP, (rel,)).fetchone() is not None:
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(db, rel, author, now, False)
            rev = self._next_rev(db)
            db.execute(
                "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns, rev,"
                " target) VALUES (?, ?, 'symlink', ?, 511, ?, ?, ?, ?)",
                (rel, parent_of(rel), size, now, now, rev, target),
            )
            db.execute(TOUCH, (now, now, parent_of(rel)))
            self._record(db, "symlink", rel, author, now, rev=rev)
            return Entry(*db.execute(STAT, (rel,)).fetchone())

    def delete(
        self,
        path: str,
        *,
        author: str,
        recursive: bool = False,
        expected_rev: int | None = None,
    ) -> None:
        rel = rules.target(path, what="target")
        if expected_rev is not None and expected_rev < 1:
            raise ValueError(f"expected_rev must be a revision (>= 1), not {expected_rev}")
        now = self._now()
        with self._tx() as db:
            row = db.execute(LOOKUP, (rel,)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            if expected_rev is not None and row[2] != expected_rev:
                raise Conflict(
                    f"'{rel}' changed: expected revision {expected_rev}, current is {row[2]}",
                    path=rel,
                )
            victims = db.execute(
                f"SELECT id, path, kind FROM entries WHERE {SUBTREE} ORDER BY path DESC",
                {"p": rel},
            ).fetchall()
            if len(victims) > 1 and not recursive:
                raise DirectoryNotEmpty(f"the directory '{rel}' is not empty", path=rel)
            self._remove(db, rel, victims, author, now)
            db.execute(TOUCH, (now, now, parent_of(rel)))
            self._sweep(db, now)

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
            RECORD,
            [
                ("rmdir" if kind == "dir" else "delete", path, None, author, now, *_NO_CONTENT)
                for _, path, kind in victims
            ],
        )
        files = [path for _, path, kind in victims if kind == "file"]
        self._tombstone(db, files, now, moved=False)
        db.execute(f"DELETE FROM entries WHERE {SUBTREE}", {"p": top})

    def rename(self, src: str, dst: str, *, author: str, overwrite: bool = False) -> None:
        src = rules.target(src, what="source")
        dst = rules.target(dst, what="destination")
        if src == dst:
            # rename(2) of a name onto itself succeeds and changes nothing
            with self._tx() as db:
                if db.execute(LOOKUP, (src,)).fetchone() is None:
                    raise NotFound(f"no entry at '{src}'", path=src)
            return
        rules.check_move(src, dst)
        now = self._now()
        with self._tx() as db:
            row = db.execute(LOOKUP, (src,)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{src}'", path=src)
            src_kind = row[1]
            if src_kind == "dir":
                rules.check_reach(src, dst, subtree_extent(db, src))
            self._ensure_parent(db, dst, author, now, False)
            existing = db.execute(LOOKUP, (dst,)).fetchone()
            if existing is not None:
                self._replace(db, src, src_kind, dst, existing[1], overwrite, author, now)
            moved = db.execute(
                f"SELECT id, path FROM entries WHERE kind = 'file' AND ({SUBTREE})", {"p": src}
            ).fetchall()
            self._tombstone(db, [path for _, path in moved], now, moved=True)
            db.execute(
                "UPDATE entries SET path = :dst || substr(path, :n + 1), parent = CASE"
                " WHEN path = :p THEN :dparent ELSE :dst || substr(parent, :n + 1) END"
                f" WHERE {SUBTREE}",
                {"p": src, "dst": dst, "n": len(src), "dparent": parent_of(dst)},
            )
            db.execute("UPDATE entries SET ctime_ns = ? WHERE path = ?", (now, dst))
            db.execute(TOUCH, (now, now, parent_of(src)))
            db.execute(TOUCH, (now, now, parent_of(dst)))
            last: tuple[int | None, int | None, str | None] = (None, None, None)
            for entry_id, path in moved:
                last = self._arrive(db, entry_id, path, dst + path[len(src) :], author, now)
            # A file's rename carries its content; a directory's only its last arrival.
            size, sha = (last[1], last[2]) if src_kind == "file" else (None, None)
            self._record(
                db, "rename", dst, author, now, old_path=src, rev=last[0], size=size, sha256=sha
            )
            self._sweep(db, now)

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
        victims = db.execute(
            f"SELECT id, path, kind FROM entries WHERE {SUBTREE} ORDER BY path DESC",
            {"p": dst},
        ).fetchall()
        rules.check_replace(src_kind, dst, dst_kind, overwrite=overwrite, entries=len(victims))
        # The rename record that follows says dst was replaced; no separate delete. The
        # history of dst stays: an arriving file continues it, anything else leaves it
        # as a deleted file's.
        if dst_kind == "file" and src_kind != "file":
            self._tombstone(db, [dst], now, moved=False)
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
        now = self._now()
        with self._tx() as db:
            if db.execute(LOOKUP, (rel,)).fetchone() is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            db.execute(
                "UPDATE entries SET mode = coalesce(?, mode), uid = coalesce(?, uid),"
                " gid = coalesce(?, gid), mtime_ns = coalesce(?, mtime_ns), ctime_ns = ?"
                " WHERE path = ?",
                (None if mode is None else mode & 0o7777, uid, gid, mtime_ns, now, rel),
            )
            self._record(db, "attr", rel, author, now)
            return Entry(*db.execute(STAT, (rel,)).fetchone())

    def truncate(self, path: str, size: int, *, author: str) -> Entry:
        rel = rules.target(path)
        if size < 0:
            raise TooLarge(f"cannot truncate '{rel}' to a negative size", path=rel)
        rules.check_size(rel, size, self.options.max_file_bytes)
        now = self._now()
        with self._tx() as db:
            row = db.execute(READ, (rel,)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            need_file(Entry(*row[:-2]))
            self._check_caps(db, rel, size - row[2], 0)
            old = unpack_blob(row[-2], row[-1])
            data = old[:size] + b"\x00" * (size - len(old))
            entry_id = db.execute(LOOKUP, (rel,)).fetchone()[0]
            rev = self._next_rev(db)
            db.execute(
                "UPDATE entries SET size = ?, mtime_ns = ?, ctime_ns = ?, rev = ? WHERE id = ?",
                (size, now, now, rev, entry_id),
            )
            sha = self._add_revision(db, rel, rev, data, author, now)
            self._record(db, "modify", rel, author, now, rev=rev, size=size, sha256=sha)
            self._index(db, entry_id, rel, rev, data)
            self._sweep(db, now)
            return Entry(*db.execute(STAT, (rel,)).fetchone())

    # --- history and change feed ---------------------------------------------------------
