"""Running an ASGI app on a socket :mod:`memfs.httpguard` bound, until SIGINT or SIGTERM.

uvicorn's own signal handling is turned off: it would raise the signal again once it
has stopped, and each door has things to close after the server (a private mount, the
web page's event streams). :func:`until_signal` installs the handlers instead and only
then says the door is ready, so a signal sent on seeing that finds them in place.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

import anyio


async def until_signal(stop: Callable[[], None], on_ready: Callable[[], None]) -> None:
    """Call ``on_ready`` once SIGINT and SIGTERM are caught, then ``stop`` at the first."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        on_ready()
        async for _ in signals:
            stop()
            return


class Uvicorn:
    """uvicorn's server without its own signal handling; :meth:`stop` ends it."""

    def __init__(self, app: Any, *, graceful_seconds: float = 2) -> None:
        import uvicorn

        config = uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            # A client's open event stream must not hold the shutdown forever. uvicorn
            # types it int, yet only hands it to asyncio.wait_for, which takes seconds as
            # a float (the MCP door's grace is 0.5 s).
            timeout_graceful_shutdown=graceful_seconds,  # type: ignore[arg-type]
        )

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        self.server = Server(config)

    def stop(self) -> None:
        self.server.should_exit = True
