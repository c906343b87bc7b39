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
    "export": "transfer",
    "import": "transfer",
}


def one_line(exc: BaseException) -> str:
    """What went wrong, as one line for a person."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        return f"{where}: {exc.strerror}" if where else exc.strerror
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class _LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        from memfs.errors import MemfsError

        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
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
        return next(c for c in commands if c.name == cmd_name)


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
