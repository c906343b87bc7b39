"""Followers of a PostgreSQL tree's change feed, woken by LISTEN/NOTIFY.

Every transaction that appends to the feed ends with ``pg_notify('memfs_tree_<id>',
seq)``; PostgreSQL delivers it when (and only when) the transaction commits. A
follower's wait listens on a dedicated connection of its own, so it returns within a
millisecond or so of another host's commit instead of a poll interval later. The
notification only wakes: what changed is always read from ``changes``, whose numbers
commit in order (:mod:`memfs.store.postgres_schema`), so a notification lost with a
dropped connection costs latency, never a change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg

from memfs.errors import StoreError


class Listener:
    """The LISTEN connection of one open tree, made on the first wait."""

    def __init__(
        self,
        channel: str,
        connect: Callable[[], psycopg.Connection],
        translate: Callable[[psycopg.Error], StoreError],
    ) -> None:
        self.channel = channel
        self._connect = connect
        self._translate = translate
        self._db: psycopg.Connection | None = None
        self._lock = threading.Lock()
        # The newest feed number this connection has been told of, and whether it has
        # listened since before a look at the feed (then every later commit is told).
        self._heard = 0
        self._looked = False

    def wait(self, since: int, timeout: float, last_seq: Callable[[], int]) -> bool:
        """Wait up to ``timeout`` seconds for a change with ``seq > since``; True if one
        is committed."""
        with self._lock:
            listener = self._listen()
            try:
                if self._heard > since:
                    return True  # told already (perhaps while another caller waited)
                if not self._looked:
                    # Listening from here on: a commit after this look wakes the wait
                    # below. Later waits need no look: each commit since is told.
                    self._heard = max(self._heard, last_seq())
                    self._looked = True
                    for note in listener.notifies(timeout=0):  # drop stale wake-ups
                        self._heard = max(self._heard, int(note.payload or 0))
                    if self._heard > since:
                        return True
                deadline = time.monotonic() + timeout
                while (left := deadline - time.monotonic()) > 0:
                    for note in listener.notifies(timeout=left, stop_after=1):
                        self._heard = max(self._heard, int(note.payload or 0))
                        if self._heard > since:
                            return True
                # A quiet while: one look, in case a notification was lost (or the
                # tree was made again, numbered from the start).
                last = last_seq()
                self._heard = min(self._heard, last)
                return last > since
            except psycopg.Error as e:
                self._drop()
                raise self._translate(e) from e

    @property
    def heard(self) -> int:
        """The newest feed number this connection has been told of."""
        return self._heard

    def drain(self) -> int:
        """The newest feed number told by now, taking what arrived since the last wait
        without waiting for more (a follower that rested between waits)."""
        with self._lock:
            db = self._db
            if db is None or db.closed or not self._looked:
                return self._heard
            try:
                for note in db.notifies(timeout=0):
                    self._heard = max(self._heard, int(note.payload or 0))
            except psycopg.Error as e:
                self._drop()
                raise self._translate(e) from e
            return self._heard

    def _listen(self) -> psycopg.Connection:
        if self._db is not None and not self._db.closed:
            return self._db
        db = self._connect()
        try:
            db.execute(f'LISTEN "{self.channel}"'.encode())
        except psycopg.Error as e:
            db.close()
            raise self._translate(e) from e
        self._db, self._looked = db, False  # commits before this LISTEN were not told
        return db

    def _drop(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            # Closing from another thread while a wait is in notifies() ends that wait.
            db.close()
