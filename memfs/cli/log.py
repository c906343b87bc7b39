"""``memfs log`` and ``memfs diff``: what changed in the tree, who changed it, and how.

Both work on ``--store URL`` or the store of the mount a PATH (or the current directory)
is in; points in time are written as :mod:`memfs.history.when` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import click

from memfs.cli.common import local_time, store_option, target
from memfs.history.when import BadWhen, resolve_point
from memfs.store.base import Store

STORE_OPTION = store_option()


def point(store: Store, when: str, option: str = "--since") -> int:
    """The feed position ``WHEN`` names, or a usage error naming ``option``."""
    try:
        return resolve_point(store, when).seq
    except BadWhen as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc


def _row(entry_json: dict[str, object]) -> str:
    path = str(entry_json["path"])
    if entry_json["old_path"]:
        path = f"{entry_json['old_path']} -> {path}"
    rev = entry_json["rev"] if entry_json["rev"] is not None else "-"
    size = entry_json["size"] if entry_json["size"] is not None else "-"
    sha = str(entry_json["sha256"])[:12] if entry_json["sha256"] else "-"
    when = local_time(int(entry_json["time_ns"]))  # type: ignore[call-overload]
    return f"{rev}  {when}  {entry_json['author']}  {entry_json['op']}  {path}  {size}  {sha}"


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
@click.option("--since", "when", metavar="WHEN", help="Only after a revision, time or span (2h).")
@click.option("--author", metavar="TEXT", help="Only changes whose author contains TEXT.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show at most N changes.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@STORE_OPTION
def log(
    path: str | None,
    when: str | None,
    author: str | None,
    limit: int | None,
    as_json: bool,
    store_url: str | None,
) -> None:
    """The changes of the tree (or under PATH), newest first: revision, time, author,
    operation, path, size and short hash.

    WHEN is a revision number, a checkpoint, an ISO time (2026-11-30T12:00) or a
    duration (2h, 3d).
    """
    from memfs.history.log import log as read_log

    with target(path, store_url) as (store, rel, _):
        since = 0 if when is None else point(store, when)
        for entry in read_log(store, rel, since_seq=since, author=author, limit=limit):
            record = entry.as_json()
            click.echo(json.dumps(record) if as_json else _row(record))


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
@click.argument("revs", nargs=-1, type=click.IntRange(min=1), metavar="[REV [REV]]")
@click.option("--since", "when", metavar="WHEN", help="The whole tree (or PATH) since WHEN.")
@click.option("--color/--no-color", default=None, help="Colour (default: on a terminal).")
@STORE_OPTION
def diff(
    path: str | None,
    revs: tuple[int, ...],
    when: str | None,
    color: bool | None,
    store_url: str | None,
) -> None:
    """A unified diff of PATH between two revisions (default: its previous revision
    against its current content), or with --since of the tree or PATH since a
    revision, a time, a duration or a checkpoint.
    """
    from memfs.history.diff import file_diff, tree_diff

    if len(revs) > 2:
        raise click.UsageError("give at most two revisions: memfs diff PATH [REV [REV]]")
    if when is None and path is None:
        raise click.UsageError("give a PATH, or --since WHEN for the changes of the tree")
    if when is not None and revs:
        raise click.UsageError("give revisions or --since, not both")
    with target(path, store_url) as (store, rel, _):
        if when is not None:
            _echo_diff(tree_diff(store, point(store, when), rel), color)
            return
        old, new = (*revs, None, None)[:2]
        _echo_diff(file_diff(store, rel, old, new), color)


COMMANDS = [log, diff]
