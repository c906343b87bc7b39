"""The ``memfs`` command line: the only layer that prints.

Each command group lives in its own module; typed :mod:`memfs.errors` raised below are
turned into one line on stderr and exit status 1 here (2 for usage errors, as click does).

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
    "export": "transfer",
    "import": "transfer",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"memfs.cli.{module_name}")
        return next(c for c in module.COMMANDS if c.name == cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memfs")
def main() -> None:
    """memfs: one memory tree shared by people and Claude."""
