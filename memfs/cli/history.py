"""``memfs history PATH``: who changed a file, when, and what it contained.

PATH is a file in a memfs mount (its store is the mount's unless ``--store`` names
another), a model path (``/memories/notes.md``) or a store-relative path (``notes.md``)
in ``--store`` or the user's store. A deleted file's path shows its retained
(tombstoned) revision. Every error names the store it looked in.
"""

from __future__ import annotations

import click

from memfs.cli.common import JSON_OPTION, NUMBER, Renamed, emit, local_time, reading, store_option
from memfs.store.base import Revision


def _revision_json(r: Revision) -> dict[str, object]:
    return {
        "path": r.path,
        "rev": r.rev,
        "time": local_time(r.time_ns),
        "time_ns": r.time_ns,
        "author": r.author,
        "size": r.size,
        "sha256": r.sha256,
        "redacted_by": r.redacted_by,
    }


def _content_json(data: bytes) -> dict[str, object]:
    """Text as text; bytes that are not UTF-8 as base64, never altered."""
    try:
        return {"content": data.decode("utf-8")}
    except UnicodeDecodeError:
        import base64

        return {"content_base64": base64.b64encode(data).decode("ascii")}


def format_revision(r: Revision) -> str:
    line = f"{r.rev}  {local_time(r.time_ns)}  {r.author}  {r.size}  {r.sha256[:12]}"
    if r.redacted_by is not None:
        line += f"  redacted by {r.redacted_by} at {local_time(r.redacted_ns or 0)}"
    return line


@click.command()
@click.argument("path", metavar="PATH")
@store_option()
@click.option("--limit", type=NUMBER, help="Show only the newest N revisions.")
@click.option(
    "--rev",
    "--show",
    "show_rev",
    cls=Renamed,
    old=("--show",),
    type=NUMBER,
    metavar="REV",
    help="Print revision REV's content.",
)
@click.option("--follow", is_flag=True, help="Across the renames that brought the file to PATH.")
@JSON_OPTION
def history(
    path: str,
    store_url: str | None,
    limit: int | None,
    show_rev: int | None,
    follow: bool,
    as_json: bool,
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
            data = store.read_revision(where, show_rev)
            if as_json:
                emit({"path": where, "rev": show_rev, **_content_json(data)})
            else:
                click.echo(data, nl=False)
            return
    for revision in revisions[:limit] if follow else revisions:
        if as_json:
            emit(_revision_json(revision))
            continue
        line = format_revision(revision)
        click.echo(line if revision.path == rel else f"{line}  (as {revision.path})")


COMMANDS = [history]

__all__ = ["COMMANDS", "format_revision"]
