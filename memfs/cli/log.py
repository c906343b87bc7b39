"""``memfs log`` and ``memfs diff``: what changed in the tree, who changed it, and how.

Both work on ``--store URL`` or the store of the mount a PATH (or the current directory)
is in; points in time are written as :mod:`memfs.history.when` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import click

from memfs.cli.common import (
    ACTOR_OPTION,
    JSON_OPTION,
    NUMBER,
    OldRevs,
    emit,
    local_time,
    reading,
    store_option,
)
from memfs.history.steps import Step
from memfs.history.when import BadWhen, resolve_point, resolve_time
from memfs.program import command
from memfs.store.base import Store

# "every operation" for the log's queries (the store pages through them itself).
ALL_OPERATIONS = 2**62

STORE_OPTION = store_option()


def point(store: Store, when: str, option: str = "--since") -> int:
    """The feed position ``WHEN`` names, or a usage error naming ``option``."""
    try:
        return resolve_point(store, when).seq
    except BadWhen as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc


def moment(store: Store, when: str, option: str) -> int:
    """The moment ``WHEN`` names, or a usage error naming ``option``."""
    try:
        return resolve_time(store, when)
    except BadWhen as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc


def _step_line(step: Step) -> str:
    where = f"{step.old_path} -> {step.path}" if step.old_path is not None else step.path or "/"
    rev = f"  (revision {step.rev})" if step.rev is not None and step.after is not None else ""
    return f"    {step.action}  {where}{rev}"


def _step_json(step: Step) -> dict[str, object]:
    out: dict[str, object] = {"path": step.path, "action": step.action, "rev": step.rev}
    if step.old_path is not None:
        out["old_path"] = step.old_path
    return out


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
@click.option("--since", "since", metavar="WHEN", help="Only operations after WHEN (2h, a time).")
@click.option("--until", "until", metavar="WHEN", help="Only operations up to WHEN.")
@ACTOR_OPTION
@click.option("--limit", type=NUMBER, metavar="N", help="Show at most N operations.")
@click.option("--files", is_flag=True, help="Each operation's changes under it.")
@click.option("--follow", is_flag=True, help="With PATH: across the renames that brought it there.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per operation.")
@STORE_OPTION
def log(
    path: str | None,
    since: str | None,
    until: str | None,
    actor: str | None,
    limit: int | None,
    files: bool,
    follow: bool,
    as_json: bool,
    store_url: str | None,
) -> None:
    """The operations of the tree (or that touched PATH), newest first: id, time, actor
    and what it did ("rm: deleted 5,000 files in many/").

    An operation is one memory command of a model, one memfs command, or one process's
    burst of changes through a mount. WHEN is a duration (2h, 3d), an ISO time
    (2026-11-30T12:00), a checkpoint or a revision number.
    """
    from memfs.history.follow import names_of
    from memfs.history.operations import operation_steps, operations

    if follow and path is None:
        raise click.UsageError("--follow needs the PATH of a file")
    with reading(path, store_url) as (store, rel, _):
        since_ns = None if since is None else moment(store, since, "--since") + 1
        until_ns = None if until is None else moment(store, until, "--until")
        paths = names_of(store, rel) if follow else [rel]
        shown: list[Any] = []
        for where in paths:
            shown += operations(
                store, path=where, actor=actor, since_ns=since_ns, until_ns=until_ns,
                limit=limit or ALL_OPERATIONS,
            )  # fmt: skip
        unique = {op.id: op for op in shown}
        ordered = sorted(unique.values(), key=lambda op: op.id, reverse=True)[:limit]
        if not ordered and path is not None and not _ever_touched(store, paths):
            # Nothing at all, not just nothing in the window asked for: a mistyped path
            # must not read as a file nobody changed.
            raise click.ClickException(
                f"no operation in this store ever touched '{rel or '/'}'; check the path"
                f" (`{command('log')}` lists them all)"
            )
        for op in ordered:
            steps = operation_steps(store, op.id) if files or as_json else []
            if as_json:
                record = op.as_json()
                record["changes"] = [_step_json(s) for s in steps]
                click.echo(json.dumps(record))
                continue
            detail = f"  ({op.detail})" if op.detail else ""
            # The summary leads with who did it; the actor's column says that already.
            what = op.summary.removeprefix(f"{op.actor}: ")
            click.echo(f"{op.id}  {local_time(op.start_ns)}  {op.actor}  {what}{detail}")
            for step in steps:
                click.echo(_step_line(step))


def _ever_touched(store: Store, paths: list[str]) -> bool:
    from memfs.history.operations import operations

    return any(operations(store, path=where, limit=1) for where in paths)


def _diff_json(lines: Iterable[str]) -> Iterator[dict[str, object]]:
    """One object per file of a unified diff: its path (``b/`` side; the ``a/`` side for
    a deletion), and the file's diff text."""
    path: str | None = None
    chunk: list[str] = []
    pending: str | None = None  # a "--- " line waiting to see whether "+++ " follows
    for line in lines:
        if pending is not None:
            if line.startswith("+++ "):
                if chunk:
                    yield {"path": path, "diff": "".join(chunk)}
                new = line[4:].rstrip("\n")
                old = pending[4:].rstrip("\n")
                side = new if new != "/dev/null" else old
                path = side[2:] if side.startswith(("a/", "b/")) else side
                chunk = [pending, line]
                pending = None
                continue
            chunk.append(pending)
            pending = None
        if line.startswith("--- "):
            pending = line
        else:
            chunk.append(line)
    if pending is not None:
        chunk.append(pending)
    if chunk:
        yield {"path": path, "diff": "".join(chunk)}


