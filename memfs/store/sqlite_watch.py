"""Whether an open SQLite store is still the file its URL names, and saving it if not.

A store file deleted, replaced or moved while a process has it open keeps working for
that process (it holds the inode), so every commit would land in a file nobody can open
again. :class:`FileWatch` notices: it keeps a descriptor of the file opened with the
store and compares, in two system calls, what that descriptor is with what the path now
is. :func:`rescue` then copies the whole database, as the open connection sees it (the
write-ahead log included), with SQLite's backup API: back to its path when that is free,
else into a recovery directory.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path


class FileWatch:
    """The identity of the store file at ``path`` as it was opened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        st = os.fstat(self._fd)
        self._ident = (st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        if self._fd < 0:
            return None
        st = os.fstat(self._fd)
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == self._ident:
            return None
        if st.st_nlink == 0:
            gone = "was deleted" if now is None else "was deleted and another file put there"
            return f"the store file {self.path} {gone} while it was open"
        try:
            where = os.readlink(f"/proc/self/fd/{self._fd}")
        except OSError:
            where = "elsewhere"
        return f"the store file {self.path} was moved to {where} while it was open"

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def rescue(db: sqlite3.Connection, path: Path, recovery_dir: Path) -> Path:
    """Copy the database ``db`` has open to ``path`` if nothing is there now, else to a
    new file in ``recovery_dir``; the file written (whole, or not at all)."""
    if os.path.lexists(path):
        recovery_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = recovery_dir / f"{path.stem}.rescued-{stamp}{path.suffix}"
    else:
        target = path
    tmp = target.with_name(f".{target.name}.rescue-{os.getpid()}")
    try:
        copy = sqlite3.connect(tmp)
        try:
            db.backup(copy)
            # One file a person can move about: no write-ahead log beside it.
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        raise
    return target
