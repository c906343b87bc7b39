"""Shared pieces of the FUSE operations: the one errno mapping (:func:`errno_of`), the
wrapper that applies it to every operation (:func:`op`), and the attribute helpers.

No FUSE import here: :mod:`memfs.mount.fuse` is the only module that talks to libfuse.
"""

from __future__ import annotations

import errno
import functools
import logging
import stat
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from memfs import errors
from memfs.store.base import Entry

log = logging.getLogger("memfs.mount.ops")

T = TypeVar("T")


class _Counted(Protocol):
    _counter: Any


class Pending(Protocol):
    """Content not in the store yet: a write buffer, or an unlinked file's orphan."""

    path: str
    data: bytearray
    mode: int
    mtime_ns: int
    uid: int | None
    gid: int | None


# Typed errors to errno, most specific first (a subclass before its base): StoreFull
# is a StoreUnavailable, PathTooLong a PathError.
ERRNOS: tuple[tuple[type[errors.MemfsError], int], ...] = (
    (errors.NotFound, errno.ENOENT),
    (errors.AlreadyExists, errno.EEXIST),
    (errors.NotADirectory, errno.ENOTDIR),
    (errors.IsADirectory, errno.EISDIR),
    (errors.DirectoryNotEmpty, errno.ENOTEMPTY),
    (errors.Conflict, errno.EAGAIN),
    (errors.TooLarge, errno.EFBIG),
    (errors.CapExceeded, errno.EDQUOT),
    (errors.InvalidMove, errno.EINVAL),
    (errors.StoreFull, errno.ENOSPC),
    (errors.StoreUnavailable, errno.EIO),
    (errors.PathTooLong, errno.ENAMETOOLONG),
    (errors.PathError, errno.EINVAL),
)


def errno_of(exc: BaseException) -> int:
    """The errno for an exception raised inside an operation (the one mapping helper):
    a typed error by :data:`ERRNOS`, an OSError by its own errno, anything else EIO."""
    for kind, code in ERRNOS:
        if isinstance(exc, kind):
            return code
    if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
        return exc.errno
    return errno.EIO


def op(method: Callable[..., T]) -> Callable[..., T]:
    # An op registered only with some options is defined under a private name (the
    # class's public one stays None otherwise); it is counted under the public one.
    name = method.__name__.lstrip("_")

    timed_name = name + ".ns"

    @functools.wraps(method)
    def wrapper(self: _Counted, *args: Any) -> T:
        counter = self._counter
        if counter is not None:
            counter[name] += 1
            start = time.perf_counter_ns()
        try:
            return method(self, *args)
        except OSError:
            raise
        except errors.MemfsError as e:
            if isinstance(e, errors.StoreUnavailable):
                # Not the caller's mistake: the operator needs to see this one.
                log.warning("memfs: %s%r failed, store unavailable: %s", name, args[:2], e)
            elif not isinstance(e, errors.NotFound):
                log.debug("memfs: %s%r: %s", name, args[:2], e)
            raise OSError(errno_of(e), str(e)) from e
        except Exception:
            log.exception("memfs: unexpected error in %s%r; answering EIO", name, args[:2])
            raise OSError(errno.EIO, "internal error") from None
        finally:
            if counter is not None:
                # Time inside the operation only (not libfuse's or ctypes' share).
                counter[timed_name] += time.perf_counter_ns() - start

    return wrapper


def rel(path: str | None) -> str:
    """FUSE path ("/a/b") to store path ("a/b"); "/" is the root "".

    libfuse passes no path for a file that was unlinked while open (hard_remove).
    """
    if path is None:
        raise OSError(errno.ESTALE, "the file was removed")
    return path.strip("/")


def attrs_of(entry: Entry, buf: Pending | None, uid: int, gid: int) -> dict[str, int]:
    """fusepy's stat dict for ``entry``; a pending write buffer decides size and mtime.
    ``uid``/``gid`` stand in for entries that record no owner (the mounting user)."""
    if entry.kind == "dir":
        # Not counted (that would cost a query per directory lookup, and the kernel asks
        # after every create). 1 is the convention for "unknown", as btrfs reports:
        # find and fts then never skip a directory on the strength of a link count.
        fmt, nlink = stat.S_IFDIR, 1
    elif entry.kind == "symlink":
        fmt, nlink = stat.S_IFLNK, 1
    else:
        fmt, nlink = stat.S_IFREG, 1
    size, mtime = entry.size, entry.mtime_ns
    if buf is not None:
        size, mtime = len(buf.data), buf.mtime_ns
    return {
        "st_mode": fmt | (entry.mode & 0o7777),
        "st_nlink": nlink,
        "st_size": size,
        "st_blocks": (size + 511) // 512,
        "st_blksize": 4096,
        "st_uid": uid if entry.uid is None else entry.uid,
        "st_gid": gid if entry.gid is None else entry.gid,
        # No access time is stored; the modification time is the honest stand-in.
        "st_atime": mtime,
        "st_mtime": mtime,
        "st_ctime": max(entry.ctime_ns, mtime) if buf is not None else entry.ctime_ns,
    }


def pending_attrs(buf: Pending, uid: int, gid: int) -> dict[str, int]:
    """Attributes of a file that exists only as a buffer (created, not committed yet)."""
    now = buf.mtime_ns
    entry = Entry(
        path=buf.path,
        kind="file",
        size=len(buf.data),
        mode=buf.mode,
        mtime_ns=now,
        ctime_ns=now,
        rev=0,
        uid=buf.uid,
        gid=buf.gid,
    )
    return attrs_of(entry, buf, uid, gid)
