"""The command line's lazy map: every command a module defines is reachable by its name,
and ``memfs log`` runs without importing the mount, the agent or their libraries."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import memfs.cli
from memfs.cli import COMMANDS, main


def test_the_map_names_every_command_of_every_module() -> None:
    defined: dict[str, str] = {}
    for info in pkgutil.iter_modules(memfs.cli.__path__):
        module = importlib.import_module(f"memfs.cli.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            defined[command.name] = info.name
    assert defined == COMMANDS
    for name in COMMANDS:
        assert main.get_command(None, name).name == name  # type: ignore[arg-type, union-attr]


def test_a_history_command_imports_no_mount_or_agent_code() -> None:
    probe = (
        "import sys; from memfs.cli import main\n"
        "main.get_command(None, 'log'); main.get_command(None, 'restore')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('memfs.mount', 'memfs.agent',"
        " 'mfusepy', 'anthropic', 'mcp'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
