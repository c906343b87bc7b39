"""``memfs search QUERY [PATH]``: find text in the memory tree from the store's index.

PATH is a file or directory in a memfs mount (its store is searched, below that point),
a model path (``/memories/notes``) or a store-relative path in ``--store`` or the
user's store; none means the whole tree (or, inside a mount, the current directory).
Lines print as grep's do, ``PATH:LINE:TEXT``, files best match first; PATH is the file
in the mount when the search was given one, else the store path. Exit status 1 when
nothing matched, as grep's. The store is opened read-only; when its index is behind
(its files not all indexed yet) and it can be written, it is indexed first, with a
progress bar on a terminal, else the files not yet indexed are read as it searches.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.common import opened, resolve, store_option
from memfs.errors import MemfsError, PathError, QueryError, StoreUnavailable
from memfs.store.base import SearchHit, Store


def _build_index(store: Store, choice: stores.StoreChoice) -> None:
    """Catch the index up with the files not in it yet (a store an older memfs wrote,
    or one whose index a crash left behind), through a second, write-capable open of
    ``store``: the search itself is read-only, and this is the one write it does, of
    derived data only. Where the store cannot be written, the search reads those files
    directly instead (slower, the same hits)."""
    pending = store.search_index_pending()
    if not pending:
        return
    from tqdm import tqdm

    from memfs.store import open_store

    # The read-only open has found the store (its tree, its current schema): a
    # write-capable open of it creates and migrates nothing.
    with (
        contextlib.suppress(StoreUnavailable),
        open_store(choice.url) as writable,
        tqdm(
            total=pending,
            desc="indexing the store for search",
            unit=" files",
            file=sys.stderr,
            disable=not sys.stderr.isatty(),
            leave=False,
        ) as bar,
    ):

        def advance(n: int) -> None:
            bar.update(n)

        writable.build_search_index(advance)


def _shown(hit: SearchHit, mount_base: Path | None, rel_base: str) -> str:
    if mount_base is None:
        return hit.path
    inside = hit.path[len(rel_base) :].lstrip("/") if rel_base else hit.path
    return str(mount_base / inside) if inside else str(mount_base)


def _hit_json(hit: SearchHit, where: str) -> str:
    return json.dumps(
        {
            "path": hit.path,
            "file": where,
            "score": hit.score,
            "lines": [{"line": n, "text": text} for n, text in hit.lines],
        },
        ensure_ascii=False,
    )


@click.command()
@click.argument("query", metavar="QUERY")
@click.argument("path", metavar="[PATH]", required=False)
@click.option(
    "--regex",
    is_flag=True,
    help="QUERY is a regular expression (RE2: Python's syntax without backtracking).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most N files."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file found.")
@store_option()
def search(
    query: str, path: str | None, regex: bool, limit: int, as_json: bool, store_url: str | None
) -> None:
    """Find the files whose text matches QUERY, best match first, with their lines.

    QUERY is words that must all appear, ignoring case, anywhere in a file (inside
    longer words too); "quote" a phrase. With --regex it is one regular expression,
    matched line by line, case-sensitive.
    """
    from memfs.mount import state

    if path is None and store_url is None and state.lookup(os.getcwd()) is not None:
        path = os.getcwd()
    try:
        choice, rel = (
            resolve(path, store_url) if path is not None else (stores.choose(store_url), "")
        )
    except PathError as exc:
        raise click.ClickException(f"{path!r} is not a memory path: {exc}") from exc
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc
    mount_base = None
    if path is not None and state.lookup(path) is not None:
        mount_base = state.normalize(path)
    with opened(choice, readonly=True) as store:
        try:
            _build_index(store, choice)
            hits = store.search(query, rel, regex=regex, limit=limit)
        except QueryError as exc:
            raise click.ClickException(str(exc)) from exc
    shown = [_shown(hit, mount_base, rel) for hit in hits]
    if as_json:
        for hit, where in zip(hits, shown, strict=True):
            click.echo(_hit_json(hit, where))
    else:
        for hit, where in zip(hits, shown, strict=True):
            for number, text in hit.lines:
                click.echo(f"{where}:{number}:{text}")
    if not hits:
        click.get_current_context().exit(1)


COMMANDS = [search]

__all__ = ["COMMANDS"]
