"""The ASGI app of ``memfs web``: routes, the guard and sessions in front, one page for
every refusal.

Stable addresses: ``/`` the timeline, ``/op/ID``, ``/tree/PATH``, ``/history/PATH``,
``/search?q=``, ``/checkpoints``; ``/events`` is the timeline's event stream and
``/static/`` the page's own style and script (nothing is loaded from elsewhere). An
unknown address, id or revision is a 404 page; a path the gate refuses is a 400 page
with the gate's sentence; a POST without the form token is a 403 page.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator

import anyio
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memfs.errors import StoreError
from memfs.httpguard import Address, ASGIApp, Guard
from memfs.store.base import Store
from memfs.web import actions, live, pages
from memfs.web.csrf import Sessions, Tokens
from memfs.web.site import HERE, Refused, Site, templates

log = logging.getLogger(__name__)
TOKEN_COOKIE = "memfs_web_token"
_NOTES = [
    (re.compile(r"undid-(\d+)"), "This operation undid operation {0}."),
    (re.compile(r"restored-(\d+)-(\d+)"), "Revision {0} was put back as revision {1}."),
    (re.compile(r"redacted-(\d+)"), "The content of revision {0} was removed for good."),
    (re.compile(r"made-(.+)"), "Checkpoint {0} was made."),
    (re.compile(r"already-(.+)"), "The tree already is as it was at {0}; nothing changed."),
    (re.compile(r"returned"), "This operation returned the tree to a checkpoint."),
    (re.compile(r"nothing"), "There was nothing to undo."),
]


def note_text(note: str) -> str:
    """The sentence a result page shows for the ``note`` its address carries."""
    for pattern, sentence in _NOTES:
        found = pattern.fullmatch(note)
        if found:
            return sentence.format(*found.groups())
    return ""


def events(request: Request) -> Response:
    site = pages.site_of(request)
    after = pages.int_param(request, "after", 0) or 0
    pages.Filters(request, site.store.clock())  # refuse bad filters before streaming
    stream = live.stream(site.feed, after, lambda seq: pages.new_rows(site, request, seq))
    return EventSourceResponse(stream, ping=live.PING)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return _error_page(request, exc.status, exc.title, exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _error_page(request, 404, "Not found", f"nothing is at {request.url.path}")
    return _error_page(request, exc.status_code, "Refused", str(exc.detail))


async def _store_error(request: Request, exc: Exception) -> Response:
    return _error_page(request, 409, "The store refused", str(exc))


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("memfs web: %s %s failed", request.method, request.url.path, exc_info=exc)
    return _error_page(request, 500, "Something went wrong", f"{type(exc).__name__}: {exc}")


def _error_page(request: Request, status: int, title: str, message: str) -> Response:
    site: Site = request.app.state.site
    return site.page(request, "error.html", status=status, title=title, message=message)


def routes() -> list[Route | Mount]:
    return [
        Route("/", pages.timeline),
        Route("/events", events),
        Route("/op/{op_id:int}", pages.op_page),
        Route("/op/{op_id:int}/undo", actions.undo_confirm, methods=["GET"]),
        Route("/op/{op_id:int}/undo", actions.undo_do, methods=["POST"]),
        Route("/tree", pages.tree),
        Route("/tree/{path:path}", pages.tree),
        Route("/restore/{path:path}", actions.revision_confirm, methods=["GET"]),
        Route("/restore/{path:path}", actions.revision_do, methods=["POST"]),
        Route("/redact/{path:path}", actions.revision_confirm, methods=["GET"]),
        Route("/redact/{path:path}", actions.revision_do, methods=["POST"]),
        Route("/history/{path:path}", pages.history),
        Route("/search", pages.search),
        Route("/checkpoints", pages.checkpoints, methods=["GET"]),
        Route("/checkpoints", actions.checkpoint_do, methods=["POST"]),
        Route("/checkpoints/new", actions.checkpoint_confirm, methods=["GET"]),
        Route("/checkpoints/{name:str}/return", actions.return_confirm, methods=["GET"]),
        Route("/checkpoints/{name:str}/return", actions.return_do, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]


def build(
    store: Store, *, address: Address, token: str | None, user: str, store_label: str
) -> tuple[ASGIApp, live.Feed]:
    """The guarded app over ``store``, and its feed follower (close it to end every
    event stream before the server stops)."""
    feed = live.Feed(store)
    site = Site(store, user, templates(), Tokens(), feed, store_label)
    site.templates.env.globals["note_text"] = note_text

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        feed.seq = await anyio.to_thread.run_sync(store.last_seq)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(feed.follow)
            yield
            feed.close()

    app = Starlette(
        routes=routes(),
        exception_handlers={
            Refused: _refused,
            HTTPException: _http_error,
            StoreError: _store_error,
            Exception: _unexpected,
        },
        lifespan=lifespan,
    )
    app.state.site = site
    return Guard(Sessions(app), address, token, cookie=TOKEN_COOKIE), feed
