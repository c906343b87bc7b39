"""Live updates: one follower of the store's change feed per server, and an event
stream per open timeline.

The follower reads ``store.last_seq()`` on a worker thread (a store call may block)
every :data:`POLL` seconds, or waits on the store's push (PostgreSQL) where it has one,
and wakes every stream when the feed moved. A stream then sends each operation with a
change since it last looked that matches its page's filters (a new one, or one that grew:
a burst through a mount spans many commits) as an ``op`` event carrying the row's HTML,
rendered by the same template as the page, oldest first; the page puts a grown
operation's row in its old row's place. Every stream ends when the server stops.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.to_thread

from memfs.errors import StoreError
from memfs.store.base import Store

log = logging.getLogger(__name__)

POLL = 0.2  # seconds: a write shows in an open timeline well within a second
PING = 15  # seconds between keep-alive comments on an idle stream


class Feed:
    """The feed's last seq, and an event set each time it moves (or the server stops)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.seq = 0
        self.closing = anyio.Event()
        self._moved = anyio.Event()

    async def follow(self) -> None:
        """Run until :meth:`close`; reading failures are logged once per streak."""
        failing = False
        while not self.closing.is_set():
            try:
                seq = await anyio.to_thread.run_sync(self._next, self.seq, abandon_on_cancel=True)
                failing = False
            except StoreError as exc:
                if not failing:
                    log.warning("memfs web: cannot read the change feed: %s (retrying)", exc)
                failing = True
                seq = self.seq
            if seq != self.seq:
                self.seq = seq
                self._moved.set()
                self._moved = anyio.Event()
            with anyio.move_on_after(POLL if not self.store.pushes_changes else 0):
                await self.closing.wait()

    def _next(self, since: int) -> int:
        if self.store.pushes_changes:
            self.store.wait_for_changes(since, POLL * 5)
        return self.store.last_seq()

    def close(self) -> None:
        self.closing.set()
        self._moved.set()

    async def wait(self, after: int, timeout: float) -> None:
        """Return once the feed is past ``after``, the server stops, or ``timeout``."""
        with anyio.move_on_after(timeout):
            while self.seq <= after and not self.closing.is_set():
                await self._moved.wait()


async def stream(
    feed: Feed, after: int, render_new: Callable[[int], tuple[int, list[str]]]
) -> AsyncIterator[dict[str, str]]:
    """Server-sent events for one open timeline: ``render_new(after)`` (run on a worker
    thread) returns the feed position it read up to and the rows of the operations
    since ``after``, oldest first."""
    while not feed.closing.is_set():
        await feed.wait(after, PING)
        if feed.closing.is_set():
            return
        if feed.seq <= after:
            yield {"comment": "idle"}
            continue
        after, rows = await anyio.to_thread.run_sync(render_new, after)
        for row in rows:
            yield {"event": "op", "data": row}
        yield {"event": "seq", "data": str(after)}
