"""Two checks the SQLite store makes when it opens a file, so that a bad one is refused
at once with a message saying what to do, not later by whatever query meets the damage.

- :func:`check_pages`: a time-bounded ``PRAGMA quick_check`` of an existing store;
- :func:`unwritable`: why a store cannot be written where it is (read-only file
  system, no permission), to explain SQLite's bare "unable to open database file".
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from memfs.errors import CorruptStore

# quick_check reads every page of every b-tree (it skips only the index-versus-table
# cross-checks that make integrity_check slow), so its cost grows with the file: about
# 30 ms for a 60 MB store in the page cache on this project's machine. A memory store is
# far smaller, so the budget covers a whole check almost always and bounds the cost of
# every open (CLI, daemon, mirror) when it does not: a larger or cold file is checked as
# far as the budget reaches, and damage beyond that is still reported by the query that
# meets it. Counting pages instead would not bound a slow disk.
QUICK_CHECK_BUDGET_S = 0.25
# SQLite calls the progress handler every this many virtual-machine steps (~0.1 ms).
_STEPS = 1000
_MAX_DETAIL = 200


def check_pages(db: sqlite3.Connection, path: Path, *, remedy: str) -> None:
    """Raise CorruptStore if ``quick_check`` finds damage within the time budget."""
    deadline = time.monotonic() + QUICK_CHECK_BUDGET_S
    db.set_progress_handler(lambda: time.monotonic() > deadline, _STEPS)
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as e:
        if getattr(e, "sqlite_errorname", "") == "SQLITE_INTERRUPT":
            return  # out of time: what was read so far is sound
        raise CorruptStore(f"the store {path} is damaged ({e})", remedy=remedy) from e
    finally:
        db.set_progress_handler(None, 0)
    first = str(rows[0][0]) if rows else "ok"
    if first != "ok":
        # A report may hold newlines ("*** in database main ***\nPage 5: ..."); the message
        # must stay one line.
        detail = " ".join(first.split())
        if len(detail) > _MAX_DETAIL:
            detail = detail[: _MAX_DETAIL - 3] + "..."
        raise CorruptStore(f"the store {path} is damaged (quick_check: {detail})", remedy=remedy)


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
