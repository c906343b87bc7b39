"""The ASGI app of ``memfs web``: routes, the guard and sessions in front, one page for
every refusal.

Stable addresses: ``/`` the timeline, ``/op/ID``, ``/tree/PATH``, ``/history/PATH``,
``/search?q=``, ``/checkpoints``; ``/events`` is the timeline's event stream and
``/static/`` the page's own style and script (nothing is loaded from elsewhere);
``/blob/SHA256`` downloads a content a page names by its hash (the two sides of a diff
too large to show). An unknown address, id or revision is a 404 page; a path the gate
refuses, or a number or time out of range, is a 400 page with one sentence; a POST
without the form token is a 403 page. Work a page started stops when its client goes
away or the server stops (:mod:`memfs.web.work`).
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

from memfs.errors import NotFound, StoreError
from memfs.history.bounded import Stopped
from memfs.history.when import BadWhen
from memfs.httpguard import Address, ASGIApp, Guard
from memfs.store.base import Store
from memfs.web import actions, live, pages, work
from memfs.web.csrf import Sessions, Tokens
from memfs.web.site import HERE, Refused, Site, templates

log = logging.getLogger(__name__)
TOKEN_COOKIE = "memfs_web_session"  # its name ends in the server's port
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
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


def blob(request: Request) -> Response:
    """A content by its hash, as a download (never shown inline: it is the memory's,
    not the page's)."""
    site = pages.site_of(request)
    sha = str(request.path_params["sha256"])
    if not _SHA256.fullmatch(sha):
        raise Refused(400, "Not a hash", "a content is named by its SHA-256 in hex")
    try:
        data = site.store.read_blob(sha)
    except NotFound:
        raise Refused(404, "Not retained", f"no retained revision holds {sha}") from None
    name = _FILE_NAME.sub("_", request.query_params.get("name", "")).strip("._") or sha
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"content-disposition": f'attachment; filename="{name[:120]}"'},
    )


async def _bad_number(request: Request, exc: Exception) -> Response:
    return _error_page(request, 400, "Not understood", str(exc))


async def _stopped(request: Request, exc: Exception) -> Response:
    return _error_page(request, 503, "Stopped", "the server is stopping; try again shortly")


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
        Route("/blob/{sha256:str}", blob),
        Route("/checkpoints", pages.checkpoints, methods=["GET"]),
        Route("/checkpoints", actions.checkpoint_do, methods=["POST"]),
        Route("/checkpoints/new", actions.checkpoint_confirm, methods=["GET"]),
        Route("/checkpoints/{name:str}/return", actions.return_confirm, methods=["GET"]),
        Route("/checkpoints/{name:str}/return", actions.return_do, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]


def build(
    store: Store, *, address: Address, token: str | None, user: str, store_label: str
) -> tuple[ASGIApp, live.Feed, work.Work]:
    """The guarded app over ``store``, its feed follower (close it to end every event
    stream before the server stops) and its requests' work (stop it so every page in
    flight ends at its next step)."""
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
            Stopped: _stopped,
            BadWhen: _bad_number,
            HTTPException: _http_error,
            StoreError: _store_error,
            Exception: _unexpected,
        },
        lifespan=lifespan,
    )
    app.state.site = site
    doing = work.Work(Sessions(app))
    return Guard(doing, address, token, cookie=TOKEN_COOKIE), feed, doing
