"""Serving ``memfs webdav`` on a bound socket until SIGINT or SIGTERM, recorded for
``memfs status`` while it listens."""

from __future__ import annotations

import socket
from collections.abc import Callable

import anyio

from memfs.httpguard import Address
from memfs.httpserve import Uvicorn, until_signal
from memfs.store.base import Store
from memfs.webdav import running
from memfs.webdav.app import build


async def serve(
    store: Store,
    address: Address,
    sock: socket.socket,
    *,
    token: str | None,
    user: str,
    prefix: str,
    on_ready: Callable[[str], None],
) -> None:
    server = Uvicorn(build(store, address=address, token=token, user=user, prefix=prefix))
    url = address.url(sock.getsockname()[1]) + "/"
    record = running.new_record(url, store.url, prefix)

    def ready() -> None:
        running.write(record)
        on_ready(url)

    try:
        async with anyio.create_task_group() as tasks:

            async def run() -> None:
                await server.server.serve(sockets=[sock])
                tasks.cancel_scope.cancel()

            tasks.start_soon(run)
            tasks.start_soon(until_signal, server.stop, ready)
    finally:
        running.remove(record)
