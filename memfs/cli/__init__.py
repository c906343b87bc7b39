"""The ``memfs`` command line: the only layer that prints.

Each command group lives in its own module. The one error edge is here
(:meth:`_LazyGroup.invoke`): a typed :mod:`memfs.errors` error, an ``OSError`` (a
read-only directory, a full disk, a missing file), a damaged archive's error, or
anything unexpected that a command lets through becomes one line on stderr and exit
status 1 (2 for usage errors, as click does); never a traceback.

A command's module is imported only when that command runs (or ``--help`` lists them
all), so ``memfs log`` does not pay for importing FUSE, the agent's SDK or an MCP
server: :data:`COMMANDS` maps each command name to its module, and
``tests/test_packaging.py`` checks the map against every module's ``COMMANDS``.
"""

from __future__ import annotations

import importlib

import click

from memfs import __version__

# command name -> module under memfs.cli (in the order --help lists them)
COMMANDS: dict[str, str] = {
    "tool": "tool",
    "mount": "mount",
    "umount": "mount",
    "status": "status",
    "sync": "sync",
    "agent": "agent",
    "session": "session",
    "claude-code": "claude_code",
    "history": "history",
    "log": "log",
    "diff": "log",
    "restore": "restore",
    "undo": "restore",
    "checkpoint": "restore",
    "redact": "restore",
    "secrets": "secrets",
    "check": "check",
    "trees": "trees",
    "copy": "copy",
    "expire": "expire",
    "search": "search",
    "mcp": "mcp",
    "web": "web",
    "webdav": "webdav",
    "export": "transfer",
    "import": "transfer",
}


# The exit statuses, for every command (docs/cli.md has the table): 0 it did what was
# asked, 1 it failed or found what it looks for, 2 a usage error (click's), 130 Ctrl-C,
# 141 its output pipe was closed (as SIGPIPE would leave it).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is buffered
    for a closed pipe (or a terminal being torn down) raises nothing."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def one_line(exc: BaseException) -> str:
    """What went wrong, as one line for a person."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        return f"{where}: {exc.strerror}" if where else exc.strerror
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def summary(help: str) -> str:
    """The first sentence of a command's help, whole, on one line."""
    words = help.partition("\n\n")[0].split()
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            return " ".join(words[: i + 1])
    return " ".join(words)


class _LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        from memfs.errors import MemfsError

        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`memfs log | head -2`): what it wanted it has. Quiet,
            # and the status a program killed by SIGPIPE has, as `cat` would leave.
            _silence_stdout()
            raise click.exceptions.Exit(EXIT_PIPE) from None
        except KeyboardInterrupt:
            # Ctrl-C: the shell's convention, 128 + SIGINT, and no "Aborted!".
            _silence_stdout()
            click.echo("", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except (MemfsError, OSError) as exc:
            raise click.ClickException(one_line(exc)) from exc
        except EOFError as exc:
            # click would print "Aborted!"; a truncated stream is what it means here.
            raise click.ClickException(f"the input ended early: {one_line(exc)}") from exc
        except Exception as exc:
            raise click.ClickException(
                f"memfs failed unexpectedly ({type(exc).__name__}: {one_line(exc)});"
                " please report it with the command that caused it"
            ) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"memfs.cli.{module_name}")
        commands: list[click.Command] = module.COMMANDS  # each command module's list
        found = next(c for c in commands if c.name == cmd_name)
        if found.short_help is None and found.help:
            # click cuts a summary to the terminal's width, mid-phrase ("Check every
            # retained revision of the store against its..."); whole, it wraps instead.
            found.short_help = summary(found.help)
        return found


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memfs")
def main() -> None:
    """memfs: one memory tree shared by people and Claude."""
    import logging

    # The library logs what it recovers from (a lost connection, a retried write). With
    # no handler configured, Python would print those records raw beside the command's
    # one error line; a command that wants them (sync, mcp, the daemon) adds its own.
    memfs_log = logging.getLogger("memfs")
    if not any(isinstance(h, logging.NullHandler) for h in memfs_log.handlers):
        memfs_log.addHandler(logging.NullHandler())
