"""The mount's one mutex, which knows how deep the calling thread holds it.

A namespace operation holds it across the commits it needs (they and the change are
one step); a commit started at the outermost hold (the committer, an fsync, a write
that meets another writer's buffer) lets it go while the store answers
(:meth:`MountLock.outside`), so no other file's change waits on that round trip.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

# A landing wakes its waiters; this bounds a wait should a wake-up be missed.
WAIT_S = 1.0


class MountLock:
    """A re-entrant lock with a condition its landings signal (:meth:`wait`,
    :meth:`notify`)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._landed = threading.Condition(self._lock)
        self._local = threading.local()

    def _depth(self) -> int:
        depth: int = getattr(self._local, "depth", 0)
        return depth

    def __enter__(self) -> MountLock:
        self._lock.acquire()
        self._local.depth = self._depth() + 1
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._local.depth = self._depth() - 1
        self._lock.release()

    @contextmanager
    def outside(self) -> Iterator[None]:
        """Run the block without the lock when the calling thread holds it once; held
        deeper (a namespace operation's step), the block runs under it, as that step
        needs."""
        if self._depth() != 1:
            yield
            return
        self._local.depth = 0
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()
            self._local.depth = 1

    def wait(self) -> None:
        """Wait for a landing (the caller holds the lock; the wait lets go of it, all
        levels, and takes it back)."""
        self._landed.wait(WAIT_S)

    def notify(self) -> None:
        """A landing ended (the caller holds the lock)."""
        self._landed.notify_all()
