"""``memfs history PATH``: who changed a file, when, and what it contained.

PATH is a file in a memfs mount (its store is the mount's unless ``--store`` names
another), a model path (``/memories/notes.md``) or a store-relative path (``notes.md``)
in ``--store`` or the user's store. A deleted file's path shows its retained
(tombstoned) revision. Every error names the store it looked in.
"""

from __future__ import annotations

import click

from memfs.cli.common import Renamed, local_time, reading, store_option
from memfs.store.base import Revision


def format_revision(r: Revision) -> str:
    line = f"{r.rev}  {local_time(r.time_ns)}  {r.author}  {r.size}  {r.sha256[:12]}"
    if r.redacted_by is not None:
        line += f"  redacted by {r.redacted_by} at {local_time(r.redacted_ns or 0)}"
    return line


@click.command()
@click.argument("path", metavar="PATH")
@store_option()
@click.option("--limit", type=click.IntRange(min=1), help="Show only the newest N revisions.")
@click.option(
    "--rev",
    "--show",
    "show_rev",
    cls=Renamed,
    old=("--show",),
    type=int,
    metavar="REV",
    help="Print revision REV's content.",
)
@click.option("--follow", is_flag=True, help="Across the renames that brought the file to PATH.")
def history(
    path: str, store_url: str | None, limit: int | None, show_rev: int | None, follow: bool
) -> None:
    """List the revisions of PATH, newest first: rev, time, author, size, SHA-256.

    PATH is a file in a memfs mount, a model path such as /memories/notes.md, or a path
    in the store such as notes.md. With --rev REV, print that revision's content; with
    --follow, the revisions it had under its earlier names too (shown with the name).
    """
    from memfs.history.follow import lineage

    with reading(path, store_url) as (store, rel, _):
        revisions = lineage(store, rel) if follow else store.history(rel, limit)
        if show_rev is not None:
            where = next((r.path for r in revisions if r.rev == show_rev), rel)
            click.echo(store.read_revision(where, show_rev), nl=False)
            return
    for revision in revisions[:limit] if follow else revisions:
        line = format_revision(revision)
        click.echo(line if revision.path == rel else f"{line}  (as {revision.path})")


COMMANDS = [history]

__all__ = ["COMMANDS", "format_revision"]
