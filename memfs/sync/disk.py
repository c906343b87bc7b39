"""The mirror's side of DIR: stable reads, atomic replaces and checked deletes.

Every change memfs makes in DIR is atomic and *checked*: content is written to a hidden
``.memfs-tmp-*`` file and renamed into place; the file it replaces is first hard-linked
aside (``.memfs-aside-*``, so a kill leaves it recoverable) and compared with what the
caller expected while a read lease keeps writers out (:mod:`memfs.sync.leases`). A save
that still reached the old file (a writer that opened it in the last instant) is handed
back to the caller as *displaced*, to be merged or kept. A file someone has open for
writing is neither replaced nor removed (:class:`Busy`): its next writes would go to a
file no longer in DIR. Nothing here ever destroys bytes it has not just compared with
what it expected.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memfs.sync import leases
from memfs.sync.leases import Busy
from memfs.sync.names import ASIDE_PREFIX, TEMP_PREFIX, ignored_name

__all__ = ["Busy", "Disk", "LocalFile", "Oversize", "Replaced", "Unstable", "sha256"]

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class Unstable(Exception):
    """The file changed while it was read (still being written); try again later."""


class Oversize(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


@dataclass(frozen=True, slots=True)
class LocalFile:
    data: bytes
    sha256: str
    st: os.stat_result


@dataclass(frozen=True, slots=True)
class Replaced:
    """What :meth:`Disk.replace` did. ``st``: the new file's stat; ``before``: the
    content it replaced (None: the name was free); ``displaced``: a save that reached the
    old file after it was checked, which the caller must keep (None: there was none)."""

    st: os.stat_result
    before: bytes | None = None
    displaced: bytes | None = None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class Disk:
    """File operations on the tree rooted at ``root``, by store-relative path."""

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes

    def abs(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else str(self.root)

    def lstat(self, rel: str) -> os.stat_result | None:
        try:
            return os.lstat(self.abs(rel))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def read(self, rel: str, *, min_age_ns: int = 0) -> LocalFile:
        """Read a regular file whose size and mtime do not move while it is read.

        ``min_age_ns``: also refuse (Unstable) a file modified more recently than this,
        for scans that have no event telling them a write just finished.
        """
        fd = os.open(self.abs(rel), _READ_FLAGS)
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise Unstable(rel)
            if before.st_size > self.max_file_bytes:
                raise Oversize(before.st_size)
            if min_age_ns and time.time_ns() - before.st_mtime_ns < min_age_ns:
                raise Unstable(rel)
            if leases.open_for_writing(fd):
                raise Unstable(rel)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if _stamp(before) != _stamp(after) or len(data) != after.st_size:
            raise Unstable(rel)
        return LocalFile(data, sha256(data), after)

    def _temp(self, parent: str, prefix: str, name: str = "") -> str:
        return os.path.join(parent, f"{prefix}{secrets.token_hex(6)}-{name}"[:250])

    def _write_temp(self, parent: str, data: bytes, mode: int) -> tuple[str, os.stat_result]:
        tmp = self._temp(parent, TEMP_PREFIX)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        return tmp, st

    def makedirs(self, rel: str) -> None:
        os.makedirs(self.abs(rel), mode=0o700, exist_ok=True)

    def replace(
        self, rel: str, data: bytes, expected_sha: str | None, mode: int = 0o600
    ) -> Replaced | None:
        """Put ``data`` at ``rel`` if the file there still has ``expected_sha`` (None:
        the name is still free). None when it was not as expected: nothing changed,
        decide again. Busy while someone has the file open for writing: its next
        writes would go to a file no longer in DIR (see :mod:`memfs.sync.leases`).
        """
        final = self.abs(rel)
        parent = os.path.dirname(final)
        os.makedirs(parent, mode=0o700, exist_ok=True)
        if expected_sha is not None:
            # Keep the person's permission bits on a file they already have.
            with contextlib.suppress(OSError):
                mode = os.lstat(final).st_mode & 0o7777
        tmp, st = self._write_temp(parent, data, mode)
        try:
            if expected_sha is None:
                # link() never replaces: an absent file stays the precondition to the end.
                try:
                    os.link(tmp, final)
                except FileExistsError:
                    return None
                return Replaced(self._final_stat(final, st))
            aside = self._temp(parent, ASIDE_PREFIX, os.path.basename(final))
            try:
                os.link(final, aside)
            except FileNotFoundError:
                return None
            try:
                return self._swap(final, aside, tmp, st, expected_sha)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(aside)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)  # still there unless it was renamed into place

    def _swap(
        self, final: str, aside: str, tmp: str, st: os.stat_result, expected_sha: str
    ) -> Replaced | None:
        """Rename ``tmp`` over ``final`` (whose old file is also at ``aside``) if the old
        file holds ``expected_sha``; then look at the old file a last time."""
        try:
            fd = os.open(aside, _READ_FLAGS)
        except OSError:
            return None  # no longer a regular file (a symlink now): decide again
        try:
            with leases.held(fd) as writer_waits:
                before = _read_all(fd)
                if sha256(before) != expected_sha:
                    return None
                if writer_waits():
                    raise Busy(final)  # let it write to the file it opened, in DIR
                os.rename(tmp, final)
            # A writer that opened the old file in the last instant writes there now:
            # let it finish, then read what it left.
            if not leases.wait_closed(fd) and self._put_back(aside, final, st):
                # It keeps the old file open (a logger, ``exec 3>>``): its writes must
                # stay in DIR, so the old file is back under its name instead.
                return None
            after = _read_all(fd)
        finally:
            os.close(fd)
        return Replaced(self._final_stat(final, st), before, after if after != before else None)

    @staticmethod
    def _put_back(aside: str, final: str, ours: os.stat_result) -> bool:
        """Rename ``aside`` back to ``final`` if ``final`` is still the file just put
        there (``ours``); False if someone saved another file there meanwhile."""
        try:
            if os.lstat(final).st_ino != ours.st_ino:
                return False
        except FileNotFoundError:
            pass
        os.rename(aside, final)
        return True

    @staticmethod
    def _final_stat(final: str, written: os.stat_result) -> os.stat_result:
        # link/rename change ctime; record the file as it is now if it is still ours.
        try:
            now = os.lstat(final)
        except FileNotFoundError:
            return written
        return now if now.st_ino == written.st_ino else written

    @staticmethod
    def read_path(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def remove(self, rel: str, expected_sha: str) -> bool:
        """Delete the file at ``rel`` if it still holds ``expected_sha``.

        True when it is gone (deleted now or already); False when it had changed: it is
        then back at ``rel``, or (if a new file took the name meanwhile) kept beside it
        under a name the next scan will pick up as a new file. Busy while someone has
        it open for writing.
        """
        final = self.abs(rel)
        aside = self._temp(os.path.dirname(final), ASIDE_PREFIX, os.path.basename(final))
        try:
            fd = os.open(final, _READ_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return True
        except OSError:
            return False  # no longer a regular file (a symlink now): decide again
        try:
            with leases.held(fd) as writer_waits:
                if writer_waits():
                    raise Busy(final)
                try:
                    os.rename(final, aside)
                except (FileNotFoundError, NotADirectoryError):
                    return True
                if os.lstat(aside).st_ino != os.fstat(fd).st_ino:  # replaced meanwhile
                    self.keep(aside, final)
                    return False
            # Unlinked at the end, once nobody writes to it: a writer that opened it in
            # the last instant would write to a file no longer in DIR.
            if not leases.wait_closed(fd) or sha256(_read_all(fd)) != expected_sha:
                self.keep(aside, final)
                return False
            os.unlink(aside)
            return True
        finally:
            os.close(fd)

    def keep(self, aside: str, final: str) -> str:
        """Move the set-aside file ``aside`` back to ``final``, or beside it if taken."""
        target = final
        for n in range(1, 1000):
            try:
                os.link(aside, target)
                break
            except FileExistsError:
                stem, dot, ext = os.path.basename(final).rpartition(".")
                if not stem:
                    stem, dot, ext = os.path.basename(final), "", ""
                target = os.path.join(os.path.dirname(final), f"{stem}.recovered-{n}{dot}{ext}")
        os.unlink(aside)
        return target

    def rmdir(self, rel: str) -> bool:
        """Remove the directory if it is empty; False if something is still in it."""
        try:
            os.rmdir(self.abs(rel))
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                return False
            raise
        return True

    def scan(self, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
        """Every entry below ``rel`` except ignored names, parents before children."""
        try:
            with os.scandir(self.abs(rel)) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return  # gone, or unreadable (the files in it are then not synced either)
        for entry in entries:
            if ignored_name(entry.name):
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield child, st
            if stat.S_ISDIR(st.st_mode):
                yield from self.scan(child)

    def leftovers(self) -> Iterator[str]:
        """Absolute paths of memfs temp and aside files a killed mirror left behind."""
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if not ignored_name(d)]
            for name in filenames:
                if name.startswith((TEMP_PREFIX, ASIDE_PREFIX)):
                    yield os.path.join(dirpath, name)


def _read_all(fd: int) -> bytes:
    """The whole content of ``fd``'s file, from its start, whatever its offset."""
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
