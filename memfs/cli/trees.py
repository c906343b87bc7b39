"""``memfs trees``: the memory trees a store's database holds, with their sizes.

A PostgreSQL database holds any number of trees (``?tree=NAME`` in the URL picks one);
an SQLite file holds one.
"""

from __future__ import annotations

import click

from memfs.cli import stores
from memfs.cli.common import size_text, store_option, table
from memfs.errors import MemfsError, StoreUnavailable


@click.command()
@store_option()
def trees(store_url: str | None) -> None:
    """List the memory trees in the store's database: name, files, size, changes, URL."""
    from memfs.store import list_trees

    choice = stores.choose(store_url)
    try:
        found = list_trees(choice.url)
    except StoreUnavailable as exc:
        raise click.ClickException(stores.message(exc, choice.elsewhere)) from exc
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc
    if not found:
        click.echo(
            "No memory trees in this database yet; mounting a URL with ?tree=NAME makes one."
        )
        return
    rows = [("TREE", "FILES", "DIRS", "SIZE", "CHANGES", "URL")]
    for t in found:
        rows.append(
            (
                t.name,
                str(t.usage.files),
                str(t.usage.dirs),
                size_text(t.usage.bytes),
                str(t.last_seq),
                t.url,
            )
        )
    table(rows)


COMMANDS = [trees]
