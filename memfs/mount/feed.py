"""Following the store's change feed so the kernel's caches never go stale for long.

The kernel caches attributes, names, listings and pages of the mount for up to the
attr/entry timeouts. Changes made through this mount keep those caches right by
themselves; changes made by anyone else (another mount of the same store, the model's
handler, a plain ``store.write``) arrive only on the change feed. :class:`ChangeFollower`
waits for the feed (:meth:`memfs.store.base.Store.wait_for_changes`) and asks the FUSE
layer to invalidate each path another writer touched.

Bound: a reader of the mount sees another writer's change at most ``poll_interval`` plus
the time of one feed query and the invalidation calls after that change is committed;
on a store that pushes its changes (PostgreSQL's NOTIFY, an SQLite store's inotify watch
on its -wal file), the time its notification takes instead of ``poll_interval``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from memfs.errors import StoreError, StoreUnavailable
from memfs.paths import parent_of
from memfs.store.base import Change, Store

log = logging.getLogger(__name__)

T = TypeVar("T")


class OwnChanges:
    """The feed sequence numbers this mount's own mutations produced.

    ``mutation`` is one store call; the store says which feed numbers it appended
    (:meth:`memfs.store.base.Store.appended`, kept per thread), so learning them costs
    no feed read, and another process writing under the same author name is never
    taken for this mount. (``run`` still takes the author its callers pass, unused.)
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._seqs: set[int] = set()
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)  # a mutation ended
        self._running = 0

    def run(self, author: str, mutation: Callable[[], T]) -> T:
        with self._lock:
            self._running += 1
        mine = range(0)
        try:
            result = mutation()
            mine = self.store.appended()
        finally:
            with self._lock:
                self._running -= 1
                self._seqs.update(mine)
                self._done.notify_all()
        return result

    def claim(self, seq: int) -> bool:
        """True (once) if ``seq`` was produced by this mount."""
        with self._lock:
            if seq in self._seqs:
                self._seqs.discard(seq)
                return True
            return False

    def cover(self, first: int, last: int, timeout: float) -> bool:
        """True (claiming them) if every number from ``first`` to ``last`` is this
        mount's own. A store tells of a commit as it happens, before the mutation that
        made it returns here to say which numbers it appended: while mutations are
        running, wait up to ``timeout`` for them to say."""
        deadline = time.monotonic() + timeout
        numbers = range(first, last + 1)
        with self._lock:
            while True:
                if len(numbers) <= len(self._seqs) and all(s in self._seqs for s in numbers):
                    self._seqs.difference_update(numbers)
                    return True
                left = deadline - time.monotonic()
                if self._running == 0 or left <= 0:
                    return False
                self._done.wait(left)

    def forget_upto(self, seq: int) -> None:
        with self._lock:
            self._seqs = {s for s in self._seqs if s > seq}


def touched_paths(change: Change) -> list[str]:
    """Every store path whose cached view a change can make wrong: it and its parent."""
    out: list[str] = []
    for path in (change.path, change.old_path):
        if path is None:
            continue
        for p in (path, parent_of(path)):
            if p not in out:
                out.append(p)
    return out


class StaleQueue(threading.Thread):
    """Paths whose kernel caches this mount's own commits made wrong (an O_APPEND write
    moved to the true end, a change rebased onto another writer's), invalidated from this
    thread: never from a FUSE callback, which would deadlock on the kernel's locks."""

    def __init__(self, invalidate: Callable[[str], None]) -> None:
        super().__init__(name="memfs-stale", daemon=True)
        self._invalidate = invalidate
        self._paths: dict[str, None] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._halt = False

    def add(self, path: str) -> None:
        if self._halt:
            return  # unmounting: there is no kernel cache left to tell
        with self._lock:
            self._paths[path] = None
            self._paths[parent_of(path)] = None
        self._wake.set()

    def stop(self) -> None:
        self._halt = True
        with self._lock:
            self._paths.clear()
        self._wake.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=10)

    def run(self) -> None:
        while not self._halt:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                paths, self._paths = list(self._paths), {}
            for path in paths:
                if self._halt:
                    return
                try:
                    self._invalidate("/" + path)
                except Exception:
                    log.exception("memfs: could not invalidate %s", path)


MAINTAIN_INTERVAL = 1.0  # seconds between store.maintain() calls
# Seconds between looks at whether the store's storage is still there (a deleted or
# replaced SQLite file, a dropped tree): seen within this, so within a second.
STORAGE_INTERVAL = 0.5
# How long one wait on a pushing store lasts: bounds how late stop() is noticed.
PUSH_WAIT = 0.25
# How long the follower, told of commits, waits for this mount's running mutations to
# say whether those were theirs (then it reads nothing): at most this much later, the
# feed is read as before.
OWN_WAIT = 0.1
# How long the follower rests after a wake-up that was this mount's own commits alone,
# before it listens again. A mount saving quickly (a model's edits, a copy) is told of
# every commit it makes; resting gathers them into one look instead of a wake-up each
# (which cost the saves 5-7% of their time). Another writer's change, told meanwhile,
# is read when the rest ends: at most this much later.
OWN_REST = 0.02


