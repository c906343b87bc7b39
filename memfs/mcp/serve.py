"""Running the MCP server over stdio or streamable HTTP until the client leaves or a
signal comes.

SIGINT and SIGTERM end either transport the same way: no new request is taken, the
commands already running finish (an edit in flight is completed, never cut), the change
watcher stops and the caller closes the tree (a private mount is unmounted with its
writes committed). Standard input is read without a blocking thread, so a signal ends
a stdio server even while its client keeps the pipe open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

from memfs.mcp.http import PATH, Address, BearerToken, is_loopback
from memfs.mcp.server import MemoryServer


async def _until_signal(stop: Callable[[], None], on_ready: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        on_ready()  # only now: a signal sent on seeing it must find the handler in place
        async for _ in signals:
            stop()
            return


class _Lines:
    """Lines of a pipe or terminal, read as they become readable (cancellable)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    def restore(self) -> None:
        with contextlib.suppress(OSError):
            os.set_blocking(self.fd, self.was_blocking)

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                if not self.buffer:
                    raise StopAsyncIteration
                line, self.buffer = self.buffer, b""
                return line.decode("utf-8", "replace")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return (line + b"\n").decode("utf-8", "replace")


def _pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def serve_stdio(server: MemoryServer, on_ready: Callable[[], None]) -> None:
    """Serve one client on stdin/stdout until it closes stdin or a signal comes."""
    lines = _Lines(0) if _pollable(0) else None
    try:
        async with server.running(), anyio.create_task_group() as tasks:

            async def serve() -> None:
                async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
                    await server.server.run(read, write, server.initialization_options())
                tasks.cancel_scope.cancel()

            tasks.start_soon(serve)
            tasks.start_soon(_until_signal, tasks.cancel_scope.cancel, on_ready)
    finally:
        if lines is not None:
            lines.restore()


class _Uvicorn:
    """uvicorn's server without its own signal handling (this module's does it, and
    uvicorn would raise the signal again once it has stopped)."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            # A client's open event stream (or a command still running) must not hold the
            # shutdown: SIGTERM ends the server within a second.
            timeout_graceful_shutdown=0.5,
        )

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[no-untyped-def]
                yield

        self.server = Server(config)

    def stop(self) -> None:
        self.server.should_exit = True


def http_app(server: MemoryServer, address: Address, token: str | None) -> Any:
    """The ASGI app: the SDK's streamable HTTP endpoint at /mcp, behind the token."""
    from mcp.server.transport_security import TransportSecuritySettings

    if is_loopback(address):
        # The SDK turns DNS-rebinding protection on for these host names.
        host = address.host if address.host in ("127.0.0.1", "localhost", "::1") else "127.0.0.1"
        app = server.server.streamable_http_app(streamable_http_path=PATH, host=host)
    else:
        # Reached by name or address from elsewhere: the token, not the Host header,
        # decides who may talk to it.
        app = server.server.streamable_http_app(
            streamable_http_path=PATH,
            host=address.host,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
    return BearerToken(app, token) if token else app


async def serve_http(
    server: MemoryServer,
    address: Address,
    sock: socket.socket,
    token: str | None,
    on_ready: Callable[[str], None],
) -> None:
    """Serve streamable HTTP on ``sock`` (bound to ``address`` by :func:`bind`) until a
    signal comes."""
    port = sock.getsockname()[1]
    web = _Uvicorn(http_app(server, address, token))
    async with server.running(), anyio.create_task_group() as tasks:

        async def serve() -> None:
            await web.server.serve(sockets=[sock])
            tasks.cancel_scope.cancel()

        tasks.start_soon(serve)
        url = f"http://{Address(address.host, port).url_host}:{port}{PATH}"
        tasks.start_soon(_until_signal, web.stop, lambda: on_ready(url))
