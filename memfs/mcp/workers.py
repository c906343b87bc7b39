"""One named thread per MCP client, so a memfs mount attributes each client's edits.

A mount records who made a change as ``"{comm} (pid {tgid})"``, reading ``comm`` from
``/proc`` for the thread that made the system call. Linux gives every thread its own
``comm``, so a thread named ``mcp:CLIENT`` makes every edit it does through the mount
``mcp:CLIENT (pid N)`` in the store's history and change feed, with no new channel to
the daemon and no change to the mount's author format (the agent recognises its own
changes by the ``(pid N)`` suffix, and so can anyone else). The kernel keeps 15 bytes of
a thread name: a longer client name is cut there.

The threads also keep the handler's blocking file system calls off the event loop, so
one client's slow command never stalls another's (a search's regex runs on RE2, which
releases the interpreter while it matches). They are daemon threads, given
:data:`STOP_GRACE` to finish when the server stops, so no command holds a shutdown.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import queue
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

COMM_BYTES = 15  # TASK_COMM_LEN - 1
PREFIX = "mcp:"
MAX_WORKERS = 64  # distinct client names kept; the least recently used one goes first
# How long a stopping server waits for commands in flight: far more than an edit takes,
# and short enough that SIGTERM ends the server within a second whatever runs.
STOP_GRACE = 0.5
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


class _Worker:
    """One daemon thread running its author's commands in order.

    Daemon, unlike ``ThreadPoolExecutor``'s threads, which the interpreter joins at exit:
    a command that never returns (a search of a huge tree, a read of a hung file system)
    must not keep the server from stopping when it is told to.
    """

    def __init__(self, author: str) -> None:
        self.author = author
        self.queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self.thread = threading.Thread(target=self._loop, name=author, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        _name_this_thread(self.author)
        while True:
            item = self.queue.get()
            if item is None:
                return
            future, fn = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the awaiting request, not lost
                future.set_exception(exc)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self.queue.put((future, fn))
        return future

    def finish(self) -> None:
        """Run what is queued, then end (the thread stops after the last command)."""
        self.queue.put(None)


class Workers:
    """A single-thread worker per author name."""

    def __init__(self) -> None:
        self._workers: OrderedDict[str, _Worker] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def _worker(self, author: str) -> _Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the MCP server is shutting down")
            worker = self._workers.get(author)
            if worker is not None:
                self._workers.move_to_end(author)
                return worker
            worker = _Worker(author)
            self._workers[author] = worker
            if len(self._workers) > MAX_WORKERS:
                _, oldest = self._workers.popitem(last=False)
                oldest.finish()  # its queued commands still run
            return worker

    async def run(self, author: str, fn: Callable[[], T]) -> T:
        """``fn()`` on the thread named ``author``, awaited without blocking the loop."""
        return await asyncio.wrap_future(self._worker(author).submit(fn))

    def close(self, timeout: float = STOP_GRACE) -> list[str]:
        """Let every command already started finish within ``timeout`` seconds (an edit
        takes milliseconds: it is finished, not cut); the authors whose commands still
        run then are returned, and left behind on their daemon threads."""
        with self._lock:
            self._closed = True
            workers = list(self._workers.values())
            self._workers.clear()
        deadline = time.monotonic() + timeout
        for worker in workers:
            worker.finish()
        for worker in workers:
            worker.thread.join(max(0.0, deadline - time.monotonic()))
        return [w.author for w in workers if w.thread.is_alive()]
