"""Thin wrappers over the dir-fd system calls the handler needs, with their fallbacks.

Nothing here follows a symbolic link or takes a path from the root: every call names one
entry relative to a directory fd the caller walked to.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from collections.abc import Callable

from memfs.errors import AlreadyExists, NotFound

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1


def _load_renameat2() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def fsync_dir(dir_fd: int) -> None:
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        # Some file systems (FUSE without fsyncdir, some network mounts) cannot; the
        # rename is still atomic, only its durability is up to them.
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EBADF, errno.ENOTSUP):
            raise


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Rename without ever replacing ``dst``: atomic where the file system allows it.

    Raises AlreadyExists if ``dst`` exists, NotFound if ``src`` does not.
    """
    if _renameat2 is not None:
        rc = _renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), _RENAME_NOREPLACE)
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err in (errno.EEXIST, errno.ENOTEMPTY):
            raise AlreadyExists(dst, path=dst)
        if err == errno.ENOENT:
            raise NotFound(src, path=src)
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), src)
    # The file system cannot refuse to replace (some FUSE mounts): check, then rename.
    # The window between the two is as small as it can be made without kernel help.
    if lstat_at(dst_dir, dst) is not None:
        raise AlreadyExists(dst, path=dst)
    try:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
    except FileNotFoundError as exc:
        raise NotFound(src, path=src) from exc


def read_all(fd: int, limit: int) -> bytes | None:
    """The whole file from offset 0, or None once it grows past ``limit`` bytes."""
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        offset += len(chunk)
        if offset > limit:
            return None
        chunks.append(chunk)


def rmtree_at(parent_fd: int, name: str) -> None:
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except NotADirectoryError:
        # Swapped for a file or a link since it was listed: remove the entry itself,
        # never what a link points to.
        os.unlink(name, dir_fd=parent_fd)
        return
    try:
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        for child, is_dir in entries:
            if is_dir:
                rmtree_at(fd, child)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)
