"""``memfs tool``: run memory-tool commands on a directory, as JSON lines.

This is the handler without a model: a program (or a person testing) sends the same
command objects Claude would send, and reads the same ``tool_result`` content back.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import click

from memfs.cli.common import Renamed, store_option
from memfs.errors import MemfsError
from memfs.program import command
from memfs.secrets import DEFAULT_POLICY, POLICIES
from memfs.store import shown_url

DEFAULT_MAX_FILE_BYTES = 100 * 1024
EXAMPLE = '{"command": "view", "path": "/memories"}'


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"  # json.loads yields nothing else that is not an object


# Shared by every door that serves the model (tool, agent, mcp): one wording, one default.
secrets_option = click.option(
    "--secrets",
    type=click.Choice(POLICIES),
    default=DEFAULT_POLICY,
    show_default=True,
    help=(
        "Credentials in what the model writes: redact them as [REDACTED:kind] and say so, "
        "refuse the write, or allow (no scanning)."
    ),
)


F = TypeVar("F", bound=Callable[..., Any])


class _RefusedValue(click.ClickException):
    """One line, with a usage error's status: the value is wrong, not the command."""

    exit_code = 2


def _checked_actor(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from memfs.actors import check_actor
    from memfs.errors import ActorError

    try:
        return check_actor(value)
    except ActorError as err:
        raise _RefusedValue(f"--as: {err}") from None


def actor_option(default: str) -> Callable[[F], F]:
    """``--as NAME``: who the door's changes are by, in the store's history (into
    ``actor``; ``--actor`` is still accepted)."""
    return click.option(
        "--as",
        "--actor",
        "actor",
        # --actor was the acting identity here and a filter in log and undo; --as is the
        # one name for who acts, everywhere it is set.
        cls=Renamed,
        old=("--actor",),
        metavar="NAME",
        default=default,
        show_default=True,
        callback=_checked_actor,
        help="Who the changes are by, as the store's history shows them "
        "(memfs log --actor NAME finds them).",
    )


def handler_options(command: F) -> F:
    """The handler's options, as every door that serves the model takes them."""
    command = secrets_option(command)
    command = click.option(
        "--max-file-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_FILE_BYTES,
        show_default=True,
        help="Largest memory file a command may write, in bytes.",
    )(command)
    return click.option(
        "--create-overwrites",
        is_flag=True,
        help="Let create replace an existing file instead of answering 'already exists'.",
    )(command)


STREAM_HINT = f"send one command object per line, such as {EXAMPLE}"
ARGUMENT_HINT = f"give one command object, such as '{EXAMPLE}'"


def _decode(raw: str, where: str, hint: str) -> tuple[dict[str, Any] | None, str]:
    """The command object in ``raw``, or ``None`` and a message saying what is wrong."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        return None, f"Error: {where} is not valid JSON ({err.msg} at column {err.colno}); {hint}."
    if not isinstance(value, dict):
        return None, f"Error: {where} is a JSON {_json_kind(value)}, not an object; {hint}."
    return value, ""


def _line(content: object, is_error: bool) -> str:
    payload = {"content": content, "is_error": is_error}
    try:
        # Readable non-ASCII text; the encode check catches lone surrogates, which
        # cannot be written as UTF-8 and are escaped instead.
        text = json.dumps(payload, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(payload, ensure_ascii=True)
    return text


def _mirror_of(root: Path) -> Any:
    """The running mirror (``memfs sync``) whose directory holds ``root``, if any."""
    from memfs.sync import running

    try:
        here = root.resolve()
        live, _stale = running.scan()
    except (OSError, MemfsError):
        return None
    for record in live:
        top = Path(record.dir)
        if here == top or top in here.parents:
            return record
    return None


def _open_handler(
    root: Path,
    overwrite: bool,
    max_file_bytes: int,
    secrets: str,
    store_url: str | None,
    actor: str,
) -> Any:
    # Imported here so `memfs --help` and the other command groups stay light.
    from memfs.backing import store_behind
    from memfs.handler import MemoryHandler
    from memfs.mount import state

    if store_url is not None and state.lookup(root) is None:
        # The handler works on ROOT's files: a store that does not show them would be
        # checked for caps and told of views while the files it holds go untouched.
        mirror = _mirror_of(root)
        if mirror is not None:
            # A running mirror carries ROOT's changes to its store already; telling the
            # person to mount there would be wrong advice (the directory is not empty).
            click.echo(
                f"memfs tool: not using --store: {root} is kept in sync with"
                f" {shown_url(mirror.store_url)} by memfs sync (pid {mirror.pid}), which"
                " carries every change there; work on the files without --store",
                err=True,
            )
        else:
            again = command("mount", str(root), "--store", shown_url(store_url))
            click.echo(
                f"memfs tool: not using --store: {root} is a plain directory, not a memfs"
                f" mount of that store; mount it there first ({again}) to work on the store",
                err=True,
            )
        store_url = None
    try:
        backing = store_behind(root, store_url)
    except MemfsError as err:
        raise click.ClickException(f"cannot open the store behind {root}: {err}") from err
    try:
        return MemoryHandler(
            root,
            overwrite=overwrite,
            max_file_bytes=max_file_bytes,
            secrets=secrets,
            store=None if backing is None else backing.commands_store,
            store_prefix="" if backing is None else backing.prefix,
            neighbours=None if backing is None else backing.link,
            actor=actor,
        )
    except (MemfsError, OSError) as err:
        raise click.ClickException(f"cannot use {root} as the memory root: {err}") from err


def _stream(handler: Any, stdin: BinaryIO) -> None:
    number = 0
    while True:
        # readline, not iteration or read(): each answer must go out before the next
        # line arrives, so a caller can talk to this process over a pipe.
        raw = stdin.readline()
        if not raw:
            return
        number += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            message = (
                f"Error: line {number} is not valid UTF-8 (byte 0x{raw[err.start]:02x} at "
                f"offset {err.start}); {STREAM_HINT}, in UTF-8."
            )
            click.echo(_line(message, True))
            continue
        if not text.strip():
            continue
        command, problem = _decode(text, f"line {number}", STREAM_HINT)
        if command is None:
            click.echo(_line(problem, True))
            continue
        result = handler.execute(command)
        click.echo(_line(result.content, result.is_error))  # click.echo flushes


@click.command(
    "tool",
    epilog=(
        "Example: echo '" + EXAMPLE + "' | memfs tool --root ./memories\n\n"
        "Exit status: 0 after a stream, whatever the commands' results; with COMMAND_JSON, "
        "0 if the command succeeded and 1 if its result is an error (the line is printed "
        "either way); 2 for a usage error, including COMMAND_JSON that is not a JSON object."
    ),
)
@click.option(
    "--root",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The directory that /memories maps to (it must exist).",
)
@handler_options
@store_option(
    "The store ROOT shows (default: the mount's, when ROOT is in a memfs mount); "
    "its caps (?max_tree_bytes=N&max_files=N) are told to the model with numbers and "
    "file views count as use for `memfs expire`."
)
@actor_option("tool")
@click.argument("command_json", required=False)
def tool(
    root: Path,
    create_overwrites: bool,
    max_file_bytes: int,
    secrets: str,
    store_url: str | None,
    actor: str,
    command_json: str | None,
) -> None:
    """Run memory-tool commands on the directory ROOT.

    With COMMAND_JSON, run that one command. Without it, read commands from stdin as
    JSON lines (one object per line; blank lines are skipped) and answer each with one
    line {"content": ..., "is_error": ...} as soon as it has run. A line that is not a
    JSON object gets an error line naming its line number, and the stream goes on.
    """
    handler = _open_handler(root, create_overwrites, max_file_bytes, secrets, store_url, actor)
    if command_json is not None:
        command, problem = _decode(command_json, "it", ARGUMENT_HINT)
        if command is None:
            raise click.BadParameter(problem.removeprefix("Error: "), param_hint="COMMAND_JSON")
        result = handler.execute(command)
        click.echo(_line(result.content, result.is_error))
        click.get_current_context().exit(1 if result.is_error else 0)
    try:
        _stream(handler, sys.stdin.buffer)
    except BrokenPipeError:
        # The reader went away: nothing left to answer. Point stdout at nothing so the
        # interpreter's final flush does not raise a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        click.get_current_context().exit(1)


COMMANDS: list[click.Command] = [tool]

__all__ = ["COMMANDS", "actor_option", "handler_options", "secrets_option"]
