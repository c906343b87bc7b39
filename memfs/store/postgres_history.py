"""Per-path revision history of the PostgreSQL store: recording, retention and reading.

The same rules as the SQLite store (:mod:`memfs.store.sqlite_history`, whose docstring
explains them): a revision row records the path it was made at; content lives once per
SHA-256 per tree in ``blobs`` (dropped by a trigger with the last row using it); a path
that stops being a file gets a ``gone`` row whose retention readers judge through the
store's clock; removal is lazy, at most :data:`SWEEP_ROWS` rows per mutation.
"""

from __future__ import annotations

import hashlib

import psycopg

from memfs.errors import NotFound, Redacted
from memfs.store import rules
from memfs.store.base import Entry, Revision
from memfs.store.postgres_conn import PgConnections, Tx
from memfs.store.sqlite_conn import need_file
from memfs.store.sqlite_history import DAY_NS, MOVED_GRACE_NS, REDACTED, SWEEP_ROWS

COLS = "path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, target"
STAT = f"SELECT {COLS} FROM memfs.entries WHERE tree = %s AND path = %s"

_PRUNE_LIVE = (
    "DELETE FROM memfs.revisions WHERE tree = %(t)s AND path = %(p)s AND rev < (SELECT rev"
    " FROM memfs.revisions WHERE tree = %(t)s AND path = %(p)s ORDER BY rev DESC LIMIT 1"
    " OFFSET %(keep)s)"
)
REV_COLS = "rev, author, time_ns, size, sha256, redacted_by, redacted_ns"
_HISTORY = (
    f"SELECT {REV_COLS} FROM memfs.revisions WHERE tree = %s"
    " AND path = %s ORDER BY rev DESC LIMIT %s"
)


