"""Work a page starts stops when its client goes away or the server stops.

Pages run on worker threads, which cannot be cancelled from outside; a diff that is
still working when its client has gone, or when SIGTERM arrives, would hold a worker
and the server's exit until it ended. :class:`Work`, an ASGI middleware, gives each
request a flag that is set when the client disconnects (its receive channel says so)
or when the server stops (:meth:`Work.stop`); the request's :func:`budget` checks it
at every step, so the work ends within a step of either.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import anyio

from memfs.history.bounded import Budget
from memfs.httpguard import ASGIApp, Receive, Scope, Send

# Lines all the diffs of one page may visit together (a page of an operation shows
# up to a hundred steps); each diff also has its own budget.
PAGE_BUDGET = 8_000_000

_flag: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "memfs_web_request_gone", default=None
)
_page: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "memfs_web_page_budget", default=None
)


def budget() -> Budget:
    """The budget of the request being served (one for a page outside a request)."""
    found = _page.get()
    if found is None:
        flag = _flag.get()
        found = Budget(PAGE_BUDGET, flag.is_set if flag is not None else None)
        _page.set(found)
    return found


class Work:
    """ASGI middleware: each HTTP request's stop flag (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.live: set[threading.Event] = set()
        self.stopping = False

    def stop(self) -> None:
        """Stop the work of every request in flight, and of any that still arrives."""
        self.stopping = True
        for flag in list(self.live):
            flag.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = threading.Event()
        if self.stopping:
            gone.set()
        self.live.add(gone)
        # Messages pass one at a time (no buffer), so a body is still read only as the
        # app asks; once the app stops asking, the pump waits on the client and notices
        # when it goes.
        to_app, from_pump = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with to_app:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        gone.set()
                    await to_app.send(message)
                    if message["type"] == "http.disconnect":
                        return

        async def app_receive() -> Any:
            try:
                return await from_pump.receive()
            except anyio.EndOfStream:
                return {"type": "http.disconnect"}

        flag_token = _flag.set(gone)
        page_token = _page.set(None)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(pump)
                try:
                    await self.app(scope, app_receive, send)
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            from_pump.close()
            _page.reset(page_token)
            _flag.reset(flag_token)
            self.live.discard(gone)
