"""The SQLite store's housekeeping: caps, last use, checkpoints and redaction.

Caps compare against the ``counters`` rows that triggers keep (schema 4), inside the
mutation's own transaction, so two writers can never both pass a cap. Last use is the
newest revision's time or ``entries.used_ns`` (a model read), whichever is later.
Redaction removes a content blob for good: its rows are zeroed on delete
(``secure_delete``) and the WAL is checkpointed and truncated after the commit, so the
bytes are neither in the database file nor in its log once the call returns.
"""

from __future__ import annotations

import sqlite3

from memfs.errors import AlreadyExists, Conflict, NotFound, StoreError
from memfs.store import rules
from memfs.store.base import Checkpoint, Entry, Revision
from memfs.store.sqlite_conn import COLS
from memfs.store.sqlite_history import REDACTED, SqliteHistory
from memfs.store.sqlite_schema import translate

# A model read within this long of the recorded last use writes nothing: expiry works
# in days, and a view must not pay for a write transaction each time.
USE_GRAIN_NS = 3600 * 10**9


class SqliteKeeping(SqliteHistory):
    # --- caps (called by the mutations, inside their transaction) -------------------------
    def _check_caps(self, db: sqlite3.Connection, path: str, grow: int, new_files: int) -> None:
        """Refuse a mutation adding ``grow`` bytes and ``new_files`` files past a cap."""
        options = self.options
        if options.max_tree_bytes is None and options.max_files is None:
            return
        rules.check_caps(
            path,
            grow=grow,
            new_files=new_files,
            total_bytes=self._counter(db, "bytes"),
            files=self._counter(db, "files"),
            max_tree_bytes=options.max_tree_bytes,
            max_files=options.max_files,
        )

    # --- last use -----------------------------------------------------------------------
    def mark_used(self, paths: list[str]) -> None:
        now = self._now()
        fresh = now - USE_GRAIN_NS
        db = self._db()
        try:
            stale = [
                path
                for path in dict.fromkeys(paths)
                if (row := db.execute(_LAST_USE, (path,)).fetchone()) is not None and row[0] < fresh
            ]
            if not stale:
                return
            with self._tx() as db:
                db.executemany(
                    "UPDATE entries SET used_ns = ? WHERE path = ? AND kind = 'file'",
                    [(now, path) for path in stale],
                )
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def unused(self, before_ns: int) -> list[Entry]:
        cols = ", ".join("e." + c.strip() for c in COLS.split(","))
        try:
            rows = (
                self._db()
                .execute(
                    f"SELECT {cols} FROM entries e JOIN revisions r ON r.path = e.path"
                    " AND r.rev = e.rev WHERE e.kind = 'file'"
                    " AND max(r.time_ns, coalesce(e.used_ns, 0)) < ? ORDER BY e.path",
                    (before_ns,),
                )
                .fetchall()
            )
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return [Entry(*row) for row in rows]

    # --- checkpoints ----------------------------------------------------------------------
    def set_checkpoint(self, name: str, *, author: str, seq: int | None = None) -> Checkpoint:
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise StoreError("a checkpoint name must be 1 to 200 characters of text")
        with self._tx() as db:
            last = int(db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
            point = last if seq is None else seq
            if point < 0 or point > last:
                raise NotFound(f"there is no change {point} (the last is {last})")
            if db.execute("SELECT 1 FROM checkpoints WHERE name = ?", (name,)).fetchone():
                raise AlreadyExists(f"a checkpoint named '{name}' already exists")
            checkpoint = Checkpoint(name, point, self._now(), author)
            db.execute(
                "INSERT INTO checkpoints (name, seq, time_ns, author) VALUES (?, ?, ?, ?)",
                (checkpoint.name, checkpoint.seq, checkpoint.time_ns, checkpoint.author),
            )
            return checkpoint

    def checkpoints(self) -> list[Checkpoint]:
        try:
            rows = (
                self._db()
                .execute("SELECT name, seq, time_ns, author FROM checkpoints ORDER BY seq, time_ns")
                .fetchall()
            )
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return [Checkpoint(*row) for row in rows]

    def delete_checkpoint(self, name: str) -> None:
        with self._tx() as db:
            if db.execute("DELETE FROM checkpoints WHERE name = ?", (name,)).rowcount == 0:
                raise NotFound(f"there is no checkpoint named '{name}'")

    # --- redaction ------------------------------------------------------------------------
    def redact(self, path: str, rev: int, *, author: str) -> list[Revision]:
        self.history(path, limit=None)  # NotFound/IsADirectory as history would say
        now = self._now()
        db = self._db()
        try:
            db.execute("PRAGMA secure_delete = ON")
            try:
                with self._tx() as db:
                    sha = self._retained_sha(db, path, rev)
                    if sha.startswith(REDACTED):
                        return self._redacted_rows(db, sha)
                    live = db.execute(
                        "SELECT e.path FROM entries e JOIN revisions r ON r.path = e.path"
                        " AND r.rev = e.rev WHERE e.kind = 'file' AND r.sha256 = ?",
                        (sha,),
                    ).fetchone()
                    if live is not None:
                        raise Conflict(
                            f"revision {rev} of '{path}' is the current content of"
                            f" '{live[0]}'; change or delete that file first, then redact",
                            path=live[0],
                        )
                    # Renaming the hash in the rows (an UPDATE: the reference-count
                    # triggers do not fire) detaches them from the blob, so the same bytes
                    # written again later get a fresh blob and an honest count.
                    db.execute(
                        "UPDATE revisions SET sha256 = ?, redacted_by = ?, redacted_ns = ?"
                        " WHERE sha256 = ?",
                        (REDACTED + sha, author, now, sha),
                    )
                    blob = db.execute(
                        "SELECT blob_id FROM blob_refs WHERE sha256 = ?", (sha,)
                    ).fetchone()
                    if blob is not None:
                        db.execute("DELETE FROM blobs WHERE id = ?", (blob[0],))
                    db.execute("DELETE FROM blob_refs WHERE sha256 = ?", (sha,))
                    redacted = self._redacted_rows(db, REDACTED + sha)
            finally:
                db.execute("PRAGMA secure_delete = OFF")
            # The blob's pages may still be in the WAL: copy it back (the freed pages
            # were zeroed) and truncate it, waiting up to busy_timeout for readers.
            if not db.in_transaction:  # a batch's caller commits first
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return redacted

    def _retained_sha(self, db: sqlite3.Connection, path: str, rev: int) -> str:
        if not any(r.rev == rev for r in self._history_rows(db, path)):
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        row = db.execute(
            "SELECT sha256 FROM revisions WHERE path = ? AND rev = ?", (path, rev)
        ).fetchone()
        return str(row[0])

    def _redacted_rows(self, db: sqlite3.Connection, stored_sha: str) -> list[Revision]:
        rows = db.execute(
            f"SELECT path, {_REV_COLS} FROM revisions WHERE sha256 = ? ORDER BY rev",
            (stored_sha,),
        ).fetchall()
        return [self._revision(row[0], row[1:]) for row in rows]


_LAST_USE = (
    "SELECT max(r.time_ns, coalesce(e.used_ns, 0)) FROM entries e JOIN revisions r"
    " ON r.path = e.path AND r.rev = e.rev WHERE e.path = ? AND e.kind = 'file'"
)
_REV_COLS = "rev, author, time_ns, size, sha256, redacted_by, redacted_ns"
