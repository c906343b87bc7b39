"""The PostgreSQL store's mutations, each one transaction holding its tree's row lock.

The same rules, in the same order of checks, as :mod:`memfs.store.sqlite_writes`:
every path is checked by the path gate before anything is stored, and every mutation
appends its change records in the same transaction (see :mod:`memfs.store.base`).
"""

from __future__ import annotations

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
from memfs.store.postgres_conn import Tx
from memfs.store.postgres_history import STAT
from memfs.store.postgres_keeping import PgKeeping
from memfs.store.sqlite_conn import need_file, parent_of

LOOKUP = "SELECT kind, rev, size FROM memfs.entries WHERE tree = %s AND path = %s"
TOUCH = "UPDATE memfs.entries SET mtime_ns = %s, ctime_ns = %s WHERE tree = %s AND path = %s"
# Descendants of P are the paths in [P/, P0) in byte order (COLLATE "C").
SUBTREE = "tree = %(t)s AND (path = %(p)s OR (path >= %(p)s || '/' AND path < %(p)s || '0'))"
READ_CONTENT = (
    "SELECT b.content FROM memfs.entries e JOIN memfs.revisions r ON r.tree = e.tree"
    " AND r.path = e.path AND r.rev = e.rev JOIN memfs.blobs b ON b.tree = r.tree"
    " AND b.sha256 = r.sha256 WHERE e.tree = %s AND e.path = %s"
)


