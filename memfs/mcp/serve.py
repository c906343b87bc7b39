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
import socket
import stat
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

from memfs.httpserve import Uvicorn, until_signal
from memfs.mcp.http import PATH, Address, Guard
from memfs.mcp.server import MemoryServer
from memfs.mcp.workers import STOP_GRACE


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
                # stdio_server types stdin as an anyio.AsyncFile, but only reads lines from
                # it with `async for`, which is all _Lines does (cancellably).
                async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
                    await server.server.run(read, write, server.initialization_options())
                tasks.cancel_scope.cancel()

            tasks.start_soon(serve)
            tasks.start_soon(until_signal, tasks.cancel_scope.cancel, on_ready)
    finally:
        if lines is not None:
            lines.restore()


def http_app(server: MemoryServer, address: Address, token: str | None) -> Any:
    """The ASGI app: the SDK's streamable HTTP endpoint at /mcp, behind the guard.

    The guard checks Host and Origin against the address served, so the SDK's own
    DNS-rebinding check (which lets any ``http://127.0.0.1:*`` origin through) is off.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.server.streamable_http_app(
        streamable_http_path=PATH,
        host=address.host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Guard(app, address, token)


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
    # Half a second for requests in flight: an open event stream or a command still
    # running must not hold SIGTERM (the workers get their own half second after).
    web = Uvicorn(http_app(server, address, token), graceful_seconds=STOP_GRACE)
    async with server.running(), anyio.create_task_group() as tasks:

        async def serve() -> None:
            await web.server.serve(sockets=[sock])
            tasks.cancel_scope.cancel()

        tasks.start_soon(serve)
        url = f"http://{Address(address.host, port).url_host}:{port}{PATH}"
        tasks.start_soon(until_signal, web.stop, lambda: on_ready(url))
