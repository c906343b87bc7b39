"""Mount a Store through FUSE and serve it: the only module that imports mfusepy.

libfuse 3 is preferred (``FUSE_LIBRARY_NAME=fuse3`` unless the caller chose otherwise);
libfuse 2 works with two limits: no kernel-cache invalidation (timeouts are cut to
:data:`LIBFUSE2_TIMEOUT` instead) and no rename flags (libfuse 2 has none to pass).

What this layer adds to mfusepy, and why:

* create: mfusepy's asks ``inspect.signature()`` of the operation on every new file;
  this one passes the flags itself.
* rename flags: mfusepy drops them, so RENAME_EXCHANGE would silently become a plain
  rename. The rename hook here passes them on; the operations honour RENAME_NOREPLACE
  and refuse the rest.
* utimens: UTIME_OMIT / UTIME_NOW are decoded from the raw timespecs (mfusepy folds them
  into nanosecond numbers where they can no longer be told apart reliably).
* open: the handle and its page-cache flags (direct_io, keep_cache) come from the
  operations (:meth:`MemfsOperations.open_file`): an open file reads the revision it
  opened. O_TRUNC arrives with the OPEN (FUSE_CAP_ATOMIC_O_TRUNC, libfuse 3's
  default), so a save's truncation is known to be one and its base is the process's
  earlier read.
* readdir: entries go to libfuse's filler straight from a cached, pre-encoded listing
  (mfusepy's generic loop costs several microseconds per entry).
* opendir (only with ``cache_readdir``, on by default from libfuse 3.16): sets
  cache_readdir and keep_cache. libfuse 3.14 (Debian 12) drops these flags in its
  high-level opendir, so there every warm listing costs one READDIR callback plus one
  GETATTR (the kernel marks the directory's atime stale after an uncached READDIR).
* invalidation: ``fuse_invalidate_path`` of the loaded libfuse 3, called from the
  change-feed thread (never from a FUSE callback).
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import logging
import os
import stat as stat_mod
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from memfs.errors import MountError
from memfs.mount import state
from memfs.mount.control import ControlServer
from memfs.mount.health import Health
from memfs.mount.ops import MemfsOperations, MountOptions
from memfs.program import command
from memfs.store.base import Store
from memfs.store.subtree import SubtreeStore

log = logging.getLogger(__name__)

FUSE_CAP_ATOMIC_O_TRUNC = 1 << 3
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
# Without invalidation the kernel may serve other writers' stale data this long.
LIBFUSE2_TIMEOUT = 1.0
READY_DEADLINE_S = 30.0
_ZERO_OFF = ctypes.c_int64(0)

_mfusepy: ModuleType | None = None
_pinned = threading.local()
_fuse_class: type | None = None


def _load() -> tuple[ModuleType, type]:
    """Import mfusepy (libfuse 3 by default) and build the FUSE subclass once."""
    global _mfusepy, _fuse_class
    if _mfusepy is not None and _fuse_class is not None:
        return _mfusepy, _fuse_class
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    try:
        import mfusepy
    except (OSError, ImportError) as e:
        raise MountError(
            f"libfuse cannot be loaded ({e}): install it with 'apt-get install fuse3 libfuse3-3'"
        ) from e
    _mfusepy, _fuse_class = mfusepy, _make_fuse_class(mfusepy)
    return _mfusepy, _fuse_class


def _make_fuse_class(mfusepy: Any) -> type:
    """The FUSE class memfs mounts with: mfusepy's, with the callbacks it changes.

    ``mfusepy`` is the module (Any: it ships no types, so its attributes are Any anyway,
    and a class can subclass an attribute of an Any, not of a ModuleType)."""

    def one_time(ts: Any) -> int | None:
        if ts.tv_nsec == UTIME_OMIT:
            return None
        if ts.tv_nsec == UTIME_NOW:
            return time.time_ns()
        return int(ts.tv_sec) * 1_000_000_000 + int(ts.tv_nsec)

    # The one ignore left for mfusepy: strict mypy refuses a base class it sees as Any,
    # and mfusepy ships no types (pyproject's [tool.mypy] lets it be untyped).
    class MemfsFUSE(mfusepy.FUSE):  # type: ignore[misc]
        operations: MemfsOperations  # set by mfusepy's FUSE.__init__

        def __init__(
            self,
            operations: MemfsOperations,
            mountpoint: str,
            *,
            on_init: Callable[[int], None],
            cache_readdir: bool,
            **kwargs: Any,
        ) -> None:
            self._on_init = on_init
            self._cache_readdir = cache_readdir
            self._fillers: dict[int | None, Any] = {}
            super().__init__(operations, mountpoint, **kwargs)

        def _wrapper(self, func: Any, *args: Any, **kwargs: Any) -> Any:
            # libfuse's worker threads are foreign to Python: ctypes gives each callback a
            # fresh thread state and drops it afterwards, so thread-locals (the store's
            # per-thread SQLite connection) vanish after every call, and the thread is
            # missing from threading.enumerate() (the store then closes its connection
            # from another thread while it is in use: a segfault). Taking one extra GIL
            # state reference pins the thread state for the life of the worker thread.
            if not getattr(_pinned, "yes", False):
                ctypes.pythonapi.PyGILState_Ensure()
                threading.current_thread()  # registers the worker with threading
                _pinned.yes = True
            return super()._wrapper(func, *args, **kwargs)

        def _started(self) -> None:
            fuse_ptr = mfusepy._libfuse.fuse_get_context().contents.fuse
            self._on_init(int(fuse_ptr or 0))

        def init_fuse_3(self, conn: Any, config: Any) -> None:
            if conn:
                conn.contents.want |= conn.contents.capable & FUSE_CAP_ATOMIC_O_TRUNC
            super().init_fuse_3(conn, config)
            self._started()

        def open(self, path: bytes, fip: Any) -> int:
            fi = fip.contents
            opened = self.operations.open_file(path.decode(self.encoding, self.errors), fi.flags)
            fi.fh = opened.fh
            fi.direct_io = int(opened.direct_io)
            fi.keep_cache = int(opened.keep_cache)
            return 0

        def create(self, path: bytes, mode: int, fip: Any) -> int:
            # mfusepy's create asks inspect.signature() of the operation on every call
            # (tens of microseconds, one per new file); memfs's create takes the flags.
            fi = fip.contents
            fi.fh = self.operations.create(path.decode(self.encoding, self.errors), mode, fi.flags)
            return 0

        def init_fuse_2(self, conn: Any) -> None:
            if conn and hasattr(conn.contents, "want"):
                conn.contents.want |= conn.contents.capable & FUSE_CAP_ATOMIC_O_TRUNC
            super().init_fuse_2(conn)
            self._started()

        def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
            return self.operations.rename(
                old.decode(self.encoding, self.errors),
                new.decode(self.encoding, self.errors),
                flags,
            )

        def write(self, path: bytes | None, buf: Any, size: int, offset: int, fip: Any) -> int:
            # mfusepy passes only the handle; the open flags ride along on every write
            # (libfuse copies them from the kernel's request), and O_APPEND must reach the
            # write path: the kernel's offset comes from a size it may have cached.
            data = ctypes.string_at(buf, size)
            fi = fip.contents
            decoded = None if path is None else path.decode(self.encoding, self.errors)
            return self.operations.write(decoded, data, offset, fi.fh, fi.flags)

        def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
            # mfusepy drops the handle; an ftruncate of an unlinked file needs it.
            fh = fip.contents.fh if fip else None
            decoded = None if path is None else path.decode(self.encoding, self.errors)
            return self.operations.truncate(decoded, length, fh)

        def utimens_fuse_2(self, path: bytes | None, buf: Any) -> int:
            times = (one_time(buf.contents.actime), one_time(buf.contents.modtime)) if buf else None
            decoded = None if path is None else path.decode(self.encoding, self.errors)
            return self.operations.utimens(decoded, times)

        def utimens_fuse_3(self, path: bytes | None, buf: Any, fip: Any) -> int:
            return self.utimens_fuse_2(path, buf)

        def _fill(self, path: bytes | None, buf: Any, filler: Any, fuse3: bool) -> int:
            decoded = None if path is None else path.decode(self.encoding, self.errors)
            listing = self.operations.readdir_entries(decoded)
            native = listing.native
            if native is None:
                stats: dict[int, Any] = {}
                native = []
                for name, mode in listing.names:
                    st = stats.get(mode)
                    if st is None:
                        raw = mfusepy.c_stat()
                        raw.st_mode = mode  # only the file-type bits reach the kernel
                        st = stats[mode] = ctypes.pointer(raw)
                    native.append((name.encode(self.encoding, self.errors), st))
                listing.native = native
            fill = self._raw_filler(filler)
            counter = self.operations.options.callback_counter
            start = time.perf_counter_ns()
            dirbuf = ctypes.c_void_p(buf)
            if fuse3:
                for name_b, st in native:
                    if fill(dirbuf, name_b, st, _ZERO_OFF, 0):
                        break
            else:
                for name_b, st in native:
                    if fill(dirbuf, name_b, st, _ZERO_OFF):
                        break
            if counter is not None:
                # Part of the readdir callback: libfuse's filler, one ctypes call a name.
                counter["readdir_entries.fill.ns"] += time.perf_counter_ns() - start
            return 0

        def _raw_filler(self, filler: Any) -> Any:
            """libfuse's filler without per-argument conversion: every argument is passed
            as a ready ctypes object of the right width (buf and stat as pointers, off as
            int64), which makes a call ~40% cheaper than through mfusepy's prototype."""
            addr = ctypes.cast(filler, ctypes.c_void_p).value
            fill = self._fillers.get(addr)
            if fill is None:
                if addr is None:  # libfuse always passes one
                    raise OSError(errno.EIO, "libfuse passed no directory filler")
                fill = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
                # None: no conversion at all (ctypes takes it; typeshed allows only a
                # sequence of types).
                fill.argtypes = None  # type: ignore[assignment]
                self._fillers[addr] = fill
            return fill

        def readdir_fuse_3(
            self, path: bytes | None, buf: Any, filler: Any, offset: int, fip: Any, flags: int
        ) -> int:
            return self._fill(path, buf, filler, True)

        def readdir_fuse_2(
            self, path: bytes | None, buf: Any, filler: Any, offset: int, fip: Any
        ) -> int:
            return self._fill(path, buf, filler, False)

        def opendir(self, path: bytes, fip: Any) -> int:
            opendir = self.operations.opendir
            if opendir is None:  # not so: mfusepy registers this only when the ops have one
                return -errno.ENOSYS
            fi = fip.contents
            fi.fh = opendir(path.decode(self.encoding, self.errors))
            if self._cache_readdir and hasattr(fi, "cache_readdir"):
                fi.cache_readdir = 1
                fi.keep_cache = 1
            return 0

    return MemfsFUSE