class PgHistory(PgConnections):
    """History rows for :class:`memfs.store.postgres_writes.PgWrites` and the reads."""

    def _expired(self, deleted_ns: int, trim_ns: int | None, now: int) -> bool:
        return rules.history_expired(deleted_ns, trim_ns, now, self.options.deleted_history_days)

    # --- recording -----------------------------------------------------------------------
    def _add_revision(self, tx: Tx, path: str, rev: int, data: bytes, author: str, now: int) -> str:
        """Add revision ``rev`` of ``path`` holding ``data``; its SHA-256."""
        sha = hashlib.sha256(data).hexdigest()
        tx.db.execute(
            "INSERT INTO memfs.blobs (tree, sha256, content) VALUES (%s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            (self.tree, sha, data),
        )
        self._add_row(tx, path, rev, author, now, len(data), sha)
        return sha

    def _add_row(
        self, tx: Tx, path: str, rev: int, author: str, now: int, size: int, sha: str
    ) -> None:
        tx.db.execute(
            "INSERT INTO memfs.revisions (tree, path, rev, author, time_ns, size, sha256)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (self.tree, path, rev, author, now, size, sha),
        )
        tx.db.execute(_PRUNE_LIVE, {"t": self.tree, "p": path, "keep": self.options.history})

    def _arrive(self, tx: Tx, old: str, path: str, author: str, now: int) -> tuple[int, int, str]:
        """Record the file now at ``path``, moved there from ``old``, as arriving; the
        arrival's revision number, size and SHA-256."""
        row = tx.db.execute(
            "SELECT r.size, r.sha256 FROM memfs.entries e JOIN memfs.revisions r"
            " ON r.tree = e.tree AND r.path = %s AND r.rev = e.rev"
            " WHERE e.tree = %s AND e.path = %s",
            (old, self.tree, path),
        ).fetchone()
        assert row is not None
        self._revive(tx, path, now)
        rev = tx.next_rev()
        tx.db.execute(
            "UPDATE memfs.entries SET rev = %s WHERE tree = %s AND path = %s",
            (rev, self.tree, path),
        )
        self._add_row(tx, path, rev, author, now, row[0], row[1])
        return rev, int(row[0]), str(row[1])

    def _tombstone(self, tx: Tx, paths: list[str], now: int, *, moved: bool) -> None:
        if not paths:
            return
        trim = now + MOVED_GRACE_NS if moved else now
        with tx.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO memfs.gone (tree, path, deleted_ns, trim_ns, due_ns)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tree, path) DO UPDATE SET"
                " deleted_ns = EXCLUDED.deleted_ns, trim_ns = EXCLUDED.trim_ns,"
                " due_ns = EXCLUDED.due_ns",
                [(self.tree, path, now, trim, trim) for path in paths],
            )

    def _revive(self, tx: Tx, path: str, now: int) -> None:
        row = tx.db.execute(
            "DELETE FROM memfs.gone WHERE tree = %s AND path = %s RETURNING deleted_ns, trim_ns",
            (self.tree, path),
        ).fetchone()
        if row is None:
            return
        deleted_ns, trim_ns = row
        if self._expired(deleted_ns, trim_ns, now):
            tx.db.execute(
                "DELETE FROM memfs.revisions WHERE tree = %s AND path = %s", (self.tree, path)
            )
        elif trim_ns is not None and trim_ns <= now:
            tx.db.execute(_PRUNE_LIVE, {"t": self.tree, "p": path, "keep": 0})

    def _sweep(self, tx: Tx, now: int) -> None:
        """Remove up to :data:`SWEEP_ROWS` rows that the retention rules already hide."""
        budget = SWEEP_ROWS
        due = tx.db.execute(
            "SELECT path, deleted_ns, trim_ns FROM memfs.gone WHERE tree = %s AND due_ns <= %s"
            " ORDER BY due_ns LIMIT %s",
            (self.tree, now, budget),
        ).fetchall()
        for path, deleted_ns, trim_ns in due:
            expired = self._expired(deleted_ns, trim_ns, now)
            keep = 0 if expired else 1
            deleted = tx.db.execute(
                "DELETE FROM memfs.revisions WHERE tree = %(t)s AND path = %(p)s AND rev IN"
                " (SELECT rev FROM memfs.revisions WHERE tree = %(t)s AND path = %(p)s"
                " ORDER BY rev DESC LIMIT %(n)s OFFSET %(keep)s)",
                {"t": self.tree, "p": path, "n": budget, "keep": keep},
            ).rowcount
            if deleted < budget:
                if expired:
                    tx.db.execute(
                        "DELETE FROM memfs.gone WHERE tree = %s AND path = %s", (self.tree, path)
                    )
                else:
                    expiry = deleted_ns + self.options.deleted_history_days * DAY_NS
                    tx.db.execute(
                        "UPDATE memfs.gone SET trim_ns = NULL, due_ns = %s"
                        " WHERE tree = %s AND path = %s",
                        (max(expiry, now + 1), self.tree, path),
                    )
            budget -= max(deleted, 1)
            if budget <= 0:
                return

    # --- reading -------------------------------------------------------------------------
    def _visible(self, db: psycopg.Connection, path: str) -> int:
        """How many of ``path``'s newest rows are visible (-1: all); NotFound if none."""
        row = db.execute(STAT, (self.tree, path)).fetchone()
        if row is not None:
            need_file(Entry(*row))
            return -1
        gone = db.execute(
            "SELECT deleted_ns, trim_ns FROM memfs.gone WHERE tree = %s AND path = %s",
            (self.tree, path),
        ).fetchone()
        try:
            return rules.gone_visible(gone, self.clock(), self.options.deleted_history_days)
        except NotFound:
            raise NotFound(f"no entry and no retained history at '{path}'", path=path) from None

    def _history_rows(
        self, db: psycopg.Connection, path: str, limit: int | None = None
    ) -> list[Revision]:
        visible = self._visible(db, path)
        if limit is not None:
            visible = limit if visible < 0 else min(visible, limit)
        rows = db.execute(_HISTORY, (self.tree, path, None if visible < 0 else visible))
        return [revision(path, row) for row in rows.fetchall()]

    def history(self, path: str, limit: int | None = None) -> list[Revision]:
        with self._read() as db:
            return self._history_rows(db, path, limit)

    def read_revision(self, path: str, rev: int) -> bytes:
        with self._read() as db:
            found = next((r for r in self._history_rows(db, path) if r.rev == rev), None)
            row = None
            if found is not None and found.redacted_by is None:
                row = db.execute(
                    "SELECT b.content FROM memfs.revisions r JOIN memfs.blobs b"
                    " ON b.tree = r.tree AND b.sha256 = r.sha256"
                    " WHERE r.tree = %s AND r.path = %s AND r.rev = %s",
                    (self.tree, path, rev),
                ).fetchone()
        if found is not None and found.redacted_by is not None:
            raise Redacted(
                f"revision {rev} of '{path}' was redacted by {found.redacted_by}",
                path=path,
                by=found.redacted_by,
                time_ns=found.redacted_ns or 0,
            )
        if row is None:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        return bytes(row[0])

    def read_blob(self, sha256: str) -> bytes:
        with self._conn() as db:
            row = db.execute(
                "SELECT content FROM memfs.blobs WHERE tree = %s AND sha256 = %s",
                (self.tree, sha256),
            ).fetchone()
        if row is None:
            raise NotFound(f"no retained revision has the content {sha256[:12]}")
        return bytes(row[0])


def revision(path: str, row: tuple) -> Revision:  # type: ignore[type-arg]
    rev, author, time_ns, size, sha, redacted_by, redacted_ns = row
    return Revision(
        path, rev, author, time_ns, size, sha.removeprefix(REDACTED), redacted_by, redacted_ns
    )
