"""The mirror's side of DIR: stable reads, atomic replaces and checked deletes.

Every change memfs makes in DIR is atomic and *checked*: content is written to a hidden
``.memfs-tmp-*`` file and renamed into place, and the file it replaces is first
hard-linked aside (``.memfs-aside-*``) so that, if a person saved between the mirror's
decision and its rename, their content is still there to be kept as a conflict copy.
Nothing here ever destroys bytes it has not just compared with what it expected.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import signal
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memfs.sync.names import ASIDE_PREFIX, TEMP_PREFIX, ignored_name


def _open_for_writing(fd: int) -> bool:
    """True if some process still has the file open for writing.

    Quiet time alone cannot tell: a writer paused between truncating and writing leaves
    an empty file that looks settled. Linux refuses a read lease exactly while the file
    is open for writing anywhere; where leases are unavailable (another owner without
    CAP_LEASE, a file system without them) this says False and the stability checks
    stand alone.
    """
    setlease = getattr(fcntl, "F_SETLEASE", None)
    setsig = getattr(fcntl, "F_SETSIG", None)
    if setlease is None or setsig is None:
        return False
    try:
        # A writer opening the file while we hold the lease makes the kernel signal us,
        # by default with SIGIO, which would end the process: SIGURG is ignored unless
        # someone handles it.
        fcntl.fcntl(fd, setsig, signal.SIGURG)
        fcntl.fcntl(fd, setlease, fcntl.F_RDLCK)
    except OSError as e:
        return e.errno == errno.EAGAIN
    fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
    return False


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
        fd = os.open(self.abs(rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise Unstable(rel)
            if before.st_size > self.max_file_bytes:
                raise Oversize(before.st_size)
            if min_age_ns and time.time_ns() - before.st_mtime_ns < min_age_ns:
                raise Unstable(rel)
            if _open_for_writing(fd):
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
    ) -> tuple[os.stat_result | None, bytes | None]:
        """Put ``data`` at ``rel`` if the file there still has ``expected_sha`` (None:
        still absent).

        Returns ``(stat, displaced)``. ``stat`` is None when the file was not as expected
        (nothing changed; decide again). ``displaced`` is content a person wrote in the
        instant between check and rename: it was replaced, and the caller must keep it.
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
                    return None, None
                return self._final_stat(final, st), None
            aside = self._temp(parent, ASIDE_PREFIX, os.path.basename(final))
            try:
                os.link(final, aside)
            except FileNotFoundError:
                return None, None
            try:
                if sha256(self.read_path(aside)) != expected_sha:
                    return None, None
                os.rename(tmp, final)
                tmp = ""
                # A save that landed between the check and the rename went to the inode
                # now only reachable as ``aside``: compare again and hand it back.
                after = self.read_path(aside)
                displaced = after if sha256(after) != expected_sha else None
                return self._final_stat(final, st), displaced
            finally:
                os.unlink(aside)
        finally:
            if tmp:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

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
        under a name the next scan will pick up as a new file.
        """
        final = self.abs(rel)
        parent = os.path.dirname(final)
        aside = self._temp(parent, ASIDE_PREFIX, os.path.basename(final))
        try:
            os.rename(final, aside)
        except (FileNotFoundError, NotADirectoryError):
            return True
        if sha256(self.read_path(aside)) == expected_sha:
            os.unlink(aside)
            return True
        self.keep(aside, final)
        return False

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
