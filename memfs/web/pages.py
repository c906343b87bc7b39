"""The pages that read: the timeline, one operation, the tree, a file's history, search.

Every figure on them comes from the store's history API and :mod:`memfs.history`
(operations, revisions across renames, diffs); nothing here decides history itself.
Endpoints are plain functions: Starlette runs them on worker threads, where store
calls may block.
"""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memfs.errors import IsADirectory, NotFound, QueryError
from memfs.history.follow import lineage
from memfs.history.operations import Operation, operation, operation_steps, operations
from memfs.history.steps import Step
from memfs.history.when import (
    Ambiguous,
    BadWhen,
    OutOfRange,
    ago,
    check_number,
    parse_number,
    parse_time,
)
from memfs.store.base import Revision
from memfs.store.matching import parse_query
from memfs.web import render, steps, work
from memfs.web.site import Refused, Site, gate

TIMELINE_PAGE = 50
STEPS_PAGE = 100  # steps of one operation shown per page, each with its diff
DIFF_ROWS = 400  # rows of one step's diff on an operation's page
COMPARE_ROWS = 20_000  # rows of a diff on its own page
TEXT_CHARS = 2 * 1024 * 1024  # a file's text shown whole up to this
MARKDOWN_CHARS = 256 * 1024  # longer Markdown is shown as text: rendering it takes seconds


