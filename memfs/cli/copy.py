"""``memfs copy SRC_URL DST_URL``: a whole store into a new one, history included (for
example an SQLite memory moved to the team's PostgreSQL server)."""

from __future__ import annotations

import sys

import click

from memfs.cli import stores
from memfs.cli.common import JSON_OPTION, count, emit, store_error
from memfs.errors import MemfsError
from memfs.store import shown_url


@click.command()
@click.argument("src_url", metavar="SRC_URL")
@click.argument("dst_url", metavar="DST_URL")
@JSON_OPTION
def copy(src_url: str, dst_url: str, as_json: bool) -> None:
    """Copy the store SRC_URL into the new, empty store DST_URL: files, retained
    revisions with their authors and times, renames, deletions, the change log and
    checkpoints. A progress bar shows on a terminal."""
    from tqdm import tqdm

    from memfs.history.copy import copy_store
    from memfs.store import open_store

    for url in (src_url, dst_url):
        if not url.strip():
            raise click.UsageError("store URLs must not be empty")
    try:
        # A mistyped source must not be created just to copy nothing out of it.
        stores.require_existing_store(stores.StoreChoice(src_url, "give another SRC_URL"))
        with (
            open_store(src_url, readonly=True) as src,
            stores.announced(dst_url),
            open_store(dst_url) as dst,
        ):
            with tqdm(
                total=src.last_seq(),
                unit="change",
                desc="memfs copy",
                disable=not sys.stderr.isatty(),
                leave=False,
            ) as bar:

                def progress(done: int, total: int) -> None:
                    bar.total = total
                    bar.update(done - bar.n)

                done = copy_store(src, dst, progress=progress)
            usage = dst.usage()
            url = dst.url
    except MemfsError as exc:
        raise store_error(exc, stores.FROM_OPTION) from exc
    if as_json:
        emit({"store": shown_url(url), "changes": done, "files": usage.files, "bytes": usage.bytes})
        return
    click.echo(
        f"Copied {count(done, 'change')}, {count(usage.files, 'file')}"
        f" ({count(usage.bytes, 'byte')}) into {shown_url(url)}"
    )


COMMANDS = [copy]