def _preflight(mountpoint: str) -> None:
    if not os.path.exists("/dev/fuse"):
        raise MountError(
            "/dev/fuse is missing: load the module with 'modprobe fuse' "
            "(in a container, start it with --device /dev/fuse)"
        )
    try:
        st = os.stat(mountpoint)
    except FileNotFoundError:
        raise MountError(
            f"mountpoint {mountpoint} does not exist: create it with 'mkdir -p {mountpoint}'"
        ) from None
    except OSError as e:
        if e.errno == errno.ENOTCONN:
            raise MountError(
                f"{mountpoint} is a dead FUSE mount: clear it with 'fusermount3 -uz {mountpoint}'"
            ) from None
        raise MountError(f"cannot use mountpoint {mountpoint}: {e.strerror}") from None
    if not stat_mod.S_ISDIR(st.st_mode):
        raise MountError(f"mountpoint {mountpoint} is not a directory: choose a directory")
    if os.path.ismount(mountpoint):
        raise MountError(
            f"{mountpoint} is already a mount point: "
            f"unmount it first ({command('umount', mountpoint)})"
        )
    try:
        entries = os.listdir(mountpoint)
    except OSError as e:
        raise MountError(f"cannot list mountpoint {mountpoint}: {e.strerror}") from None
    if entries:
        # libfuse 3 would mount over it and hide the files; refuse instead.
        raise MountError(
            f"mountpoint {mountpoint} is not empty ({len(entries)} "
            f"{'entry' if len(entries) == 1 else 'entries'}): use an empty directory"
        )


