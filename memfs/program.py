"""How a person runs this memfs again, for the commands that memfs suggests.

A suggested command must work pasted into the person's shell. ``memfs`` does only when
that name finds this very program on PATH; a virtualenv's ``.venv/bin/memfs`` run by
path (``make run``) or a second install shadowed by another one is named by its path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

NAME = "memfs"


def _running() -> str | None:
    """The path of the memfs script this process runs, if it can be told."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == NAME and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    # Started otherwise (python -c, a test runner): the script installed beside this
    # interpreter runs this same code.
    beside = Path(sys.executable).with_name(NAME)
    return str(beside) if beside.is_file() else None


def program() -> str:
    """``memfs`` if PATH finds this program under that name, else its quoted path."""
    running = _running()
    if running is None:
        return NAME
    found = shutil.which(NAME)
    try:
        if found is not None and os.path.samefile(found, running):
            return NAME
    except OSError:
        pass
    return shlex.quote(running)


def command(*args: str | os.PathLike[str]) -> str:
    """A memfs command line to print, each argument quoted for the shell as needed."""
    return " ".join([program(), *(shlex.quote(os.fspath(a)) for a in args)])
