"""``memfs mcp``: the memory tree as an MCP server, over stdio or streamable HTTP.

The server itself is :mod:`memfs.mcp`; this module turns options into a tree and a
transport, and anything that stops it from starting into one line on stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.common import store_error, store_option
from memfs.cli.tokens import chosen_token, require_token_off_loopback, token_options
from memfs.cli.tool import handler_options
from memfs.errors import HttpError, McpError, MemfsError, MountError

TOKEN_ENV = "MEMFS_MCP_TOKEN"


def _say(message: str) -> None:
    # stdout belongs to the protocol on stdio: everything for a person goes to stderr.
    click.echo(f"memfs mcp: {message}", err=True)


@click.command(
    "mcp",
    epilog=(
        "Claude Code: claude mcp add memfs -- memfs mcp --root ~/memories\n\n"
        "Over HTTP: memfs mcp --http 127.0.0.1:8765, then connect to "
        "http://127.0.0.1:8765/mcp."
    ),
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The directory /memories maps to: a memfs mount or a plain directory.",
)
@store_option(
    "Serve this store (through its running mount, else a mount of the server's own). "
    "Default without --root: $MEMFS_STORE or the user's memory.db."
)
@click.option(
    "--http",
    "http_address",
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults "
    "to 127.0.0.1; any non-loopback HOST needs --token).",
)
@token_options(TOKEN_ENV, "Refuse HTTP requests without 'Authorization: Bearer TOKEN'")
@handler_options
@click.option("-v", "--verbose", is_flag=True, help="Log each request's problems to stderr.")
def mcp(
    root: Path | None,
    store_url: str | None,
    http_address: str | None,
    token: str | None,
    token_file: Path | None,
    create_overwrites: bool,
    max_file_bytes: int,
    secrets: str,
    verbose: bool,
) -> None:
    """Serve the memory tree to MCP clients (Claude Desktop, Claude Code, ...).

    Tools: memory (the memory tool's six commands, same contract), memory_search and
    memory_history; every file is a resource memory:///memories/... that clients can
    subscribe to. Each client's edits are attributed to mcp:CLIENT-NAME. Stops cleanly
    on SIGINT or SIGTERM, or when a stdio client closes its end.
    """
    import anyio

    from memfs.mcp import http, serve, tree
    from memfs.mcp.server import MemoryServer

    if root is not None and store_url is not None:
        raise click.UsageError("give --root DIR or --store URL, not both")
    token = chosen_token("mcp", token, token_file)
    if token is not None and http_address is None:
        raise click.UsageError("--token protects --http; over stdio there is nothing to refuse")
    choice = stores.choose(store_url) if root is None else None
    try:
        address = sock = None
        if http_address is not None:
            try:
                address = http.parse_address(http_address)
            except (HttpError, McpError) as exc:  # not HOST:PORT at all: usage, exit 2
                raise click.UsageError(str(exc)) from exc
            require_token_off_loopback(
                http_address,
                http.is_loopback(address),
                token,
                TOKEN_ENV,
                " for clients to send as 'Authorization: Bearer TOKEN'",
            )
            sock = http.bind(address)  # a port in use fails before anything is mounted
        if choice is None:
            assert root is not None
            memory = tree.open_root(
                root, overwrite=create_overwrites, max_file_bytes=max_file_bytes, secrets=secrets
            )
        else:
            memory = tree.open_store_tree(
                choice.url,
                overwrite=create_overwrites,
                max_file_bytes=max_file_bytes,
                on_note=_say,
                secrets=secrets,
            )
    except MountError as exc:
        raise click.ClickException(
            f"{exc} (without FUSE, serve a directory: --root DIR, kept in sync by memfs sync)"
        ) from exc
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere if choice else None) from exc
    # Logging starts once the store is open: a store that cannot be opened is its one
    # error line, not also the backend's log of the attempt (PostgreSQL's "lost ...").
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="memfs mcp: %(message)s",
    )
    server = MemoryServer(memory)
    try:
        if address is None or sock is None:
            anyio.run(serve.serve_stdio, server, lambda: _say(f"serving {memory.root} over stdio"))
        else:
            anyio.run(
                serve.serve_http,
                server,
                address,
                sock,
                token,
                lambda url: _say(f"serving {memory.root} at {url}"),
            )
    except KeyboardInterrupt:
        pass  # a second Ctrl-C during shutdown: what is left is closed below
    finally:
        # A command stuck in the file system still uses the store: closing a connection
        # under it crashed the process (SIGSEGV in sqlite3). The exit closes it instead.
        if not server.stranded:
            memory.close()


COMMANDS: list[click.Command] = [mcp]
