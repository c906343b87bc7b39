"""Whether anyone is writing a file in DIR, and keeping it so for an instant: Linux leases.

Two moments need to know. Reading: quiet time alone cannot tell a writer paused between
truncating and writing from a finished save, so a file open for writing anywhere is not
read yet. Replacing or removing: a program holding the file open for writing (a shell's
``exec 3>>log.md``, a logger, an ``echo >>`` between its open and its write) writes to
the file it opened; once the mirror has renamed another file over the name, or unlinked
it, those writes land in a file that is no longer in DIR, and are lost. So the mirror
holds a read lease on the old file from its last check to its rename, and afterwards
waits until nobody holds the old file open for writing before it reads it a last time.

A read lease is granted only while nobody has the file open for writing (EAGAIN: then
:class:`Busy`). While it is held, an open for writing makes the kernel tell the holder
(a signal, see :func:`_arm`) and wait, up to ``/proc/sys/fs/lease-break-time``, until
the lease is let go; the mirror holds one for microseconds. Where leases are not
available (a file of another user without CAP_LEASE, a file system without them) every
check here says "nobody is writing", and the mirror's other checks stand alone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import signal
import time
from collections.abc import Callable, Iterator

# How long a replace waits for a writer that opened the old file at the last instant
# to finish with it before putting that file back instead (see memfs.sync.disk).
CLOSE_WAIT_S = 1.0
_POLL_S = 0.001

_SETLEASE = getattr(fcntl, "F_SETLEASE", None)
_GETLEASE = getattr(fcntl, "F_GETLEASE", None)
_SETSIG = getattr(fcntl, "F_SETSIG", None)


class Busy(Exception):
    """Someone has the file open for writing: leave it until it is closed."""


def _arm(fd: int) -> bool:
    """Take a read lease on ``fd``'s file: True if held, False where leases are not
    available; Busy while the file is open for writing anywhere."""
    if _SETLEASE is None or _SETSIG is None:
        return False
    try:
        # A writer opening the file while the lease is held makes the kernel signal the
        # holder, by default with SIGIO, which would end the process: SIGURG is ignored
        # unless someone handles it.
        fcntl.fcntl(fd, _SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, _SETLEASE, fcntl.F_RDLCK)
    except OSError as e:
        if e.errno == errno.EAGAIN:
            raise Busy from None
        return False
    return True


def _release(fd: int) -> None:
    if _SETLEASE is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _SETLEASE, fcntl.F_UNLCK)


def open_for_writing(fd: int) -> bool:
    """True if some process has ``fd``'s file open for writing (False where unknowable)."""
    try:
        held = _arm(fd)
    except Busy:
        return True
    if held:
        _release(fd)
    return False


@contextlib.contextmanager
def held(fd: int) -> Iterator[Callable[[], bool]]:
    """Hold a read lease on ``fd``'s file for the block (Busy if it is open for writing
    now). Yields a function saying whether a writer has tried to open the file since: it
    is then waiting for the block to end, and will write to this file."""
    if not _arm(fd):
        yield lambda: False
        return
    try:
        yield lambda: _break_pending(fd)
    finally:
        _release(fd)


def _break_pending(fd: int) -> bool:
    if _GETLEASE is None:
        return False
    try:
        # While a writer waits for it, the lease reports what it is being broken to.
        return bool(fcntl.fcntl(fd, _GETLEASE) == fcntl.F_UNLCK)
    except OSError:
        return False


def wait_closed(fd: int, timeout: float = CLOSE_WAIT_S) -> bool:
    """Wait until nobody has ``fd``'s file open for writing; False if someone still has
    after ``timeout`` seconds (True at once where leases are not available)."""
    deadline = time.monotonic() + timeout
    while open_for_writing(fd):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True
