"""``memfs trees``: the memory trees a store's database holds, with their sizes.

A PostgreSQL database holds any number of trees (``?tree=NAME`` in the URL picks one);
an SQLite file holds one.
"""

from __future__ import annotations

import json

import click

from memfs.cli import stores
from memfs.cli.common import size_text, store_errors, store_option, table
from memfs.store import shown_url


@click.command()
@store_option()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per tree.")
def trees(store_url: str | None, as_json: bool) -> None:
    """List the memory trees in the store's database: name, files, size, changes, URL."""
    from memfs.store import list_trees

    choice = stores.choose(store_url)
    with store_errors(choice.elsewhere):
        stores.require_existing_store(choice)
        found = list_trees(choice.url)
    if as_json:
        for t in found:
            record = {
                "tree": t.name,
                "files": t.usage.files,
                "dirs": t.usage.dirs,
                "bytes": t.usage.bytes,
                "changes": t.last_seq,
                "url": shown_url(t.url),
            }
            click.echo(json.dumps(record, ensure_ascii=False))
        return
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
                shown_url(t.url),
            )
        )
    table(rows)


COMMANDS = [trees]