_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def _echo_diff(lines: Iterable[str], color: bool | None) -> None:
    """Print diff lines, styled (click drops the styles off a terminal)."""
    for line in lines:
        text = line.rstrip("\n")
        if text.startswith(("+++", "---")):
            text = click.style(text, bold=True)
        elif text[:1] in _STYLES:
            text = click.style(text, fg=_STYLES[text[:1]])
        click.echo(text, color=color)


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
# Revisions are --rev, as in restore, redact and history; two positional REVs after
# PATH (the old form) still work, unshown.
@click.argument("positional_revs", nargs=-1, type=NUMBER, metavar="", cls=OldRevs)
@click.option(
    "--rev",
    "revs",
    multiple=True,
    type=NUMBER,
    metavar="REV",
    help="A revision to compare; twice: from the first to the second.",
)
@click.option("--since", "when", metavar="WHEN", help="The whole tree (or PATH) since WHEN.")
@click.option("--color/--no-color", default=None, help="Colour (default: on a terminal).")
@JSON_OPTION
@STORE_OPTION
def diff(
    path: str | None,
    positional_revs: tuple[int, ...],
    revs: tuple[int, ...],
    when: str | None,
    color: bool | None,
    as_json: bool,
    store_url: str | None,
) -> None:
    """A unified diff of PATH between two revisions (default: its previous revision
    against its current content), or with --since of the tree or PATH since a
    revision, a time, a duration or a checkpoint.

    With one --rev REV, that revision against the current content; with two, from the
    first to the second.
    """
    from memfs.history.diff import file_diff, tree_diff

    revs = positional_revs + revs
    if len(revs) > 2:
        raise click.UsageError("give at most two revisions: memfs diff PATH --rev A --rev B")
    if when is None and path is None:
        raise click.UsageError("give a PATH, or --since WHEN for the changes of the tree")
    if when is not None and revs:
        raise click.UsageError("give revisions or --since, not both")
    with reading(path, store_url) as (store, rel, _):
        if when is not None:
            lines: Iterable[str] = tree_diff(store, point(store, when), rel)
        else:
            old, new = (*revs, None, None)[:2]
            lines = file_diff(store, rel, old, new)
        if as_json:
            for record in _diff_json(lines):
                emit(record)
        else:
            _echo_diff(lines, color)


COMMANDS = [log, diff]
