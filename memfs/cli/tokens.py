"""Where the HTTP doors (``memfs web``, ``memfs mcp --http``) take their token from.

A command line is readable by every user of the machine (``ps``, ``/proc/PID/cmdline``),
so the token is best given as a file (``--token-file PATH``, or ``$..._TOKEN_FILE``) or
in the environment (``$..._TOKEN``), which only the user and root can read. ``--token``
on the command line still works, with a warning saying so.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

F = TypeVar("F", bound=Callable[..., Any])


def token_options(env: str, help: str) -> Callable[[F], F]:
    """``--token TOKEN`` (also ``$ENV``) and ``--token-file PATH`` (also ``$ENV_FILE``),
    into ``token`` and ``token_file``."""

    def apply(f: F) -> F:
        f = click.option(
            "--token-file",
            "token_file",
            envvar=f"{env}_FILE",
            type=click.Path(dir_okay=False, path_type=Path),
            metavar="PATH",
            help=f"Read the token from this file (or ${env}_FILE); safer than --token.",
        )(f)
        return click.option(
            "--token", envvar=env, metavar="TOKEN", help=f"{help} (or ${env}; see --token-file)."
        )(f)

    return apply


def chosen_token(door: str, token: str | None, token_file: Path | None) -> str | None:
    """The token the options give (None: none), every problem a usage error; warns on
    stderr when it was typed on the command line or its file is readable by others."""
    ctx = click.get_current_context()
    if token is not None and token_file is not None:
        raise click.UsageError("give --token or --token-file, not both")
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
            mode = token_file.stat().st_mode
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8 text"
            raise click.BadParameter(
                f"cannot read {token_file}: {reason}", param_hint="--token-file"
            ) from None
        if not token or "\n" in token:
            raise click.BadParameter(
                f"{token_file} must hold the token on one line", param_hint="--token-file"
            )
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            click.echo(
                f"memfs {door}: warning: {token_file} is readable by other users; "
                f"chmod 600 {token_file}",
                err=True,
            )
        return token
    if token is not None and not token.strip():
        raise click.BadParameter("the token is empty", param_hint="--token")
    if token is not None and ctx.get_parameter_source("token") == ParameterSource.COMMANDLINE:
        click.echo(
            f"memfs {door}: warning: a --token on the command line can be read by other "
            "users of this machine (ps); give --token-file PATH or set the environment "
            "variable instead",
            err=True,
        )
    return token


def require_token_off_loopback(
    http_address: str, loopback: bool, token: str | None, env: str, how: str = ""
) -> None:
    """Refuse (a usage error) to listen where other machines reach without a token.
    ``how``: how clients then send it, said in the message."""
    if token is None and not loopback:
        raise click.UsageError(
            f"--http {http_address} is reachable from other machines: give --token-file "
            f"PATH (or set ${env}){how}, or listen on 127.0.0.1"
        )
