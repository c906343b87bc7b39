"""``memfs webdav``: the memory as a WebDAV server (see :mod:`memfs.webdav`).

This module picks the store, the address and the subtree, refuses what would be unsafe
(another address without a token) or impossible (a port in use) in one line, and prints
the address to connect to.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.common import store_error, store_option
from memfs.cli.tokens import chosen_token, require_token_off_loopback, token_options
from memfs.errors import MemfsError

TOKEN_ENV = "MEMFS_WEBDAV_TOKEN"
DEFAULT_ADDRESS = "127.0.0.1:8767"


@click.command("webdav")
@store_option("The store to serve (default: $MEMFS_STORE or the user's store).")
@click.option(
    "--http",
    "http_address",
    default=DEFAULT_ADDRESS,
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen; any non-loopback HOST needs a token.",
)
@click.option(
    "--subtree",
    metavar="PATH",
    help="Serve only this directory of the store (made if missing) as the root.",
)
@token_options(TOKEN_ENV, "Require this token, given as the Basic auth password")
@click.option("-v", "--verbose", is_flag=True, help="Log problems to stderr.")
def webdav(
    store_url: str | None,
    http_address: str,
    subtree: str | None,
    token: str | None,
    token_file: Path | None,
    verbose: bool,
) -> None:
    """Serve the memory as a WebDAV share (locks included), for Finder's Connect to
    Server, Windows' Map network drive, davfs2, rclone and editors: live from the store,
    every save a revision by webdav:USER. Stops cleanly on SIGINT or SIGTERM.
    """
    import anyio

    from memfs import httpguard
    from memfs.history.author import author_for, user_name
    from memfs.store import open_store, shown_url
    from memfs.store.subtree import subtree_path
    from memfs.webdav.serve import serve

    token = chosen_token("webdav", token, token_file)
    choice = stores.choose(store_url)
    try:
        prefix = "" if subtree is None else subtree_path(subtree)
        address = httpguard.parse_address(http_address)
        require_token_off_loopback(http_address, httpguard.is_loopback(address), token, TOKEN_ENV)
        store = open_store(choice.url)
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere) from exc
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="memfs webdav: %(message)s",
    )
    try:
        try:
            if prefix:
                store.mkdir(prefix, author=author_for("webdav"), parents=True, exist_ok=True)
            sock = httpguard.bind(address)
        except MemfsError as exc:
            raise click.ClickException(str(exc)) from exc

        def ready(url: str) -> None:
            what = shown_url(choice.url) + (f" ({prefix}/)" if prefix else "")
            click.echo(f"memfs webdav: serving {what} at {url}", err=True)
            if token:
                click.echo("memfs webdav: any user name; the token is the password", err=True)
            click.echo("memfs webdav: connect a WebDAV client to it; Ctrl-C stops", err=True)

        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(
                lambda: serve(
                    store,
                    address,
                    sock,
                    token=token,
                    user=user_name(),
                    prefix=prefix,
                    on_ready=ready,
                )
            )
    finally:
        store.close()


COMMANDS: list[click.Command] = [webdav]
