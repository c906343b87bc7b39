"""Checks the SQLite store makes when it opens a file, so that a bad one is refused at
once with a message saying what to do.

- :func:`unwritable`: why a store cannot be written where it is (read-only file
  system, no permission), to explain SQLite's bare "unable to open database file".
"""

from __future__ import annotations

import os
from pathlib import Path


def unwritable(path: Path) -> tuple[str, str] | None:
    """``(why, remedy)`` if the store at ``path`` cannot be written here, else None.

    SQLite needs to write the file and, in WAL mode, to create ``-wal`` and ``-shm``
    beside it, so the directory must be writable too.
    """
    where = path.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        read_only = bool(os.statvfs(where).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    if read_only:
        remedy = "copy it to a writable place" if path.exists() else ""
        return f"{where} is on a read-only file system", remedy
    for target in (path.parent, path):
        if target.exists() and not os.access(target, os.W_OK):
            return f"no permission to write {target}", f"make {target} writable"
    return None
