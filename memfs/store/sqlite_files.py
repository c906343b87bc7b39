"""This process's descriptors of SQLite store files, and the one safe way to read a
store file's bytes while SQLite has it open.

POSIX advisory locks belong to a process and a file, not to a descriptor: closing *any*
descriptor of the file drops every lock the process holds on it, SQLite's included
(https://sqlite.org/howtocorrupt.html, "POSIX advisory locks canceled by a separate
thread doing close()"). SQLite's own descriptors are safe, its VFS shares them per file
and defers their close; a plain open() and close() of the store file is not. Without
its locks, this process's connections look absent to other processes: the next one to
close its last connection checkpoints and deletes the WAL and -shm under them, and they
go on reading a stale WAL index (commits missing, then "database disk image is
malformed" once both sides write). So every connection counts itself here, per file,
and memfs reads the file's bytes itself only while that count is zero.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections import Counter
from pathlib import Path

FileKey = tuple[int, int]  # (st_dev, st_ino): one file, whatever path names it

_files_lock = threading.RLock()  # re-entered if GC runs a __del__ below while held
_open_files: Counter[FileKey] = Counter()
# Descriptors that could not be closed when read_header() was done with them (the file
# was replaced under its path by one this process has open): closed with the last
# connection to that file.
_parked: dict[FileKey, list[int]] = {}


class Connection(sqlite3.Connection):
    """An sqlite3 connection counted in this process's open files while it is open."""

    memfs_file: FileKey | None = None

    def close(self) -> None:
        super().close()
        _forget(self)

    def __del__(self) -> None:
        # Dropped without close(): sqlite3 closes it after this, so close it first and
        # never count it gone while its locks are still held.
        with contextlib.suppress(Exception):
            self.close()
        _forget(self)


def count_open(db: Connection, path: Path) -> None:
    """Count ``db``, just opened on ``path`` and before its first statement: until then
    it holds no lock that read_header() could drop."""
    try:
        st = os.stat(path)
    except OSError:
        return  # gone already; SQLite will report it on the first statement
    key = (st.st_dev, st.st_ino)
    with _files_lock:
        db.memfs_file = key
        _open_files[key] += 1


def _forget(db: Connection) -> None:
    with _files_lock:
        key, db.memfs_file = db.memfs_file, None
        if key is None:
            return
        _open_files[key] -= 1
        if _open_files[key] > 0:
            return
        del _open_files[key]
        for fd in _parked.pop(key, []):
            os.close(fd)


def read_header(path: Path) -> bytes | None:
    """The file's first 100 bytes, or None when a connection of this process has it open
    (its bytes are then SQLite's to read: closing a descriptor would drop its locks)."""
    with _files_lock:  # held to the close: no connection counts itself meanwhile
        st = os.stat(path)
        if _open_files[(st.st_dev, st.st_ino)]:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if _open_files[key]:
            # Replaced under its path by a file this process has open: closing now
            # would drop the locks on that one.
            _parked.setdefault(key, []).append(fd)
            return None
        try:
            return os.pread(fd, 100, 0)
        finally:
            os.close(fd)
