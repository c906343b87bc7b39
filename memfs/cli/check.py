"""``memfs check``: is every retained revision of a store still the bytes it was?

Reads the whole store read-only (:meth:`memfs.store.base.Store.verify`: every retained
revision against its SHA-256) and lists each damaged one, one line each; exit status 1
when any is, 0 with one summary line when none is.
"""

from __future__ import annotations

import json
import sys

import click

from memfs.cli import stores
from memfs.cli.common import count, local_time, require_existing, store_error, store_option
from memfs.cli.stores import StoreChoice
from memfs.errors import MemfsError
from memfs.store.base import Revision


def _choice(path: str | None, store_url: str | None) -> StoreChoice:
    """The store ``PATH`` names (a directory of a mount: the mount's store; anything else:
    a store file or URL), else ``--store``, else the mount the current directory is in,
    else the user's store."""
    from memfs.mount import state

    if path is not None and store_url is not None:
        raise click.UsageError("give PATH or --store, not both")
    if path is None and store_url is None:
        path = "." if state.lookup(".") is not None else None
    if path is not None:
        record = state.lookup(path)
        if record is not None:
            return StoreChoice(record.store_url, stores.FROM_MOUNT)
        return StoreChoice(path, stores.FROM_OPTION)
    return stores.choose(store_url)


def _line(revision: Revision) -> str:
    when = local_time(revision.time_ns)
    return (
        f"{revision.path}  rev {revision.rev}  {when}  {revision.author}  {revision.size}"
        f"  {revision.sha256[:12]}"
    )


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
@store_option()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def check(path: str | None, store_url: str | None, as_json: bool) -> None:
    """Check every retained revision of the store against its SHA-256 and list the
    damaged ones: path, revision, time, author, size, short hash.

    PATH is a memfs mount (its store is checked) or a store file or URL. The store is
    only read. Exit status 1 when any revision is damaged.
    """
    from tqdm import tqdm

    from memfs.store import open_store

    choice = _choice(path, store_url)
    try:
        require_existing(choice)
        with (
            open_store(choice.url, readonly=True) as store,
            tqdm(
                desc="checking",
                unit=" revisions",
                file=sys.stderr,
                disable=as_json or not sys.stderr.isatty(),
                leave=False,
            ) as bar,
        ):
            counted = [0, 0]  # revisions checked, of the total

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - counted[0])
                counted[:] = [done, total]

            damaged = store.verify(progress)
            checked = counted[1]
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere, choice.url) from exc
    for revision in damaged:
        if as_json:
            record = {
                "path": revision.path,
                "rev": revision.rev,
                "sha256": revision.sha256,
                "size": revision.size,
                "author": revision.author,
                "time_ns": revision.time_ns,
            }
            click.echo(json.dumps(record))
        else:
            click.echo(_line(revision))
    files = len({r.path for r in damaged})
    if as_json:
        click.echo(json.dumps({"checked": checked, "damaged": len(damaged)}))
    if damaged:
        one = len(damaged) == 1
        raise click.ClickException(
            f"{len(damaged)} of {count(checked, 'retained revision')} ({count(files, 'file')})"
            + (" is damaged: its bytes no longer match its" if one else
               " are damaged: their bytes no longer match their")
            + " SHA-256"
        )  # fmt: skip
    if not as_json:
        click.echo(
            "The 1 retained revision matches its SHA-256."
            if checked == 1
            else f"All {checked} retained revisions match their SHA-256."
        )


COMMANDS = [check]
