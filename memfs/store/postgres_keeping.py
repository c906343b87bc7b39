"""The PostgreSQL store's housekeeping: caps, last use, checkpoints and redaction.

The same rules as :mod:`memfs.store.sqlite_keeping`. Caps compare against the tree
row's counters (kept by statement triggers) inside the mutation's transaction, which
holds that row's lock, so two writers on any hosts can never both pass a cap.
Redaction deletes the blob row and then vacuums the blob table, so its space is free
for reuse; the bytes may linger in the server's WAL and in backups until those are
recycled, which a server's operator controls, not memfs.
"""

from __future__ import annotations

import logging

import psycopg

from memfs.errors import AlreadyExists, Conflict, NotFound, StoreError
from memfs.store import rules
from memfs.store.base import Checkpoint, Entry, Revision
from memfs.store.postgres_conn import Tx
from memfs.store.postgres_history import COLS, REV_COLS, PgHistory, revision
from memfs.store.sqlite_history import REDACTED
from memfs.store.sqlite_keeping import USE_GRAIN_NS

log = logging.getLogger(__name__)

_LAST_USE = (
    "SELECT e.path, greatest(r.time_ns, coalesce(e.used_ns, 0)) FROM memfs.entries e"
    " JOIN memfs.revisions r ON r.tree = e.tree AND r.path = e.path AND r.rev = e.rev"
    " WHERE e.tree = %s AND e.path = ANY(%s) AND e.kind = 'file'"
)


class PgKeeping(PgHistory):
    # --- caps (called by the mutations, inside their transaction) -------------------------
    def _check_caps(self, tx: Tx, path: str, grow: int, new_files: int) -> None:
        """Refuse a mutation adding ``grow`` bytes and ``new_files`` files past a cap."""
        options = self.options
        if options.max_tree_bytes is None and options.max_files is None:
            return
        files, total = tx.db.execute(
            "SELECT files, bytes FROM memfs.trees WHERE id = %s", (self.tree,)
        ).fetchone() or (0, 0)
        rules.check_caps(
            path,
            grow=grow,
            new_files=new_files,
            total_bytes=int(total),
            files=int(files),
            max_tree_bytes=options.max_tree_bytes,
            max_files=options.max_files,
        )

    # --- last use ---------------------------------------------------------------------------
    def mark_used(self, paths: list[str]) -> None:
        now = self._now()
        fresh = now - USE_GRAIN_NS
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return
        with self._conn() as db:
            rows = db.execute(_LAST_USE, (self.tree, wanted)).fetchall()
        stale = [path for path, used in rows if used < fresh]
        if not stale:
            return
        # Housekeeping, not a change: no feed record (the transaction still takes the
        # tree's lock, like every write).
        with self._tx() as tx:
            tx.db.execute(
                "UPDATE memfs.entries SET used_ns = %s WHERE tree = %s AND path = ANY(%s)"
                " AND kind = 'file'",
                (now, self.tree, stale),
            )

    def unused(self, before_ns: int) -> list[Entry]:
        cols = ", ".join("e." + c.strip() for c in COLS.split(","))
        with self._conn() as db:
            rows = db.execute(
                f"SELECT {cols} FROM memfs.entries e JOIN memfs.revisions r ON r.tree = e.tree"
                " AND r.path = e.path AND r.rev = e.rev WHERE e.tree = %s AND e.kind = 'file'"
                " AND greatest(r.time_ns, coalesce(e.used_ns, 0)) < %s ORDER BY e.path",
                (self.tree, before_ns),
            ).fetchall()
        return [Entry(*row) for row in rows]

    # --- checkpoints ------------------------------------------------------------------------
    def set_checkpoint(self, name: str, *, author: str, seq: int | None = None) -> Checkpoint:
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise StoreError("a checkpoint name must be 1 to 200 characters of text")
        with self._tx() as tx:
            last = tx.seq
            point = last if seq is None else seq
            if point < 0 or point > last:
                raise NotFound(f"there is no change {point} (the last is {last})")
            checkpoint = Checkpoint(name, point, self._now(), author)
            inserted = tx.db.execute(
                "INSERT INTO memfs.checkpoints (tree, name, seq, time_ns, author)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (self.tree, name, point, checkpoint.time_ns, author),
            ).rowcount
            if not inserted:
                raise AlreadyExists(f"a checkpoint named '{name}' already exists")
            return checkpoint

    def checkpoints(self) -> list[Checkpoint]:
        with self._conn() as db:
            rows = db.execute(
                "SELECT name, seq, time_ns, author FROM memfs.checkpoints WHERE tree = %s"
                " ORDER BY seq, time_ns",
                (self.tree,),
            ).fetchall()
        return [Checkpoint(*row) for row in rows]

    def delete_checkpoint(self, name: str) -> None:
        with self._tx() as tx:
            gone = tx.db.execute(
                "DELETE FROM memfs.checkpoints WHERE tree = %s AND name = %s", (self.tree, name)
            ).rowcount
            if not gone:
                raise NotFound(f"there is no checkpoint named '{name}'")

    # --- redaction --------------------------------------------------------------------------
    def redact(self, path: str, rev: int, *, author: str) -> list[Revision]:
        self.history(path, limit=None)  # NotFound/IsADirectory as history would say
        now = self._now()
        with self._tx() as tx:
            if not any(r.rev == rev for r in self._history_rows(tx.db, path)):
                raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
            row = tx.db.execute(
                "SELECT sha256 FROM memfs.revisions WHERE tree = %s AND path = %s AND rev = %s",
                (self.tree, path, rev),
            ).fetchone()
            sha = str(row[0])
            if sha.startswith(REDACTED):
                return self._redacted_rows(tx, sha)
            live = tx.db.execute(
                "SELECT e.path FROM memfs.entries e JOIN memfs.revisions r ON r.tree = e.tree"
                " AND r.path = e.path AND r.rev = e.rev WHERE e.tree = %s AND e.kind = 'file'"
                " AND r.sha256 = %s LIMIT 1",
                (self.tree, sha),
            ).fetchone()
            if live is not None:
                raise Conflict(
                    f"revision {rev} of '{path}' is the current content of"
                    f" '{live[0]}'; change or delete that file first, then redact",
                    path=live[0],
                )
            # Renamed hashes detach the rows from the blob, so the same bytes written
            # again later are stored afresh.
            tx.db.execute(
                "UPDATE memfs.revisions SET sha256 = %s, redacted_by = %s, redacted_ns = %s"
                " WHERE tree = %s AND sha256 = %s",
                (REDACTED + sha, author, now, self.tree, sha),
            )
            tx.db.execute(
                "DELETE FROM memfs.blobs WHERE tree = %s AND sha256 = %s", (self.tree, sha)
            )
            redacted = self._redacted_rows(tx, REDACTED + sha)
        if getattr(self._local, "tx", None) is None:
            self._vacuum_blobs()
        return redacted

    def _redacted_rows(self, tx: Tx, stored_sha: str) -> list[Revision]:
        rows = tx.db.execute(
            f"SELECT path, {REV_COLS} FROM memfs.revisions WHERE tree = %s AND sha256 = %s"
            " ORDER BY rev",
            (self.tree, stored_sha),
        ).fetchall()
        return [revision(row[0], row[1:]) for row in rows]

    def _vacuum_blobs(self) -> None:
        try:
            with self._conn() as db:
                db.execute("VACUUM memfs.blobs")
        except (StoreError, psycopg.Error) as e:
            # The content is already unreachable; only its space waits for autovacuum.
            log.warning("memfs: could not vacuum the redacted content's space: %s", e)
