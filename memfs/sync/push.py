"""Waking the mirror as soon as the store commits, for a store that pushes its changes.

The mirror's loop sleeps on its debouncer between looks at the store's feed. With a
store that hears of commits (:attr:`memfs.store.base.Store.pushes_changes`), a
:class:`StoreWaker` thread waits on the store and wakes that loop at once, so another
host's edit reaches DIR in milliseconds rather than a poll interval later; the mirror's
own poll stays as a safety net.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memfs.errors import StoreError
from memfs.store.base import Store

log = logging.getLogger("memfs.sync")

WAIT = 0.25  # one wait on the store; bounds how late a stop is noticed
RETRY = 0.5  # pause after a failed wait (the server is away)


class StoreWaker(threading.Thread):
    """Calls ``on_change`` once for each wake-up by a commit, until ``stop`` is set."""

    def __init__(self, store: Store, on_change: Callable[[], None], stop: threading.Event) -> None:
        super().__init__(name="memfs-sync-waker", daemon=True)
        self.store = store
        self.on_change = on_change
        self.halt = stop

    def run(self) -> None:
        seen: int | None = None
        failures = 0
        while not self.halt.is_set():
            try:
                if seen is None:
                    seen = self.store.last_seq()
                if self.store.wait_for_changes(seen, WAIT):
                    seen = self.store.last_seq()
                    self.on_change()
                failures = 0
            except StoreError as e:
                # The mirror's loop reports the outage itself; this only waits it out.
                if failures == 0:
                    log.debug("waiting for the store's changes failed: %s (retrying)", e)
                failures += 1
                seen = None
                self.halt.wait(RETRY)
            except Exception:
                log.exception("the store waker failed; retrying")
                self.halt.wait(RETRY)
