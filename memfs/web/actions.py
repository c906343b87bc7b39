"""The actions: Undo an operation, Restore or Redact a revision, create a Checkpoint,
return the tree to one.

Each is two steps, so nothing changes until the person confirms: a GET shows what will
happen (the undo's conflicts, the restore's plan, computed as dry runs by the same
history functions) with a form; its POST, carrying the form token, does it as one
operation of the actor ``web:USER`` (:meth:`~memfs.store.base.Store.acting`) and sends
the browser to the result. Every change is an ordinary store mutation, so mounts,
mirrors and the timeline see it at once.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote, urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memfs.errors import AlreadyExists, Conflict, IsADirectory, NotFound, StoreError
from memfs.history.operations import undo_operation
from memfs.history.restore import RestoreError, restore_file, restore_tree
from memfs.store.base import Act
from memfs.web.csrf import FIELD
from memfs.web.pages import lineage_of, number, operation_of, render_path, revision_in, site_of
from memfs.web.site import Refused, Site, gate


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _url_path(path: str) -> str:
    return quote(path, safe="/")


async def _form(request: Request) -> FormData:
    """The POSTed form, once its token is checked (403 without it)."""
    form = await request.form()
    site = site_of(request)
    if not site.tokens.valid(request, form.get(FIELD)):
        raise Refused(
            403,
            "Form token missing",
            "this form did not carry this server's token; reload the page and try again",
        )
    return form


# --- Undo ---------------------------------------------------------------------------


SHOWN_STEPS = 200  # steps an undo's confirmation lists


def _act(site: Site, detail: str) -> Act:
    """One web action as one operation of the person the page acts for."""
    return Act(site.actor, detail=detail)


def undo_confirm(request: Request) -> Response:
    site = site_of(request)
    op, steps = operation_of(site, request)
    check = undo_operation(site.store, op.id, actor=site.actor, dry_run=True, label="")
    return site.page(
        request,
        "undo.html",
        title=f"Undo operation {op.id}",
        op=op,
        total=len(steps),
        steps=steps[:SHOWN_STEPS],
        conflicts=check.conflicts,
    )


async def undo_do(request: Request) -> Response:
    form = await _form(request)
    site = site_of(request)
    force = form.get("force") == "1"
    op_id = number(request.path_params["op_id"], "operation")

    def run() -> Response:
        op, steps = operation_of(site, request)
        result = undo_operation(site.store, op.id, actor=site.actor, force=force, label="")
        if not result.done and result.conflicts:
            return site.page(
                request,
                "undo.html",
                status=409,
                title=f"Undo operation {op.id}",
                op=op,
                total=len(steps),
                steps=steps[:SHOWN_STEPS],
                conflicts=result.conflicts,
                refused=True,
            )
        if result.new_op is None:
            return _see_other(f"/op/{op.id}?note=nothing")
        return _see_other(f"/op/{result.new_op}?note=undid-{op_id}")

    return await _threaded(run)


async def _threaded(fn: Callable[[], Response]) -> Response:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn)


# --- Restore and Redact -------------------------------------------------------------


def _action(request: Request) -> str:
    """``restore`` or ``redact``: the first segment of the address."""
    return request.url.path.split("/")[1]


def _chosen(site: Site, request: Request, path: str, rev_text: object) -> tuple[int, str]:
    if not isinstance(rev_text, str) or not rev_text.isascii() or not rev_text.isdigit():
        raise Refused(400, "No revision", "choose the revision to act on")
    rev = number(rev_text, "rev")
    revision = revision_in(lineage_of(site, path), rev, path)
    return rev, revision.path


def revision_confirm(request: Request) -> Response:
    site = site_of(request)
    action = _action(request)
    path = gate(request.path_params.get("path", ""))
    rev, made_at = _chosen(site, request, path, request.query_params.get("rev"))
    if action == "restore" and made_at != path:
        raise Refused(
            400,
            "Made under another name",
            f"revision {rev} was made at {render_path(made_at)}; restore it from there",
        )
    return site.page(
        request,
        "revision_action.html",
        title=f"{action.title()} revision {rev}",
        action=action,
        path=made_at,
        rev=rev,
        back=path,
    )


async def revision_do(request: Request) -> Response:
    form = await _form(request)
    site = site_of(request)
    action = _action(request)
    path = gate(request.path_params.get("path", ""))

    def run() -> Response:
        rev, made_at = _chosen(site, request, path, form.get("rev"))
        try:
            if action == "restore":
                with site.store.acting(_act(site, f"restore of {path} at revision {rev}")):
                    entry = restore_file(site.store, path, rev, author=site.actor)
                return _see_other(
                    f"/history/{_url_path(path)}?"
                    + urlencode({"note": f"restored-{rev}-{entry.rev}"})
                )
            with site.store.acting(_act(site, f"redaction of {made_at} revision {rev}")):
                site.store.redact(made_at, rev, author=site.actor)
        except (Conflict, IsADirectory, RestoreError, AlreadyExists) as exc:
            raise Refused(409, f"Cannot {action}", str(exc)) from None
        return _see_other(f"/history/{_url_path(path)}?" + urlencode({"note": f"redacted-{rev}"}))

    return await _threaded(run)


# --- Checkpoints --------------------------------------------------------------------


def _checkpoint_name(text: object) -> str:
    name = text.strip() if isinstance(text, str) else ""
    if not name or name.isdigit():
        raise Refused(
            400, "Not a checkpoint name", "a checkpoint name needs a letter (numbers are revisions)"
        )
    if len(name) > 200 or not name.isprintable():
        raise Refused(
            400, "Not a checkpoint name", "a checkpoint name is up to 200 printable characters"
        )
    return name


def checkpoint_confirm(request: Request) -> Response:
    site = site_of(request)
    name = _checkpoint_name(request.query_params.get("name"))
    return site.page(
        request, "checkpoint_new.html", title="New checkpoint", name=name, seq=site.store.last_seq()
    )


async def checkpoint_do(request: Request) -> Response:
    form = await _form(request)
    site = site_of(request)

    def run() -> Response:
        name = _checkpoint_name(form.get("name"))
        try:
            with site.store.acting(_act(site, f"checkpoint {name}")):
                site.store.set_checkpoint(name, author=site.actor)
        except AlreadyExists as exc:
            raise Refused(409, "Name in use", str(exc)) from None
        return _see_other("/checkpoints?" + urlencode({"note": f"made-{name}"}))

    return await _threaded(run)


def _checkpoint(site: Site, name: str) -> int:
    for cp in site.store.checkpoints():
        if cp.name == name:
            return cp.seq
    raise Refused(404, "No such checkpoint", f"there is no checkpoint {name!r}")


def return_confirm(request: Request) -> Response:
    site = site_of(request)
    name = request.path_params["name"]
    seq = _checkpoint(site, name)
    plan = restore_tree(site.store, seq, author=site.actor, dry_run=True)
    return site.page(request, "return.html", title=f"Return to {name}", name=name, plan=plan)


async def return_do(request: Request) -> Response:
    await _form(request)
    site = site_of(request)
    name = request.path_params["name"]

    def run() -> Response:
        seq = _checkpoint(site, name)
        act = _act(site, f"return to checkpoint {name}")
        try:
            with site.store.acting(act):
                plan = restore_tree(site.store, seq, author=site.actor)
        except (RestoreError, NotFound, StoreError) as exc:
            raise Refused(409, "Cannot return", str(exc)) from None
        if plan.changes == 0 or act.id is None:
            return _see_other("/checkpoints?" + urlencode({"note": f"already-{name}"}))
        return _see_other(f"/op/{act.id}?note=returned")

    return await _threaded(run)
