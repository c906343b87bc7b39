"""The PostgreSQL store's change feed, and followers woken by LISTEN/NOTIFY.

Every mutating transaction ends with ``pg_notify('memfs_tree_<id>', seq)``; PostgreSQL
delivers it when (and only when) the transaction commits. A follower's
:meth:`PgFeed.wait_for_changes` listens on a dedicated connection of its own, so it
returns within a millisecond or so of another host's commit instead of a poll interval
later. The notification only wakes: what changed is always read from ``changes``, whose
numbers commit in order (:mod:`memfs.store.postgres_schema`), so a notification lost
with a dropped connection costs latency, never a change.
"""

from __future__ import annotations

import threading
import time

import psycopg

from memfs.store.base import Change
from memfs.store.postgres_writes import PgWrites

_MAX_SEQ = 2**63 - 1


class PgFeed(PgWrites):
    """``changes``, ``last_seq`` and ``wait_for_changes`` for the PostgreSQL store."""

    pushes_changes = True
    _listener: psycopg.Connection | None = None
    _listener_lock: threading.Lock

    def changes(
        self,
        since: int = 0,
        limit: int | None = None,
        *,
        until: int | None = None,
        newest_first: bool = False,
    ) -> list[Change]:
        order = "DESC" if newest_first else ""
        with self._conn() as db:
            rows = db.execute(
                "SELECT seq, kind, path, author, time_ns, old_path, rev, size, sha256"
                " FROM memfs.changes WHERE tree = %s AND seq > %s"
                f" AND seq <= %s ORDER BY seq {order} LIMIT %s",
                (self.tree, since, _MAX_SEQ if until is None else until, limit),
            ).fetchall()
        return [Change(*row) for row in rows]

    def last_seq(self) -> int:
        # The tree row's counter is only moved by committed mutations (it is written in
        # the same transaction), so it is the highest committed seq.
        with self._conn() as db:
            row = db.execute("SELECT seq FROM memfs.trees WHERE id = %s", (self.tree,)).fetchone()
        return 0 if row is None else int(row[0])

    def wait_for_changes(self, since: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a change with ``seq > since``; True if one
        is committed. Woken by NOTIFY on a connection kept for this."""
        if not hasattr(self, "_listener_lock"):
            self._listener_lock = threading.Lock()
        with self._listener_lock:
            listener = self._listen()
            try:
                # Listening from here on: a commit after this look wakes the wait below.
                if self.last_seq() > since:
                    for _ in listener.notifies(timeout=0):  # drop stale wake-ups
                        pass
                    return True
                deadline = time.monotonic() + timeout
                while (left := deadline - time.monotonic()) > 0:
                    for note in listener.notifies(timeout=left, stop_after=1):
                        if int(note.payload or 0) > since:
                            return True
                return self.last_seq() > since
            except psycopg.Error as e:
                self._drop_listener()
                raise self._translate(e) from e

    def _listen(self) -> psycopg.Connection:
        if self._listener is not None and not self._listener.closed:
            return self._listener
        db = self._connect()
        try:
            db.execute(f'LISTEN "{self.channel}"')
        except psycopg.Error as e:
            db.close()
            raise self._translate(e) from e
        self._listener = db
        return db

    def _drop_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def close(self) -> None:
        super().close()
        listener, self._listener = self._listener, None
        if listener is not None:
            # Closing from another thread while a wait is in notifies() ends that wait.
            listener.close()