def _make_invalidator(mfusepy: ModuleType, fuse_ptr: int) -> Callable[[str], None] | None:
    lib = mfusepy._libfuse
    if int(mfusepy.fuse_version_major) < 3 or not fuse_ptr:
        return None
    try:
        fn = lib.fuse_invalidate_path
    except AttributeError:
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    fn.restype = ctypes.c_int

    def invalidate(path: str) -> None:
        # -ENOENT only means the kernel holds nothing for this path: nothing to do.
        fn(fuse_ptr, path.encode("utf-8", "surrogateescape"))

    return invalidate


def _wait_mounted(mountpoint: str, ready: Callable[[], None], stop: threading.Event) -> None:
    parent_dev = os.stat(os.path.dirname(mountpoint.rstrip("/")) or "/").st_dev
    deadline = time.monotonic() + READY_DEADLINE_S
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            if os.stat(mountpoint).st_dev != parent_dev:
                ready()
                return
        except OSError:
            pass
        stop.wait(0.01)
    if not stop.is_set():
        log.warning("memfs: %s did not show up as mounted within %ss", mountpoint, READY_DEADLINE_S)


def serve(
    store: Store,
    mountpoint: str,
    *,
    foreground: bool = True,
    debug: bool = False,
    options: MountOptions | None = None,
    ready: Callable[[], None] | None = None,
    on_health: Callable[[Health], None] | None = None,
) -> Health:
    """Mount ``store`` at ``mountpoint`` and serve until unmounted or SIGTERM/SIGINT/SIGHUP.

    First saves whatever a daemon of this store that died had acknowledged (its
    journal). Buffered writes are committed before this returns; the returned health
    names every file that could not be (kept in the journal for the next mount).
    ``ready`` is called (from a helper thread) once the mount answers; ``on_health``
    whenever the set of unsaved files or the count of unexpected errors changes.
    Raises MountError with a one-line, actionable message when the mount cannot be made.
    """
    options = options or MountOptions()
    mountpoint = os.path.abspath(mountpoint)
    _preflight(mountpoint)
    mfusepy, fuse_class = _load()
    # A subtree's mount journals and settles in its own paths (memfs.store.subtree).
    view = store if isinstance(store, SubtreeStore) else None
    if options.journal_dir is None:
        key = store.url if view is None else view.journal_key
        options = dataclasses.replace(options, journal_dir=str(state.mark_journal(key)))
    major = int(mfusepy.fuse_version_major)
    attr_timeout, entry_timeout = options.attr_timeout, options.entry_timeout
    if major < 3:
        attr_timeout = min(attr_timeout, LIBFUSE2_TIMEOUT)
        entry_timeout = min(entry_timeout, LIBFUSE2_TIMEOUT)

    if options.cache_readdir is None:
        minor = int(getattr(mfusepy, "fuse_version_minor", 0))
        options = dataclasses.replace(options, cache_readdir=major > 3 or (major, minor) >= (3, 16))

    def caller_pid() -> int:
        return int(mfusepy.fuse_get_context()[2])

    def caller_ids() -> tuple[int, int]:
        uid, gid, _ = mfusepy.fuse_get_context()
        return int(uid), int(gid)

    ops = MemfsOperations(
        store, options, caller_pid=caller_pid, caller_ids=caller_ids, on_health=on_health
    )
    recovered = ops.recover()
    if recovered:
        log.warning(
            "memfs: saved %d file(s) from a daemon that stopped: %s",
            len(recovered),
            ", ".join(recovered[:20]),
        )
    stop_ready = threading.Event()
    threads: list[threading.Thread] = []
    initialised = threading.Event()

    control: list[ControlServer] = []
    # Resolved now: inside init, a realpath of the mountpoint would ask this very mount.
    control_path = state.control_path(mountpoint)

    def on_init(fuse_ptr: int) -> None:
        initialised.set()
        ops.start(_make_invalidator(mfusepy, fuse_ptr))
        try:
            server = ControlServer(
                control_path,
                ops.settle_paths
                if view is None
                else lambda p: ops.settle_paths(view.view_paths(p)),
                ops.show_upto,
                lambda hashes, check: ops.purge(hashes, check=check).fields(),
                ops.quiesce,
            )
        except OSError as exc:
            log.warning("memfs: no control socket (%s); other doors see changes a poll later", exc)
        else:
            server.start()
            control.append(server)
        if ready is not None:
            t = threading.Thread(
                target=_wait_mounted, args=(mountpoint, ready, stop_ready), daemon=True
            )
            t.start()
            threads.append(t)

    kwargs: dict[str, Any] = {
        "foreground": foreground,
        "debug": debug,
        "fsname": "memfs",
        "subtype": "memfs",
        "attr_timeout": attr_timeout,
        "entry_timeout": entry_timeout,
        "negative_timeout": options.negative_timeout,
        # No "kernel_cache": libfuse would then set keep_cache on every open after ours,
        # and an open that must not see pages cached of another revision (see
        # memfs.mount.handles) would. open_file decides keep_cache itself.
        "hard_remove": True,
        "default_permissions": True,
    }
    if major >= 3:
        # Idle workers are kept rather than ended: each one holds a pinned Python thread
        # state and an SQLite connection (see _wrapper). libfuse 2 never ends them.
        kwargs["max_idle_threads"] = 64
    if options.auto_unmount:
        kwargs["auto_unmount"] = True
    if options.allow_other:
        kwargs["allow_other"] = True
    try:
        fuse_class(
            ops, mountpoint, on_init=on_init, cache_readdir=bool(options.cache_readdir), **kwargs
        )
    except RuntimeError as e:
        # libfuse 3 reports "ended by a signal" as a non-zero code too; that is a clean
        # end if the file system had started.
        if not initialised.is_set():
            raise MountError(
                f"libfuse could not mount {mountpoint} (code {e}); run with --debug for details"
            ) from None
    finally:
        stop_ready.set()
        for server in control:
            server.stop()
        health = ops.shutdown()
        for t in threads:
            t.join(timeout=5)
    return health
