"""``memfs history PATH``: who changed a file, when, and what it contained.

PATH is a file in a memfs mount (its store is the mount's), a model path
(``/memories/notes.md``) or a store-relative path (``notes.md``) in ``--store`` or the
user's store. A deleted file's path shows its retained (tombstoned) revision.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from memfs.errors import MemfsError, PathError
from memfs.store.base import Revision


def _local_time(time_ns: int) -> str:
    return datetime.fromtimestamp(time_ns / 1e9).astimezone().isoformat(timespec="seconds")


def format_revision(r: Revision) -> str:
    return f"{r.rev}  {_local_time(r.time_ns)}  {r.author}  {r.size}  {r.sha256[:12]}"


def resolve(path: str, store_url: str | None) -> tuple[str, str]:
    """The store URL and store-relative path that ``path`` names."""
    from memfs.mount import state
    from memfs.paths import ROOT, parse, parse_rel
    from memfs.store import default_url

    if store_url is None:
        record = state.lookup(path)
        if record is not None:
            inside = state.normalize(path).relative_to(record.mountpoint)
            return record.store_url, parse_rel("" if inside == Path(".") else inside.as_posix()).rel
    url = store_url if store_url is not None else default_url()
    if path == ROOT or path.startswith(ROOT + "/"):
        return url, parse(path).rel
    return url, parse_rel(path.strip("/")).rel


def _require_existing(url: str) -> None:
    """Refuse to create a store just to show that it has no history."""
    from memfs.store.sqlite_options import path_from_url

    if "://" in url and not url.lower().startswith("sqlite://"):
        return  # a server store: opening it creates no file
    file = path_from_url(url.partition("?")[0] if "://" in url else url)
    if not file.exists():
        raise click.ClickException(f"no store at {file} (give --store URL)")


@click.command()
@click.argument("path", metavar="PATH")
@click.option("--store", "store_url", metavar="URL", help="Store URL (default: the user's store).")
@click.option("--limit", type=click.IntRange(min=1), help="Show only the newest N revisions.")
@click.option("--show", "show_rev", type=int, metavar="REV", help="Print revision REV's content.")
def history(path: str, store_url: str | None, limit: int | None, show_rev: int | None) -> None:
    """List the revisions of PATH, newest first: rev, time, author, size, SHA-256.

    PATH is a file in a memfs mount, a model path such as /memories/notes.md, or a path
    in the store such as notes.md. With --show REV, print that revision's content.
    """
    from memfs.store import open_store

    try:
        url, rel = resolve(path, store_url)
        _require_existing(url)
        with open_store(url) as store:
            if show_rev is not None:
                data = store.read_revision(rel, show_rev)
                click.echo(data, nl=False)
                return
            revisions = store.history(rel, limit)
    except PathError as exc:
        raise click.ClickException(f"{path!r} is not a memory path: {exc}") from exc
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc
    for revision in revisions:
        click.echo(format_revision(revision))


COMMANDS = [history]

__all__ = ["COMMANDS", "format_revision", "resolve"]
