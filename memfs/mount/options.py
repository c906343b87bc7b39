"""Mount options and the one errno mapping of the FUSE operations (no FUSE import)."""

from __future__ import annotations

import errno
from collections import Counter
from dataclasses import dataclass

from memfs import errors


@dataclass(frozen=True, slots=True)
class MountOptions:
    """How the mount trades freshness, durability and speed.

    attr_timeout / entry_timeout: seconds the kernel trusts cached attributes and names.
        Long is safe because other writers' changes are invalidated from the change feed.
    negative_timeout: 0 so a name created elsewhere is found at once.
    commit_quiet_period: a buffered write reaches the store this long after the last
        write to that file (fsync commits at once). Every commit is one atomic revision
        of the whole file, so a crash (kill -9) never leaves a mix of two versions; it
        loses the writes of at most this last window. The price of not hearing close()
        in no-open mode: a program that stalls longer than this in the middle of
        rewriting a file gets that intermediate state committed (and left behind by a
        crash); fsync, or commit_on_close, makes a version definitive.
    commit_on_close: also commit on every close() (registers FLUSH: one Python callback
        per close, read-only opens included). close() then means committed.
    poll_interval: how often the change feed is read; bounds staleness for readers.
    cache_readdir: ask the kernel to keep directory listings (registers opendir). None
        (default) means on with libfuse >= 3.16 and off before: older high-level APIs
        drop the flag (libfuse issue #821, fixed by PR #822), so it would only cost an
        opendir callback per directory. Listings are cached in the daemon either way.
    callback_counter: if given, every callback increments it, and its ``<name>.ns`` key
        by the nanoseconds spent inside the operation (benchmarks).
    """

    attr_timeout: float = 60.0
    entry_timeout: float = 60.0
    negative_timeout: float = 0.0
    commit_quiet_period: float = 0.1
    commit_on_close: bool = False
    poll_interval: float = 0.1
    cache_readdir: bool | None = None
    auto_unmount: bool = True
    allow_other: bool = False
    callback_counter: Counter[str] | None = None


def errno_of(exc: BaseException) -> int:
    """The errno for an exception raised inside an operation (the one mapping helper)."""
    table: list[tuple[type[BaseException], int]] = [
        (errors.NotFound, errno.ENOENT),
        (errors.AlreadyExists, errno.EEXIST),
        (errors.NotADirectory, errno.ENOTDIR),
        (errors.IsADirectory, errno.EISDIR),
        (errors.DirectoryNotEmpty, errno.ENOTEMPTY),
        (errors.Conflict, errno.EAGAIN),
        (errors.TooLarge, errno.EFBIG),
        (errors.InvalidMove, errno.EINVAL),
        (errors.StoreUnavailable, errno.EIO),
        (errors.PathTooLong, errno.ENAMETOOLONG),
        (errors.PathError, errno.EINVAL),
    ]
    for kind, code in table:
        if isinstance(exc, kind):
            return code
    if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
        return exc.errno
    return errno.EIO
