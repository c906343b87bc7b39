"""Serving ``memfs web`` on a bound socket until SIGINT or SIGTERM.

A signal first ends every open event stream (the feed follower closes) and tells every
page in flight to stop its work (a diff ends at its next step), then the server stops
taking requests and finishes the ones in flight, within a second or two whatever they
were doing; the caller closes the store afterwards.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import anyio

from memfs.httpguard import Address
from memfs.httpserve import Uvicorn, until_signal
from memfs.store.base import Store
from memfs.web.app import build


async def serve(
    store: Store,
    address: Address,
    sock: socket.socket,
    *,
    token: str | None,
    user: str,
    store_label: str,
    on_ready: Callable[[str], None],
) -> None:
    app, feed, doing = build(
        store, address=address, token=token, user=user, store_label=store_label
    )
    web = Uvicorn(app)
    port = sock.getsockname()[1]

    def stop() -> None:
        feed.close()
        doing.stop()
        web.stop()

    async with anyio.create_task_group() as tasks:

        async def run() -> None:
            await web.server.serve(sockets=[sock])
            tasks.cancel_scope.cancel()

        tasks.start_soon(run)
        tasks.start_soon(until_signal, stop, lambda: on_ready(address.url(port)))
