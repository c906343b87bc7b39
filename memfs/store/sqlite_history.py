"""Per-path revision history of the SQLite store: recording, retention and reading.

A revision row records the path it was made at (``revisions.path``); its content lives
once per SHA-256 in ``blobs``, shared by every row with that content: ``blob_refs``
counts those rows (triggers on ``revisions``) and the blob is deleted with the last.
A file's current content is the row named by ``entries.rev``, always the newest row of
its path.

A path that stops being a file gets a row in ``gone`` (``deleted_ns``; ``trim_ns``: from
when only its last revision counts, NULL once the older rows are physically gone;
``due_ns``: when the sweep next has rows to remove there):

- ``delete`` trims at once (``trim_ns`` = the delete's time);
- a rename's source (and every file of a moved directory) trims :data:`MOVED_GRACE_NS`
  later, because atomic saves move a file aside and bring a new one to its name within
  milliseconds (JetBrains, emacs and vim backups): the returning name must find its
  whole history.

Readers apply these rules through the store's clock, so what ``history`` shows never
depends on when the rows are physically removed. Removal is lazy: every mutation that
touches history removes at most :data:`SWEEP_ROWS` due rows (tombstones older than
``deleted_history_days``, then the older rows of trimmed paths), so no write pays for a
large backlog at once. A path that becomes a file again (a write creating it, a rename
arriving) first has its due removals done, then continues its history.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from memfs.errors import NotFound, Redacted
from memfs.store import rules
from memfs.store.base import Entry, Revision
from memfs.store.rules import DAY_NS
from memfs.store.sqlite_conn import STAT, SqliteConnections, need_file, pack_blob, unpack_blob
from memfs.store.sqlite_schema import translate

MOVED_GRACE_NS = 10 * 60 * 10**9
SWEEP_ROWS = 100

_PRUNE_LIVE = (
    "DELETE FROM revisions WHERE path = :p AND rev < (SELECT rev FROM revisions"
    " WHERE path = :p ORDER BY rev DESC LIMIT 1 OFFSET :keep)"
)
_HISTORY = (
    "SELECT rev, author, time_ns, size, sha256, redacted_by, redacted_ns FROM revisions"
    " WHERE path = ? ORDER BY rev DESC LIMIT ?"
)
# A redacted revision's stored hash carries this prefix: it no longer names a blob.
REDACTED = "redacted:"


class SqliteHistory(SqliteConnections):
    """History rows for :class:`memfs.store.sqlite_writes.SqliteWrites` and the reads."""

    def _expired(self, deleted_ns: int, trim_ns: int | None, now: int) -> bool:
        return rules.history_expired(deleted_ns, trim_ns, now, self.options.deleted_history_days)

    # --- recording ----------------------------------------------------------------------
    def _add_revision(
        self, db: sqlite3.Connection, path: str, rev: int, data: bytes, author: str, now: int
    ) -> str:
        """Add revision ``rev`` of ``path`` holding ``data``; its SHA-256."""
        sha = hashlib.sha256(data).hexdigest()
        if db.execute("SELECT 1 FROM blob_refs WHERE sha256 = ?", (sha,)).fetchone() is None:
            codec, stored = pack_blob(data)
            blob = db.execute(
                "INSERT INTO blobs (codec, content) VALUES (?, ?)", (codec, stored)
            ).lastrowid
            # refs starts at 0: the revision row's insert trigger counts it.
            db.execute(
                "INSERT INTO blob_refs (sha256, blob_id, refs) VALUES (?, ?, 0)", (sha, blob)
            )
        self._add_row(db, path, rev, author, now, len(data), sha)
        return sha

    def _add_row(
        self,
        db: sqlite3.Connection,
        path: str,
        rev: int,
        author: str,
        now: int,
        size: int,
        sha: str,
    ) -> None:
        db.execute(
            "INSERT INTO revisions (rev, path, author, time_ns, size, sha256)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (rev, path, author, now, size, sha),
        )
        db.execute(_PRUNE_LIVE, {"p": path, "keep": self.options.history})

    def _arrive(
        self, db: sqlite3.Connection, entry_id: int, old: str, path: str, author: str, now: int
    ) -> tuple[int, int, str]:
        """Record the file ``entry_id``, moved from ``old`` to ``path``, as arriving there;
        the arrival's revision number, size and SHA-256."""
        size, sha = db.execute(
            "SELECT r.size, r.sha256 FROM entries e JOIN revisions r ON r.path = ?"
            " AND r.rev = e.rev WHERE e.id = ?",
            (old, entry_id),
        ).fetchone()
        self._revive(db, path, now)
        rev = self._next_rev(db)
        db.execute("UPDATE entries SET rev = ? WHERE id = ?", (rev, entry_id))
        self._add_row(db, path, rev, author, now, size, sha)
        return rev, size, sha

    def _tombstone(
        self, db: sqlite3.Connection, paths: list[str], now: int, *, moved: bool
    ) -> None:
        """Mark file ``paths`` as no longer existing; their rows become tombstones."""
        trim = now + MOVED_GRACE_NS if moved else now
        db.executemany(
            "INSERT OR REPLACE INTO gone (path, deleted_ns, trim_ns, due_ns) VALUES (?, ?, ?, ?)",
            [(path, now, trim, trim) for path in paths],
        )

    def _revive(self, db: sqlite3.Connection, path: str, now: int) -> None:
        """Make ``path`` a live history again, doing its due removals first."""
        row = db.execute("SELECT deleted_ns, trim_ns FROM gone WHERE path = ?", (path,)).fetchone()
        if row is None:
            return
        deleted_ns, trim_ns = row
        # At most history + 1 rows: a live path never holds more, and a gone one gains none.
        if self._expired(deleted_ns, trim_ns, now):
            db.execute("DELETE FROM revisions WHERE path = ?", (path,))
        elif trim_ns is not None and trim_ns <= now:
            db.execute(_PRUNE_LIVE, {"p": path, "keep": 0})
        db.execute("DELETE FROM gone WHERE path = ?", (path,))

    def _sweep(self, db: sqlite3.Connection, now: int) -> None:
        """Remove up to :data:`SWEEP_ROWS` rows that the retention rules already hide."""
        budget = SWEEP_ROWS
        due = db.execute(
            "SELECT path, deleted_ns, trim_ns FROM gone WHERE due_ns <= ? ORDER BY due_ns LIMIT ?",
            (now, budget),
        ).fetchall()
        for path, deleted_ns, trim_ns in due:
            expired = self._expired(deleted_ns, trim_ns, now)
            # Never the newest row of a path that only needs trimming.
            keep = 0 if expired else 1
            deleted = db.execute(
                "DELETE FROM revisions WHERE path = ? AND rev IN (SELECT rev FROM revisions"
                " WHERE path = ? ORDER BY rev DESC LIMIT ? OFFSET ?)",
                (path, path, budget, keep),
            ).rowcount
            if deleted < budget:  # nothing left to remove here for now
                if expired:
                    db.execute("DELETE FROM gone WHERE path = ?", (path,))
                else:
                    # Trimmed; next due when deleted_history_days runs out. Readers judge
                    # expiry by the option in force, so a changed option is still obeyed.
                    expiry = deleted_ns + self.options.deleted_history_days * DAY_NS
                    db.execute(
                        "UPDATE gone SET trim_ns = NULL, due_ns = ? WHERE path = ?",
                        (max(expiry, now + 1), path),
                    )
            budget -= max(deleted, 1)
            if budget <= 0:
                return

    # --- reading ----------------------------------------------------------------------------
    def _visible(self, db: sqlite3.Connection, path: str) -> int:
        """How many of ``path``'s newest rows are visible (-1: all); NotFound if none."""
        row = db.execute(STAT, (path,)).fetchone()
        if row is not None:
            need_file(Entry(*row))
            return -1
        gone = db.execute("SELECT deleted_ns, trim_ns FROM gone WHERE path = ?", (path,)).fetchone()
        try:
            return rules.gone_visible(gone, self.clock(), self.options.deleted_history_days)
        except NotFound:
            raise NotFound(f"no entry and no retained history at '{path}'", path=path) from None

    def _history_rows(
        self, db: sqlite3.Connection, path: str, limit: int | None = None
    ) -> list[Revision]:
        visible = self._visible(db, path)
        if limit is not None:
            visible = limit if visible < 0 else min(visible, limit)
        rows = db.execute(_HISTORY, (path, visible)).fetchall()
        return [self._revision(path, row) for row in rows]

    @staticmethod
    def _revision(path: str, row: tuple) -> Revision:  # type: ignore[type-arg]
        rev, author, time_ns, size, sha, redacted_by, redacted_ns = row
        return Revision(
            path, rev, author, time_ns, size, sha.removeprefix(REDACTED), redacted_by, redacted_ns
        )

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads seeing one state: a read transaction, or the batch's own."""
        db = self._db()
        if db.in_transaction:  # inside a batch: it already is one consistent state
            yield db
            return
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    def history(self, path: str, limit: int | None = None) -> list[Revision]:
        try:
            with self._snapshot() as db:
                return self._history_rows(db, path, limit)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def read_revision(self, path: str, rev: int) -> bytes:
        try:
            with self._snapshot() as db:
                found = next((r for r in self._history_rows(db, path) if r.rev == rev), None)
                row = None
                if found is not None and found.redacted_by is None:
                    row = db.execute(
                        "SELECT b.codec, b.content FROM revisions r JOIN blob_refs br"
                        " ON br.sha256 = r.sha256 JOIN blobs b ON b.id = br.blob_id"
                        " WHERE r.path = ? AND r.rev = ?",
                        (path, rev),
                    ).fetchone()
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        if found is not None and found.redacted_by is not None:
            raise Redacted(
                f"revision {rev} of '{path}' was redacted by {found.redacted_by}",
                path=path,
                by=found.redacted_by,
                time_ns=found.redacted_ns or 0,
            )
        if row is None:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        return unpack_blob(row[0], row[1])

    def read_blob(self, sha256: str) -> bytes:
        try:
            row = (
                self._db()
                .execute(
                    "SELECT b.codec, b.content FROM blob_refs br JOIN blobs b"
                    " ON b.id = br.blob_id WHERE br.sha256 = ? AND br.refs > 0",
                    (sha256,),
                )
                .fetchone()
            )
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        if row is None:
            raise NotFound(f"no retained revision has the content {sha256[:12]}")
        return unpack_blob(row[0], row[1])
