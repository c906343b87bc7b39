"""Files only their owner may read: memfs's state directories and records.

A record names a store by its URL, and a URL may carry a password (or point at a
server the user would rather not advertise); logs name files and stores. So every
directory memfs keeps state in is 0700 and every record 0600, whatever the umask, and
a directory made by an older memfs with looser modes is tightened when it is next used.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """``path`` (and any parents it needs) made, 0700; an existing ``path`` is tightened
    (its parents are the user's to set, unless this call made them)."""
    missing: list[Path] = []
    at = path
    while not at.exists():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, DIR_MODE)  # mkdir's mode is cut by the umask
    if path.stat().st_mode & 0o077:
        os.chmod(path, DIR_MODE)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader never sees half a file), 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # a leftover temp file of another mode is reused
        with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as f:
            f.write(text)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def open_private_log(path: Path) -> int:
    """An append descriptor on the log ``path``, which is made (or made again) 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd
