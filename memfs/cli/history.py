"""``memfs history PATH``: who changed a file, when, and what it contained.

PATH is a file in a memfs mount (its store is the mount's unless ``--store`` names
another), a model path (``/memories/notes.md``) or a store-relative path (``notes.md``)
in ``--store`` or the user's store. A deleted file's path shows its retained
(tombstoned) revision. Every error names the store it looked in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.stores import StoreChoice
from memfs.errors import MemfsError, PathError, StoreUnavailable
from memfs.store import shown_url
from memfs.store.base import Revision, Store


def local_time(time_ns: int) -> str:
    return datetime.fromtimestamp(time_ns / 1e9).astimezone().isoformat(timespec="seconds")


def format_revision(r: Revision) -> str:
    line = f"{r.rev}  {local_time(r.time_ns)}  {r.author}  {r.size}  {r.sha256[:12]}"
    if r.redacted_by is not None:
        line += f"  redacted by {r.redacted_by} at {local_time(r.redacted_ns or 0)}"
    return line


def resolve(path: str, store_url: str | None) -> tuple[StoreChoice, str]:
    """The store and the store-relative path that ``path`` names.

    A path inside a mount is a file of the mount's store, so it is translated to its
    place in the tree even when ``--store`` names the store to read (another mount of
    it, a copy); without ``--store`` the mount's own store is read.
    """
    from memfs.mount import state
    from memfs.paths import ROOT, parse, parse_rel

    record = state.lookup(path)
    if record is not None:
        inside = state.normalize(path).relative_to(record.mountpoint)
        rel = parse_rel("" if inside == Path(".") else inside.as_posix()).rel
        if store_url is None:
            return StoreChoice(record.store_url, stores.FROM_MOUNT), rel
        return stores.choose(store_url), rel
    choice = stores.choose(store_url)
    if path == ROOT or path.startswith(ROOT + "/"):
        return choice, parse(path).rel
    return choice, parse_rel(path.strip("/")).rel


def require_existing(choice: StoreChoice) -> None:
    """Refuse to create a store just to show that it has nothing (one line, exit 1)."""
    try:
        stores.require_existing_store(choice)
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc


@contextmanager
def target(path: str | None, store_url: str | None) -> Iterator[tuple[Store, str, StoreChoice]]:
    """The opened store and store-relative path a history command works on, every
    error turned into its one line. Without ``path``: the whole tree of the mount the
    current directory is in, else of ``--store`` or the user's store."""
    from memfs.store import open_store

    try:
        if path is None:
            choice = resolve(".", store_url)[0] if _in_mount() else stores.choose(store_url)
            rel = ""
        else:
            choice, rel = resolve(path, store_url)
    except PathError as exc:
        raise click.ClickException(f"{path!r} is not a memory path: {exc}") from exc
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        require_existing(choice)
        with open_store(choice.url) as store:
            yield store, rel, choice
    except StoreUnavailable as exc:
        raise click.ClickException(stores.message(exc, choice.elsewhere)) from exc
    except MemfsError as exc:
        raise click.ClickException(f"{exc} (in the store {shown_url(choice.url)})") from exc


def _in_mount() -> bool:
    from memfs.mount import state

    return state.lookup(".") is not None


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
    with target(path, store_url) as (store, rel, _):
        if show_rev is not None:
            click.echo(store.read_revision(rel, show_rev), nl=False)
            return
        revisions = store.history(rel, limit)
    for revision in revisions:
        click.echo(format_revision(revision))


COMMANDS = [history]

__all__ = ["COMMANDS", "format_revision", "local_time", "require_existing", "resolve", "target"]
