"""The one errno mapping of the mount's operations (memfs.mount.opkit.errno_of), for
every typed error memfs has, and the wrapper that applies it to every operation: typed
errors become their errno, unexpected ones EIO with the traceback in the log. With no
kernel: MemfsOperations on real stores (tests/fixtures/ops.py), a full disk included.
"""

from __future__ import annotations

import errno
import inspect
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memfs import errors
from memfs.mount.opkit import errno_of
from tests.fixtures.disks import fill
from tests.fixtures.mount import sqlite_url
from tests.fixtures.ops import Kernel

MakeKernel = Callable[..., Kernel]
FILE = stat.S_IFREG
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC

# Every error memfs can raise, and what a program reading the mount gets for it. A new
# error class fails the first test until it is given its errno here and in errno_of.
EXPECTED: dict[type[errors.MemfsError], int] = {
    errors.MemfsError: errno.EIO,
    errors.PathError: errno.EINVAL,
    errors.PathTooLong: errno.ENAMETOOLONG,
    errors.StoreError: errno.EIO,
    errors.NotFound: errno.ENOENT,
    errors.Redacted: errno.ENOENT,
    errors.AlreadyExists: errno.EEXIST,
    errors.NotADirectory: errno.ENOTDIR,
    errors.IsADirectory: errno.EISDIR,
    errors.DirectoryNotEmpty: errno.ENOTEMPTY,
    errors.Conflict: errno.EAGAIN,
    errors.TooLarge: errno.EFBIG,
    errors.CapExceeded: errno.EDQUOT,
    errors.InvalidMove: errno.EINVAL,
    errors.Damaged: errno.EIO,  # bytes that fail their hash: a bad sector, to a program
    errors.StoreUnavailable: errno.EIO,
    errors.StoreFull: errno.ENOSPC,
    errors.CorruptStore: errno.EIO,
    errors.UnknownScheme: errno.EIO,
    errors.ReadOnlyStore: errno.EIO,  # a mount opens its store read-write: never met there
    errors.NoSuchTree: errno.EIO,
    # Not the operations' to raise: anything else memfs has is an I/O error to a program.
    errors.ActorError: errno.EIO,
    errors.QueryError: errno.EIO,
    errors.MountError: errno.EIO,
    errors.IllegalTransition: errno.EIO,  # a bug in the write path, never a person's doing
    errors.SyncError: errno.EIO,
    errors.TransferError: errno.EIO,
    errors.ImportRefused: errno.EIO,
    errors.OverLimit: errno.EIO,
    errors.Bomb: errno.EIO,
    errors.AgentError: errno.EIO,
    errors.ClaudeCodeError: errno.EIO,
    errors.HttpError: errno.EIO,
    errors.McpError: errno.EIO,
    errors.WebError: errno.EIO,
}


def _bare(kind: type[BaseException]) -> BaseException:
    """An instance without calling __init__ (some need keyword details): errno_of goes
    by the class alone."""
    return kind.__new__(kind)


def test_every_typed_error_has_its_errno() -> None:
    declared = {
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.MemfsError)
    }
    assert declared == set(EXPECTED), "give each new error class its errno (and here)"
    wrong = {
        kind.__name__: (errno.errorcode[errno_of(_bare(kind))], errno.errorcode[code])
        for kind, code in EXPECTED.items()
        if errno_of(_bare(kind)) != code
    }
    assert wrong == {}


def test_other_exceptions_keep_their_errno_or_are_eio() -> None:
    assert errno_of(OSError(errno.EROFS, "read-only")) == errno.EROFS
    assert errno_of(PermissionError(errno.EACCES, "no")) == errno.EACCES
    assert errno_of(OSError("no errno at all")) == errno.EIO
    assert errno_of(ValueError("a bug")) == errno.EIO
    assert errno_of(KeyError("a bug")) == errno.EIO


def unsaved(k: Kernel) -> tuple[str, ...]:
    return k.ops.writes.health.unsaved


def _errno(call: Callable[[], object]) -> int:
    with pytest.raises(OSError) as caught:
        call()
    return caught.value.errno or 0


def test_the_operations_answer_each_store_refusal_by_the_mapping(kernel: MakeKernel) -> None:
    k = kernel(start=False)
    other = k.other()
    other.mkdir("dir", author="someone")
    other.write("dir/a.md", b"a", author="someone")
    other.write("file", b"x", author="someone")
    ops = k.ops
    cases: list[tuple[type[errors.MemfsError], Callable[[], object]]] = [
        (errors.NotFound, lambda: ops.rename("/missing", "/b", 0)),
        (errors.AlreadyExists, lambda: ops.mkdir("/dir", 0o700)),
        (errors.NotADirectory, lambda: ops.readdir("/file", 0)),
        (errors.IsADirectory, lambda: ops.read("/dir", 1, 0, 0)),
        (errors.DirectoryNotEmpty, lambda: ops.rmdir("/dir")),
        (errors.InvalidMove, lambda: ops.rename("/dir", "/dir/inside", 0)),
        (errors.PathError, lambda: ops.mkdir("/CON", 0o700)),
        (errors.PathTooLong, lambda: ops.mkdir("/" + "n" * 256, 0o700)),
    ]
    assert {kind: _errno(call) for kind, call in cases} == {
        kind: EXPECTED[kind] for kind, _ in cases
    }


def test_a_closed_store_is_eio_and_lookups_seen_before_still_answer(
    kernel: MakeKernel,
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.mkdir("dir", author="someone")
    k.ops.getattr("/dir")
    k.ops.create("/dir/new.md", FILE | 0o600, CREATE)  # the mount forgets dir's entry
    k.store.close()
    assert stat.S_ISDIR(k.ops.getattr("/dir")["st_mode"])  # the last answer stands in
    assert _errno(lambda: k.ops.getattr("/never-seen")) == errno.EIO
    assert _errno(lambda: k.ops.mkdir("/dir/sub", 0o700)) == errno.EIO
    assert _errno(lambda: k.ops.fsync("/dir/new.md", 0, 0)) == errno.EIO
    assert unsaved(k) == ("dir/new.md",)  # kept, and said so


def test_a_full_disk_is_enospc_and_the_write_is_kept_until_there_is_room(
    kernel: MakeKernel, small_disk: Path
) -> None:
    k = kernel(sqlite_url(small_disk / "memory.db"), start=False)
    other = k.other()
    fh = k.ops.create("/notes.md", FILE | 0o600, CREATE)
    k.ops.write("/notes.md", os.urandom(64 << 10), 0, fh, os.O_WRONLY)
    filler = fill(small_disk)
    assert _errno(lambda: k.ops.fsync("/notes.md", 0, fh)) == errno.ENOSPC
    assert _errno(lambda: k.ops.mkdir("/dir", 0o700)) == errno.ENOSPC
    assert unsaved(k) == ("notes.md",)
    filler.unlink()
    k.ops.fsync("/notes.md", 0, fh)
    assert other.stat("notes.md").size == 64 << 10
    assert unsaved(k) == ()


def test_an_unexpected_error_is_eio_with_its_traceback_in_the_log(
    kernel: MakeKernel, caplog: pytest.LogCaptureFixture
) -> None:
    k = kernel(start=False)
    caplog.set_level(logging.ERROR, logger="memfs.mount.ops")
    not_a_path: Any = 42  # libfuse never sends one: inside the operation it is a plain bug
    assert _errno(lambda: k.ops.getattr(not_a_path)) == errno.EIO
    (record,) = [r for r in caplog.records if "unexpected error in getattr" in r.getMessage()]
    assert record.exc_info is not None and record.exc_info[0] is AttributeError
