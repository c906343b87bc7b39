"""The stop flag of :mod:`memfs.web.work`: a page's work, running on a worker thread,
ends at its next step when its client disconnects or the server stops, and a request
that arrives after the stop is stopped at once. The real middleware under a real anyio
event loop, with the ASGI messages a server sends."""

from __future__ import annotations

import threading
from collections.abc import Callable, MutableMapping
from typing import Any

import anyio
import pytest

from memfs.history.bounded import Stopped
from memfs.web import work

Message = dict[str, Any]


def _looping_app(steps: list[int], outcome: list[str]) -> Callable[..., Any]:
    """An ASGI app whose page works step by step, asking its budget at each step,
    until told to stop (or, if never told, for about 20 s, then says it finished)."""

    def page() -> None:
        budget = work.budget()
        try:
            for n in range(20_000):
                steps.append(n)
                budget.stopping()
                threading.Event().wait(0.001)  # one step of work
        except Stopped:
            outcome.append("stopped")
        else:
            outcome.append("finished")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "http.request"
        await anyio.to_thread.run_sync(page)
        await send({"type": "http.response.start", "status": 503, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


async def _serve(doing: work.Work, gone: anyio.Event) -> list[Message]:
    sent: list[Message] = []
    first = True

    async def receive() -> Message:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    await doing({"type": "http", "method": "GET", "path": "/", "headers": []}, receive, send)
    return sent


@pytest.mark.parametrize("how", ["client-gone", "server-stop"])
def test_a_page_s_work_stops_when_its_client_goes_or_the_server_stops(how: str) -> None:
    steps: list[int] = []
    outcome: list[str] = []
    doing = work.Work(_looping_app(steps, outcome))

    async def main() -> list[Message]:
        gone = anyio.Event()
        async with anyio.create_task_group() as tasks:
            result: list[list[Message]] = []

            async def run() -> None:
                result.append(await _serve(doing, gone))

            tasks.start_soon(run)
            with anyio.fail_after(30):
                while len(steps) < 5:  # the page is working
                    await anyio.sleep(0.01)
            if how == "client-gone":
                gone.set()
            else:
                doing.stop()
        gone.set()
        return result[0]

    sent = anyio.run(main)
    assert outcome == ["stopped"]
    assert sent[0]["status"] == 503
    assert doing.live == set()


def test_a_request_after_the_stop_does_no_work() -> None:
    steps: list[int] = []
    outcome: list[str] = []
    doing = work.Work(_looping_app(steps, outcome))
    doing.stop()

    async def main() -> list[Message]:
        gone = anyio.Event()
        try:
            return await _serve(doing, gone)
        finally:
            gone.set()

    anyio.run(main)
    assert outcome == ["stopped"] and steps == [0]
