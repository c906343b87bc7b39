"""One named thread per MCP client, so a memfs mount attributes each client's edits.

A mount records who made a change as ``"{comm} (pid {tgid})"``, reading ``comm`` from
``/proc`` for the thread that made the system call. Linux gives every thread its own
``comm``, so a thread named ``mcp:CLIENT`` makes every edit it does through the mount
``mcp:CLIENT (pid N)`` in the store's history and change feed, with no new channel to
the daemon and no change to the mount's author format (the agent recognises its own
changes by the ``(pid N)`` suffix, and so can anyone else). The kernel keeps 15 bytes of
a thread name: a longer client name is cut there.

The threads also keep the handler's blocking file system calls off the event loop, so
one client's slow command never stalls another's.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

COMM_BYTES = 15  # TASK_COMM_LEN - 1
PREFIX = "mcp:"
MAX_WORKERS = 64  # distinct client names kept; the least recently used one goes first
_PR_SET_NAME = 15
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # not on Linux: threads keep their names, edits keep the process's
    _libc = None


def author_name(client_name: str | None) -> str:
    """The thread name for a client: ``mcp:`` and the client's name, cut to what the
    kernel keeps; characters that would make the author string ambiguous become ``-``."""
    name = _UNSAFE.sub("-", (client_name or "").strip()).strip("-") or "client"
    out = PREFIX
    for ch in name:
        if len((out + ch).encode("utf-8")) > COMM_BYTES:
            break
        out += ch
    return out


def _name_this_thread(name: str) -> None:
    threading.current_thread().name = name
    if _libc is not None and _libc.prctl(_PR_SET_NAME, name.encode("utf-8"), 0, 0, 0) != 0:
        log.warning("memfs mcp: cannot name a thread %s (errno %d)", name, ctypes.get_errno())


class Workers:
    """A single-thread executor per author name."""

    def __init__(self) -> None:
        self._pools: OrderedDict[str, ThreadPoolExecutor] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def _pool(self, author: str) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the MCP server is shutting down")
            pool = self._pools.get(author)
            if pool is not None:
                self._pools.move_to_end(author)
                return pool
            pool = ThreadPoolExecutor(
                max_workers=1, initializer=_name_this_thread, initargs=(author,)
            )
            self._pools[author] = pool
            if len(self._pools) > MAX_WORKERS:
                _, oldest = self._pools.popitem(last=False)
                oldest.shutdown(wait=False)  # its queued commands still run
            return pool

    async def run(self, author: str, fn: Callable[[], T]) -> T:
        """``fn()`` on the thread named ``author``, awaited without blocking the loop."""
        return await asyncio.wrap_future(self._pool(author).submit(fn))

    def close(self) -> None:
        """Wait for every command already started: an edit in flight is finished, not cut."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.shutdown(wait=True)
