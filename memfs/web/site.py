"""What every page of one ``memfs web`` server shares: the store, the person it acts
for, the templates, the form tokens and the feed follower; and the gate for paths.

Every path a page or a form names goes through the handler's gate
(:func:`memfs.paths.parse` / :func:`~memfs.paths.parse_rel`); a refused one is answered
with the gate's own sentence (:class:`Refused`), never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from memfs.paths import ROOT, parse, parse_rel
from memfs.store.base import Store
from memfs.web import render, work
from memfs.web.csrf import FIELD, Tokens
from memfs.web.live import Feed

HERE = Path(__file__).parent


class Refused(Exception):
    """A request the page answers with a sentence and a status, not a traceback."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


def gate(text: str) -> str:
    """The store path a page names (``notes/a.md``, ``/memories/notes/a.md``, "" the
    root), through the gate; Refused (400) with the gate's sentence otherwise."""
    from memfs.errors import PathError

    text = text.strip()
    try:
        if text == ROOT or text.startswith(ROOT + "/"):
            return parse(text).rel
        return parse_rel(text.strip("/") if text not in ("", "/") else "").rel
    except PathError as exc:
        raise Refused(400, "Not a memory path", str(exc)) from None


@dataclass
class Site:
    store: Store
    user: str
    templates: Jinja2Templates
    tokens: Tokens
    feed: Feed
    store_label: str

    @property
    def actor(self) -> str:
        """Who the page's changes are recorded as."""
        return f"web:{self.user}"

    def page(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        context.setdefault("title", "")
        if status < 400:
            # No page is laid out for a client gone or a stop (error pages, made by
            # the app's handlers, always are: they are short).
            work.budget().stopping()
        return self.templates.TemplateResponse(
            request,
            template,
            {
                "site": self,
                "csrf_field": FIELD,
                "csrf": self.tokens.token(request),
                "search_query": "",
                **context,
            },
            status_code=status,
        )


def templates() -> Jinja2Templates:
    t = Jinja2Templates(directory=str(HERE / "templates"))
    env = t.env
    env.filters["local_time"] = render.local_time
    env.filters["iso_time"] = render.iso_time
    env.filters["size"] = render.size_text
    env.globals["model_path"] = lambda rel: ROOT + ("/" + rel if rel else "")
    env.trim_blocks = True
    env.lstrip_blocks = True
    return t