class ChangeFollower(threading.Thread):
    """Polls ``store.changes(since=...)`` and reports other writers' changes."""

    def __init__(
        self,
        store: Store,
        own: OwnChanges,
        on_foreign: Callable[[Iterable[Change]], None],
        interval: float,
        on_store: Callable[[str | None], None] | None = None,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(name="memfs-feed", daemon=True)
        self.store = store
        self.own = own
        self.on_foreign = on_foreign
        self.interval = interval
        # Told the reason when the store stops answering, None when it answers again.
        self.on_store = on_store or (lambda problem: None)
        # Told once when the storage under the store went away (Store.storage_problem).
        self.on_lost = on_lost or (lambda problem: None)
        self._lost = False
        self.cursor = store.last_seq()
        self._halt = threading.Event()
        self._nudge = threading.Event()
        self._caught = threading.Condition()
        self.polls = 0
        # look_at_storage() asks for a look now and waits for the count to pass its own.
        self._look_asked = 0
        self._looks_done = 0
        self._rest = False  # the last look found only this mount's own commits

    def stop(self) -> None:
        self._halt.set()
        self._nudge.set()
        self.store.interrupt_waits()  # not a PUSH_WAIT more on every unmount
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=10)

    def catch_up(self, seq: int, timeout: float) -> bool:
        """Wait until every change up to ``seq`` has been followed (and the kernel told);
        False if that took longer than ``timeout``. Called by another door that has just
        changed the store, so people see its change through this mount at once."""
        deadline = time.monotonic() + timeout
        with self._caught:
            while self.cursor < seq:
                left = deadline - time.monotonic()
                if left <= 0 or self._halt.is_set() or not self.is_alive():
                    return False
                self._nudge.set()
                self._caught.wait(min(left, 0.05))
        return True

    def look_at_storage(self, timeout: float) -> bool:
        """Look at the store's storage now (not at the next STORAGE_INTERVAL), on this
        follower's thread, and say whether it has gone away. Asked by a thread that could
        not reach the store: a store file deleted under the mount cannot be opened by a
        thread new to it, while the follower still holds a connection, so it is the one
        that can save what is pending (on_lost) before the caller gives up."""
        deadline = time.monotonic() + timeout
        with self._caught:
            self._look_asked += 1
            asked = self._look_asked
            while self._looks_done < asked and not self._lost:
                left = deadline - time.monotonic()
                if left <= 0 or self._halt.is_set() or not self.is_alive():
                    break
                self._nudge.set()
                self._caught.wait(min(left, 0.05))
            return self._lost

    def step(self) -> int:
        """One poll; returns how many foreign changes it reported."""
        told = self.store.pushed_upto()
        if told > self.cursor and self.own.cover(self.cursor + 1, told, OWN_WAIT):
            # Woken by this mount's own commits alone: nothing to read or tell.
            self.polls += 1
            with self._caught:
                self.cursor = told
                self._caught.notify_all()
            self._rest = True
            return 0
        changes = self.store.changes(since=self.cursor)
        self.polls += 1
        if not changes:
            return 0
        foreign = [c for c in changes if not self.own.claim(c.seq)]
        self.own.forget_upto(changes[-1].seq)
        try:
            if foreign:
                self.on_foreign(foreign)
        finally:
            # Moved once the kernel was told (or telling it failed, which was logged and
            # is not retried): catch_up() waiters may go on now.
            with self._caught:
                self.cursor = changes[-1].seq
                self._caught.notify_all()
        return len(foreign)

    def _wait(self) -> bool:
        """Wait for the next look at the feed (or a nudge); False once stopped."""
        if self._rest:
            self._rest = False
            self._nudge.wait(OWN_REST)  # a nudge (catch_up, look_at_storage) ends it
        if self.store.pushes_changes and not self._nudge.is_set():
            self.store.wait_for_changes(self.cursor, PUSH_WAIT)
        else:
            self._nudge.wait(self.interval)
        self._nudge.clear()
        return not self._halt.is_set()

    def run(self) -> None:
        failures = 0
        # The store's housekeeping (SQLite: WAL checkpoints) happens here, about once a
        # second, instead of inside whichever write crosses the threshold.
        maintained = looked = time.monotonic()
        while True:
            try:
                if not self._wait():
                    return
                now = time.monotonic()
                with self._caught:
                    asked = self._look_asked
                if (asked > self._looks_done or now - looked >= STORAGE_INTERVAL) and (
                    not self._lost
                ):
                    # First: a store whose file went away fails every feed read after.
                    looked = now
                    problem = self.store.storage_problem()
                    if problem is not None:
                        try:
                            self.on_lost(problem)  # saves what is pending first
                        finally:
                            self._lost = True
                if asked > self._looks_done:
                    with self._caught:
                        self._looks_done = asked
                        self._caught.notify_all()
                self.step()
                if now - maintained >= MAINTAIN_INTERVAL and not self._lost:
                    maintained = now
                    self.store.maintain()
                if failures:
                    log.warning("memfs: the store answers again; following its changes")
                    self.on_store(None)
                failures = 0
            except StoreError as e:
                # A busy or briefly unavailable store must not end the follower: caches
                # would then go stale for good. Log once per failure streak.
                if failures == 0:
                    log.warning("memfs: cannot read the change feed: %s (retrying)", e)
                    if isinstance(e, StoreUnavailable):
                        self.on_store(str(e))
                failures += 1
                # Not a tight loop while a server is down (a wait then fails at once).
                if self._halt.wait(max(self.interval, PUSH_WAIT)):
                    return
            except Exception:
                log.exception("memfs: change feed follower failed; retrying")
                if self._halt.wait(max(self.interval, PUSH_WAIT)):
                    return