class PgWrites(PgKeeping):
    """Mutations of the store; reads live in :class:`memfs.store.postgres.PostgresStore`."""

    def _entry(self, tx: Tx, path: str) -> Entry:
        row = tx.db.execute(STAT, (self.tree, path)).fetchone()
        assert row is not None
        return Entry(*row)

    def _lookup(self, tx: Tx, path: str) -> tuple[str, int, int] | None:
        """``(kind, rev, size)`` of the entry at ``path``, or None."""
        row = tx.db.execute(LOOKUP, (self.tree, path)).fetchone()
        return None if row is None else (row[0], int(row[1]), int(row[2]))

    def _ensure_parent(self, tx: Tx, path: str, author: str, now: int, parents: bool) -> None:
        missing: list[str] = []
        parent = parent_of(path)
        while True:
            found = self._lookup(tx, parent)
            if found is not None:
                if found[0] != "dir":
                    raise NotADirectory(f"'{parent}' is not a directory", path=parent)
                break
            if not parents:
                raise NotFound(f"the parent directory '{parent}' does not exist", path=parent)
            missing.append(parent)
            parent = parent_of(parent)
        for directory in reversed(missing):
            self._insert_dir(tx, directory, author, now, DEFAULT_DIR_MODE)

    def _insert_dir(self, tx: Tx, path: str, author: str, now: int, mode: int) -> None:
        rev = tx.next_rev()
        tx.db.execute(
            "INSERT INTO memfs.entries (tree, path, parent, kind, size, mode, mtime_ns,"
            " ctime_ns, rev) VALUES (%s, %s, %s, 'dir', 0, %s, %s, %s, %s)",
            (self.tree, path, parent_of(path), mode & 0o7777, now, now, rev),
        )
        tx.db.execute(TOUCH, (now, now, self.tree, parent_of(path)))
        tx.record("mkdir", path, author, now, rev=rev)

    # --- writing ---------------------------------------------------------------------------
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
        with self._tx() as tx:
            found = self._lookup(tx, rel)
            if found is None:
                if expected_rev is not None and expected_rev != 0:
                    raise Conflict(
                        f"'{rel}' changed: expected revision {expected_rev}, but it no"
                        " longer exists",
                        path=rel,
                    )
                self._check_caps(tx, rel, len(data), 1)
                self._ensure_parent(tx, rel, author, now, parents)
                self._revive(tx, rel, now)
                rev = tx.next_rev()
                file_mode = DEFAULT_FILE_MODE if mode is None else mode & 0o7777
                tx.db.execute(
                    "INSERT INTO memfs.entries (tree, path, parent, kind, size, mode, mtime_ns,"
                    " ctime_ns, rev) VALUES (%s, %s, %s, 'file', %s, %s, %s, %s, %s)",
                    (self.tree, rel, parent_of(rel), len(data), file_mode, now, now, rev),
                )
                tx.db.execute(TOUCH, (now, now, self.tree, parent_of(rel)))
                kind = "create"
            else:
                kind, current, old_size = found
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
                self._check_caps(tx, rel, len(data) - old_size, 0)
                rev = tx.next_rev()
                tx.db.execute(
                    "UPDATE memfs.entries SET size = %s, mtime_ns = %s, ctime_ns = %s, rev = %s"
                    " WHERE tree = %s AND path = %s",
                    (len(data), now, now, rev, self.tree, rel),
                )
                kind = "modify"
            sha = self._add_revision(tx, rel, rev, data, author, now)
            tx.record(kind, rel, author, now, rev=rev, size=len(data), sha256=sha)
            self._sweep(tx, now)
            return self._entry(tx, rel)

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
        with self._tx() as tx:
            row = tx.db.execute(STAT, (self.tree, rel)).fetchone()
            if row is not None:
                if exist_ok and row[1] == "dir":
                    return Entry(*row)
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(tx, rel, author, now, parents)
            self._insert_dir(tx, rel, author, now, mode)
            return self._entry(tx, rel)

    def symlink(self, path: str, target: str, *, author: str) -> Entry:
        rel = rules.target(path)
        if not isinstance(target, str) or not target or "\x00" in target:
            raise StoreError("a symlink target must be non-empty text without NUL", path=rel)
        try:
            size = len(target.encode("utf-8"))
        except UnicodeEncodeError:
            raise StoreError("a symlink target must be UTF-8 text", path=rel) from None
        if size > 4096:
            raise TooLarge(f"the symlink target for '{rel}' is longer than 4096 bytes", path=rel)
        now = self._now()
        with self._tx() as tx:
            if self._lookup(tx, rel) is not None:
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(tx, rel, author, now, False)
            rev = tx.next_rev()
            tx.db.execute(
                "INSERT INTO memfs.entries (tree, path, parent, kind, size, mode, mtime_ns,"
                " ctime_ns, rev, target) VALUES (%s, %s, %s, 'symlink', %s, 511, %s, %s, %s, %s)",
                (self.tree, rel, parent_of(rel), size, now, now, rev, target),
            )
            tx.db.execute(TOUCH, (now, now, self.tree, parent_of(rel)))
            tx.record("symlink", rel, author, now, rev=rev)
            return self._entry(tx, rel)

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
        with self._tx() as tx:
            found = self._lookup(tx, rel)
            if found is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            if expected_rev is not None and found[1] != expected_rev:
                raise Conflict(
                    f"'{rel}' changed: expected revision {expected_rev}, current is {found[1]}",
                    path=rel,
                )
            victims = self._subtree(tx, rel)
            if len(victims) > 1 and not recursive:
                raise DirectoryNotEmpty(f"the directory '{rel}' is not empty", path=rel)
            self._remove(tx, rel, victims, author, now)
            tx.db.execute(TOUCH, (now, now, self.tree, parent_of(rel)))
            self._sweep(tx, now)

    def _subtree(self, tx: Tx, top: str) -> list[tuple[str, str]]:
        """``(path, kind)`` of ``top`` and everything below it, children first."""
        rows = tx.db.execute(
            f"SELECT path, kind FROM memfs.entries WHERE {SUBTREE} ORDER BY path DESC",
            {"t": self.tree, "p": top},
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def _remove(
        self, tx: Tx, top: str, victims: list[tuple[str, str]], author: str, now: int
    ) -> None:
        # One record per removed entry, children before their directory, so a follower
        # of the feed learns every path that disappeared without walking anything.
        for path, kind in victims:
            tx.record("rmdir" if kind == "dir" else "delete", path, author, now)
        self._tombstone(tx, [p for p, kind in victims if kind == "file"], now, moved=False)
        tx.db.execute(f"DELETE FROM memfs.entries WHERE {SUBTREE}", {"t": self.tree, "p": top})

    def rename(self, src: str, dst: str, *, author: str, overwrite: bool = False) -> None:
        src = rules.target(src, what="source")
        dst = rules.target(dst, what="destination")
        if src == dst:
            with self._tx() as tx:
                if self._lookup(tx, src) is None:
                    raise NotFound(f"no entry at '{src}'", path=src)
            return
        rules.check_move(src, dst)
        now = self._now()
        with self._tx() as tx:
            found = self._lookup(tx, src)
            if found is None:
                raise NotFound(f"no entry at '{src}'", path=src)
            src_kind = found[0]
            if src_kind == "dir":
                rules.check_reach(src, dst, self._extent(tx.db, src))
            self._ensure_parent(tx, dst, author, now, False)
            existing = self._lookup(tx, dst)
            if existing is not None:
                self._replace(tx, src, src_kind, dst, existing[0], overwrite, now)
            moved = [
                r[0]
                for r in tx.db.execute(
                    f"SELECT path FROM memfs.entries WHERE kind = 'file' AND {SUBTREE}",
                    {"t": self.tree, "p": src},
                ).fetchall()
            ]
            self._tombstone(tx, moved, now, moved=True)
            tx.db.execute(
                "UPDATE memfs.entries SET path = %(dst)s || substr(path, %(n)s + 1),"
                " parent = CASE WHEN path = %(p)s THEN %(dparent)s"
                " ELSE %(dst)s || substr(parent, %(n)s + 1) END"
                f" WHERE {SUBTREE}",
                {"t": self.tree, "p": src, "dst": dst, "n": len(src), "dparent": parent_of(dst)},
            )
            tx.db.execute(
                "UPDATE memfs.entries SET ctime_ns = %s WHERE tree = %s AND path = %s",
                (now, self.tree, dst),
            )
            tx.db.execute(TOUCH, (now, now, self.tree, parent_of(src)))
            tx.db.execute(TOUCH, (now, now, self.tree, parent_of(dst)))
            last: tuple[int | None, int | None, str | None] = (None, None, None)
            for path in moved:
                last = self._arrive(tx, path, dst + path[len(src) :], author, now)
            # A file's rename carries its content; a directory's only its last arrival.
            size, sha = (last[1], last[2]) if src_kind == "file" else (None, None)
            tx.record("rename", dst, author, now, old_path=src, rev=last[0], size=size, sha256=sha)
            self._sweep(tx, now)

    def _replace(
        self,
        tx: Tx,
        src: str,
        src_kind: str,
        dst: str,
        dst_kind: str,
        overwrite: bool,
        now: int,
    ) -> None:
        """Remove ``dst`` so ``src`` can take its name, if the rules allow it."""
        entries = len(self._subtree(tx, dst))
        rules.check_replace(src_kind, dst, dst_kind, overwrite=overwrite, entries=entries)
        # The rename record that follows says dst was replaced; no separate delete. The
        # history of dst stays: an arriving file continues it, anything else leaves it
        # as a deleted file's.
        if dst_kind == "file" and src_kind != "file":
            self._tombstone(tx, [dst], now, moved=False)
        tx.db.execute("DELETE FROM memfs.entries WHERE tree = %s AND path = %s", (self.tree, dst))

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
        with self._tx() as tx:
            if self._lookup(tx, rel) is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            tx.db.execute(
                "UPDATE memfs.entries SET mode = coalesce(%s, mode), uid = coalesce(%s, uid),"
                " gid = coalesce(%s, gid), mtime_ns = coalesce(%s, mtime_ns), ctime_ns = %s"
                " WHERE tree = %s AND path = %s",
                (None if mode is None else mode & 0o7777, uid, gid, mtime_ns, now, self.tree, rel),
            )
            tx.record("attr", rel, author, now)
            return self._entry(tx, rel)

    def truncate(self, path: str, size: int, *, author: str) -> Entry:
        rel = rules.target(path)
        if size < 0:
            raise TooLarge(f"cannot truncate '{rel}' to a negative size", path=rel)
        rules.check_size(rel, size, self.options.max_file_bytes)
        now = self._now()
        with self._tx() as tx:
            row = tx.db.execute(STAT, (self.tree, rel)).fetchone()
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            need_file(Entry(*row))
            self._check_caps(tx, rel, size - int(row[2]), 0)
            content = tx.db.execute(READ_CONTENT, (self.tree, rel)).fetchone()
            old = bytes(content[0]) if content else b""
            data = old[:size] + b"\x00" * (size - len(old))
            rev = tx.next_rev()
            tx.db.execute(
                "UPDATE memfs.entries SET size = %s, mtime_ns = %s, ctime_ns = %s, rev = %s"
                " WHERE tree = %s AND path = %s",
                (size, now, now, rev, self.tree, rel),
            )
            sha = self._add_revision(tx, rel, rev, data, author, now)
            tx.record("modify", rel, author, now, rev=rev, size=size, sha256=sha)
            self._sweep(tx, now)
            return self._entry(tx, rel)