def site_of(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


def int_param(request: Request, name: str, default: int | None = None) -> int | None:
    """The whole number a query parameter holds (the CLI's parse: :mod:`memfs.history.when`);
    a 400 page for anything else, out of range included."""
    value = request.query_params.get(name, "").strip()
    if not value:
        return default
    return number(value, name)


def number(value: str | int, name: str) -> int:
    """``value`` (an address's number) when a store can hold it; a 400 page otherwise."""
    try:
        if isinstance(value, int):
            return check_number(value, name)
        return parse_number(value, name)
    except BadWhen as exc:
        raise Refused(400, "Not a number memfs can use", str(exc)) from None


def _when(text: str, name: str, now_ns: int) -> int | None:
    text = text.strip()
    if not text:
        return None
    try:
        moment = parse_time(text)
        if moment is not None:
            return moment
        return ago(now_ns, text)
    except OutOfRange as exc:
        raise Refused(400, "Out of range", f"{name}: {exc}") from None
    except Ambiguous as exc:
        raise Refused(400, "Not a time", f"{name}: {exc}") from None
    except BadWhen:
        raise Refused(
            400,
            "Not a time",
            f"{name} {text!r} is neither an ISO time (2026-11-30T12:00) nor a duration (2h, 3d)",
        ) from None


class Filters:
    """The timeline's filters, read from the query string."""

    def __init__(self, request: Request, now_ns: int) -> None:
        q = request.query_params
        self.actor = q.get("actor", "").strip()
        self.path_text = q.get("path", "").strip()
        self.path = gate(self.path_text) if self.path_text else ""
        self.since_text = q.get("since", "").strip()
        self.until_text = q.get("until", "").strip()
        self.since_ns = _when(self.since_text, "since", now_ns)
        self.until_ns = _when(self.until_text, "until", now_ns)

    def query(self) -> dict[str, str]:
        pairs = {
            "actor": self.actor,
            "path": self.path_text,
            "since": self.since_text,
            "until": self.until_text,
        }
        return {k: v for k, v in pairs.items() if v}

    def read(self, site: Site, before: int | None, limit: int) -> list[Operation]:
        return operations(
            site.store,
            path=self.path,
            actor=self.actor or None,
            since_ns=self.since_ns,
            until_ns=self.until_ns,
            before=before,
            limit=limit,
        )


def timeline(request: Request) -> Response:
    site = site_of(request)
    filters = Filters(request, site.store.clock())
    before = int_param(request, "before")
    seq = site.store.last_seq()
    ops = filters.read(site, before, TIMELINE_PAGE + 1)
    more = len(ops) > TIMELINE_PAGE
    ops = ops[:TIMELINE_PAGE]
    older = ops[-1].id if more else None  # the next page: ids below the last shown
    return site.page(
        request,
        "timeline.html",
        title="Timeline",
        ops=ops,
        filters=filters,
        older=older,
        live=before is None,
        seq=seq,
        checkpoints={cp.seq: cp.name for cp in site.store.checkpoints()},
    )


def new_rows(site: Site, request: Request, after: int) -> tuple[int, list[str]]:
    """For the event stream: the feed position read up to, and the rows of the
    operations with a change past ``after`` (new ones, and ones that grew: a burst
    through the mount goes on over many commits), oldest first."""
    filters = Filters(request, site.store.clock())
    seq = site.store.last_seq()
    stored = site.store.operations(
        limit=TIMELINE_PAGE,
        actor=filters.actor or None,
        since_ns=filters.since_ns,
        until_ns=filters.until_ns,
        path=filters.path or None,
    )
    fresh = [operation(site.store, op.id) for op in stored if op.last_seq > after]
    template = site.templates.get_template("_row.html")
    rows = [template.render(op=op, fresh=True) for op in reversed(fresh)]
    return seq, rows


def operation_of(site: Site, request: Request) -> tuple[Operation, list[Step]]:
    """The operation the address names and its net steps; a 404 page for none."""
    op_id = number(request.path_params["op_id"], "operation")
    try:
        return operation(site.store, op_id), operation_steps(site.store, op_id)
    except NotFound:
        raise Refused(404, "No such operation", f"there is no operation {op_id}") from None


def op_page(request: Request) -> Response:
    site = site_of(request)
    op, folded = operation_of(site, request)
    pages = max(1, math.ceil(len(folded) / STEPS_PAGE))
    page = int_param(request, "page", 1) or 1
    if page > pages:
        raise Refused(404, "No such page", f"operation {op.id} has {pages} pages of changes")
    start = (page - 1) * STEPS_PAGE
    shown = steps.views(site.store, folded, start, STEPS_PAGE, DIFF_ROWS, work.budget())
    return site.page(
        request,
        "op.html",
        title=f"Operation {op.id}",
        op=op,
        total=len(folded),
        views=shown,
        page=page,
        pages=pages,
        start=start,
        note=request.query_params.get("note", ""),
    )


def tree(request: Request) -> Response:
    site = site_of(request)
    path = gate(request.path_params.get("path", ""))
    try:
        entry = site.store.stat(path)
    except NotFound:
        raise Refused(404, "Not found", f"nothing is at {render_path(path)}") from None
    crumbs = _crumbs(path)
    if entry.is_dir:
        return site.page(
            request,
            "tree.html",
            title=render_path(path),
            path=path,
            crumbs=crumbs,
            entries=site.store.listdir(path),
            entry=entry,
        )
    if entry.kind == "symlink":
        return site.page(
            request, "file.html", title=path, path=path, crumbs=crumbs, entry=entry, link=True
        )
    data, entry = site.store.read(path)
    last = site.store.history(path, limit=1)[0]
    text = render.as_text(data)
    raw = request.query_params.get("raw") == "1"
    renders = text is not None and render.is_markdown(path) and len(text) <= MARKDOWN_CHARS
    markdown = not raw and renders
    cut = text is not None and len(text) > TEXT_CHARS
    return site.page(
        request,
        "file.html",
        title=path,
        path=path,
        crumbs=crumbs,
        entry=entry,
        last=last,
        text=text[:TEXT_CHARS] if text is not None else None,
        cut=cut,
        html=render.markdown(text) if markdown and text is not None else None,
        can_render=renders,
        raw=raw,
        sha256=render.sha256(data),
        link=False,
    )


def render_path(path: str) -> str:
    return "/memories" + ("/" + path if path else "")


def _crumbs(path: str) -> list[tuple[str, str]]:
    parts = path.split("/") if path else []
    return [(part, "/".join(parts[: i + 1])) for i, part in enumerate(parts)]


def lineage_of(site: Site, path: str) -> list[Revision]:
    try:
        return lineage(site.store, path)
    except IsADirectory:
        raise Refused(400, "A directory", f"{render_path(path)} is a directory") from None
    except NotFound:
        raise Refused(404, "No history", f"{render_path(path)} has no revisions") from None


def revision_in(revisions: list[Revision], rev: int | None, path: str) -> Revision:
    for revision in revisions:
        if revision.rev == rev:
            return revision
    raise Refused(404, "No such revision", f"{render_path(path)} has no revision {rev}")


def history(request: Request) -> Response:
    site = site_of(request)
    path = gate(request.path_params.get("path", ""))
    revisions = lineage_of(site, path)
    rev = int_param(request, "rev")
    a, b = int_param(request, "a"), int_param(request, "b")
    context: dict[str, Any] = {"path": path, "revisions": revisions, "crumbs": _crumbs(path)}
    try:
        current = site.store.stat(path)
        context["current_rev"] = current.rev if current.is_file else None
    except NotFound:
        context["current_rev"] = None
    if rev is not None:
        shown = revision_in(revisions, rev, path)
        data = _content(site, shown)
        text = None if data is None else render.as_text(data)
        context.update(shown=shown, data=data, text=text)
        return site.page(request, "revision.html", title=f"{path} at {rev}", **context)
    if a is not None or b is not None:
        older = revision_in(revisions, a, path)
        newer = revision_in(revisions, b, path)
        if older.rev > newer.rev:
            older, newer = newer, older
        old, new = _content(site, older), _content(site, newer)
        shown_diff = None
        if old is not None and new is not None:
            shown_diff = render.diff(
                old,
                new,
                f"a/{older.path}@{older.rev}",
                f"b/{newer.path}@{newer.rev}",
                COMPARE_ROWS,
                work.budget().part(),
            )
        context.update(older=older, newer=newer, diff=shown_diff)
        return site.page(request, "compare.html", title=f"{path}: compare", **context)
    return site.page(request, "history.html", title=f"History of {path}", **context)


def _content(site: Site, revision: Revision) -> bytes | None:
    try:
        return site.store.read_revision(revision.path, revision.rev)
    except NotFound:
        return None


def search(request: Request) -> Response:
    site = site_of(request)
    q = request.query_params.get("q", "")
    regex = request.query_params.get("regex") == "1"
    path_text = request.query_params.get("path", "").strip()
    path = gate(path_text) if path_text else ""
    hits: list[Any] = []
    problem = ""
    if q.strip():
        try:
            query = parse_query(q, regex=regex)
            found = site.store.search(q, path, regex=regex, limit=50)
        except QueryError as exc:
            problem = str(exc)
        except NotFound:
            problem = f"nothing is at {render_path(path)}"
        else:
            hits = [
                (hit, [(n, render.highlight(text, query.patterns)) for n, text in hit.lines])
                for hit in found
            ]
    return site.page(
        request,
        "search.html",
        status=400 if problem else 200,
        title=f"Search: {q}" if q else "Search",
        search_query=q,
        regex=regex,
        path_text=path_text,
        hits=hits,
        problem=problem,
    )


def checkpoints(request: Request) -> Response:
    site = site_of(request)
    return site.page(
        request,
        "checkpoints.html",
        title="Checkpoints",
        checkpoints=list(reversed(site.store.checkpoints())),
        seq=site.store.last_seq(),
    )
