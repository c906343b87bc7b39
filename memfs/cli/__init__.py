"""The ``memfs`` command line: the only layer that prints.

Each command group lives in its own module; typed :mod:`memfs.errors` raised below are
turned into one line on stderr and exit status 1 here (2 for usage errors, as click does).
"""

from __future__ import annotations

import click

from memfs import __version__
from memfs.cli import agent, history, log, mount, restore, status, sync, tool, transfer


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memfs")
def main() -> None:
    """memfs: one memory tree shared by people and Claude."""


for module in (tool, mount, status, sync, agent, history, log, restore, transfer):
    for command in module.COMMANDS:
        main.add_command(command)
