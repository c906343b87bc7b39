"""``memfs web``: the memory's history as a local page (see :mod:`memfs.web`).

This module picks the store and the address, refuses what would be unsafe (another
address without a token) or impossible (a port in use) in one line, and prints the
address to open.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.common import require_existing, store_error, store_option
from memfs.cli.tokens import chosen_token, require_token_off_loopback, token_options
from memfs.errors import MemfsError

TOKEN_ENV = "MEMFS_WEB_TOKEN"
DEFAULT_ADDRESS = "127.0.0.1:8766"


def _choose(store_url: str | None, root: Path | None) -> stores.StoreChoice:
    from memfs.mount import state

    if root is not None:
        record = state.lookup(root)
        if record is None:
            raise click.BadParameter(
                f"{root} is not in a memfs mount; give the mountpoint, or --store URL",
                param_hint="--root",
            )
        return stores.StoreChoice(record.store_url, stores.FROM_MOUNT)
    if store_url is None and state.lookup(".") is not None:
        record = state.lookup(".")
        assert record is not None
        return stores.StoreChoice(record.store_url, stores.FROM_MOUNT)
    return stores.choose(store_url)


@click.command("web")
@store_option(
    "The store to show (default: the "
    "mount the current directory is in, else $MEMFS_STORE or the user's store)."
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Show the store of this memfs mount.",
)
@click.option(
    "--http",
    "http_address",
    default=DEFAULT_ADDRESS,
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen; any non-loopback HOST needs --token.",
)
@token_options(TOKEN_ENV, "Require this token (Authorization: Bearer, or the address printed)")
@click.option("-v", "--verbose", is_flag=True, help="Log problems to stderr.")
def web(
    store_url: str | None,
    root: Path | None,
    http_address: str,
    token: str | None,
    token_file: Path | None,
    verbose: bool,
) -> None:
    """Serve a page of the memory's history: a timeline of operations, their diffs,
    the tree, each file's revisions and a search, with Undo, Restore, Redact and
    Checkpoint. Stops cleanly on SIGINT or SIGTERM.
    """
    import anyio

    from memfs import httpguard
    from memfs.history.author import user_name
    from memfs.store import open_store, shown_url
    from memfs.web.serve import serve

    if root is not None and store_url is not None:
        raise click.UsageError("give --root MNT or --store URL, not both")
    token = chosen_token("web", token, token_file)
    choice = _choose(store_url, root)
    try:
        address = httpguard.parse_address(http_address)
        require_token_off_loopback(http_address, httpguard.is_loopback(address), token, TOKEN_ENV)
        require_existing(choice)
        store = open_store(choice.url)
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere) from exc
    # Logging starts once the store is open: a store that cannot be opened is its one
    # error line, not also the backend's log of the attempt (PostgreSQL's "lost ...").
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="memfs web: %(message)s",
    )
    try:
        try:
            sock = httpguard.bind(address)
        except MemfsError as exc:
            raise click.ClickException(str(exc)) from exc

        def ready(url: str) -> None:
            shown = f"{url}/?token={token}" if token else f"{url}/"
            click.echo(f"memfs web: serving {shown_url(choice.url)} at {shown}", err=True)
            click.echo("memfs web: open that address in a browser; Ctrl-C stops", err=True)

        # A second Ctrl-C during shutdown: what is left is closed below.
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(
                lambda: serve(
                    store,
                    address,
                    sock,
                    token=token,
                    user=user_name(),
                    store_label=shown_url(choice.url),
                    on_ready=ready,
                )
            )
    finally:
        store.close()


COMMANDS: list[click.Command] = [web]
