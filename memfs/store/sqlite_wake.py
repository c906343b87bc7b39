"""Hearing another process's commit to an SQLite store at once (Linux inotify).

Every commit to a store in WAL mode writes its ``-wal`` file, whichever process makes it,
so a watch for writes to that file hears every commit on the host without anyone
telling anyone: no store round trip, no change to the commit path. :class:`WalWake`
watches the store's *directory* (the log file is made and removed again as connections
come and go) for writes to ``<store>-wal``, on one inotify descriptor, with no thread:
the first waiter reads the descriptor, later ones wait on a condition for what it read.

Where there is no inotify (another kernel, a full ``max_user_instances``) it says so
(:attr:`WalWake.works` False) and the store polls as before. A store on a network file
system hears this host's commits only; the caller's timeout bounds the rest.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import os
import select
import struct
import threading
import time
from pathlib import Path

_IN_MODIFY = 0x00000002
_IN_CLOSE_WRITE = 0x00000008
_IN_CREATE = 0x00000100
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name, use_errno=True)
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return lib


def available() -> bool:
    """Whether this system has inotify (a watch may still fail for want of instances)."""
    return _libc() is not None


class WalWake:
    """Waits for a write to ``<path>-wal`` by any process on this host."""

    def __init__(self, path: Path) -> None:
        self._name = os.fsencode(path.name + "-wal")
        self._lock = threading.Lock()
        self._heard = threading.Condition(self._lock)
        self._writes = 0  # writes to the log heard so far
        self._reader = False  # a waiter is reading the descriptor
        self._fd = -1
        self._closing = False
        self._interrupts = 0  # interrupt() calls: a wait begun before one ends
        self._stop_r = self._stop_w = -1  # close() wakes a reader through this pipe
        lib = _libc()
        if lib is None:
            return
        fd = lib.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return  # EMFILE (max_user_instances), ENOSYS: poll instead
        mask = _IN_MODIFY | _IN_CREATE | _IN_CLOSE_WRITE
        if lib.inotify_add_watch(fd, os.fsencode(path.parent), mask) < 0:
            os.close(fd)
            return
        self._fd = fd
        self._stop_r, self._stop_w = os.pipe()

    @property
    def works(self) -> bool:
        return self._fd >= 0

    def heard(self) -> int:
        """How many writes to the log this handle has heard (a count to wait past)."""
        with self._lock:
            return self._writes

    def wait(self, past: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until more than ``past`` writes were heard;
        True if they were."""
        deadline = time.monotonic() + timeout
        with self._lock:
            interrupts = self._interrupts
            while self._writes <= past:
                left = deadline - time.monotonic()
                if left <= 0 or self._closing or self._interrupts != interrupts:
                    return self._writes > past
                if self._reader:
                    self._heard.wait(left)
                    continue
                self._reader = True
                self._lock.release()
                try:
                    got = self._read(left)
                finally:
                    self._lock.acquire()
                    self._reader = False
                    self._writes += got
                    self._heard.notify_all()
            return True

    def _read(self, timeout: float) -> int:
        """Writes to the log among the events that arrive within ``timeout``. The
        descriptors stay open while this runs: close() waits for it to return."""
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        try:
            ready = poller.poll(max(1, int(timeout * 1000)))
            if any(fd == self._stop_r for fd, _ in ready):
                os.read(self._stop_r, 4096)  # interrupt() or close(): the waiters look
            if not any(fd == self._fd for fd, _ in ready):
                return 0
            data = os.read(self._fd, 64 * 1024)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EINTR):
                return 0
            raise
        count = 0
        at = 0
        while at + _EVENT.size <= len(data):
            _wd, _mask, _cookie, size = _EVENT.unpack_from(data, at)
            name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
            at += _EVENT.size + size
            if name == self._name:
                count += 1
        return count

    def interrupt(self) -> None:
        """End every wait in progress now (it returns whether it heard a write)."""
        with self._lock:
            self._interrupts += 1
            if self._reader and not self._closing:
                os.write(self._stop_w, b"x")
            self._heard.notify_all()

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
            if self._fd < 0:
                return
            os.write(self._stop_w, b"x")
            while self._reader:
                self._heard.wait()
            fds = (self._fd, self._stop_r, self._stop_w)
            self._fd = -1
            self._heard.notify_all()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
