"""The file system operations over a Store, in fusepy's API, with no FUSE import here.

:mod:`memfs.mount.fuse` hands an instance of :class:`MemfsOperations` to mfusepy. Method
names are FUSE operation names: an attribute with such a name is registered as a
callback, one set to ``None`` is not (the kernel then gets ENOSYS once and stops asking).
Flush, access and the xattr ops are unregistered, so the warm read path is the kernel's
page cache and one OPEN and RELEASE per open file. ``open`` is registered because an open
file reads the revision it opened, whole, whatever other mounts commit meanwhile, and a
save carries the revision its writer read (:mod:`memfs.mount.handles`,
:mod:`memfs.mount.reads`).

Every operation maps errors to errno in ONE place, :func:`memfs.mount.opkit.errno_of`
(applied by the :func:`~memfs.mount.opkit.op` wrapper); anything unexpected is logged
with its traceback and becomes EIO.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, TypeVar

from memfs import errors
from memfs.mount.buffer import Snapshot, State
from memfs.mount.bursts import Bursts, Writer
from memfs.mount.expiry import Expirer
from memfs.mount.feed import ChangeFollower, OwnChanges, StaleQueue, touched_paths
from memfs.mount.handles import Handles, Opened, Pin
from memfs.mount.health import Health
from memfs.mount.meta import Listing, MetaCache
from memfs.mount.namespace import NamespaceOps
from memfs.mount.opkit import attrs_of, errno_of, op, pending_attrs, rel
from memfs.mount.options import MountOptions
from memfs.mount.purge import Purged
from memfs.mount.readcache import ReadCache
from memfs.mount.reads import Read, ReadRevisions
from memfs.mount.sizes import KernelSizes
from memfs.mount.writes import PendingWrites, fits_gate
from memfs.paths import parent_of
from memfs.store.base import Change, Entry, Store
from memfs.store.ranges import RevisionReader

__all__ = ["MemfsOperations", "MountOptions", "errno_of"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_KINDS = {"dir": stat.S_IFDIR, "symlink": stat.S_IFLNK, "file": stat.S_IFREG}


STATFS_TTL_S = 2.0
# How long an fsync that could not reach the store waits for the follower's look at
# whether the store's storage went away (ChangeFollower.look_at_storage).
STORAGE_LOOK_S = 2.0
LAST_KNOWN = 100_000  # entries kept to answer getattr while the store is away


class MemfsOperations(NamespaceOps):
    """FUSE operations over ``store``. ``caller_pid`` returns the requesting process id."""

    use_ns = True
    # libfuse 2 only: pass UTIME_OMIT through instead of dropping partial time updates.
    flag_utime_omit_ok = 1

    # Unregistered on purpose (see the module docstring).
    flush: Any = None
    # Registered only with cache_readdir (in __init__).
    opendir: Callable[[str], int] | None = None
    releasedir = None
    access = None
    getxattr = None
    setxattr = None
    listxattr = None
    removexattr = None
    mknod = None
    fsyncdir = None

    def __init__(
        self,
        store: Store,
        options: MountOptions | None = None,
        *,
        caller_pid: Callable[[], int] = os.getpid,
        caller_ids: Callable[[], tuple[int, int]] | None = None,
        on_health: Callable[[Health], None] | None = None,
    ) -> None:
        self.store = store
        self.options = options or MountOptions()
        self._caller_pid = caller_pid
        self._uid = os.getuid()
        self._gid = os.getgid()
        self._caller_ids = caller_ids or (lambda: (self._uid, self._gid))
        self._counter = self.options.callback_counter
        self._own = OwnChanges(store)
        self._meta = MetaCache()
        self._sizes = KernelSizes()
        self._last_known: dict[str, Entry] = {}
        self._statfs: tuple[float, dict[str, int]] | None = None
        journal = self.options.journal_dir
        self._bursts = Bursts()
        self.writes = PendingWrites(
            store,
            lambda author, fn, paths: self._tracked(author, fn, paths),
            act_for=self._bursts.act,
            journal_dir=None if journal is None else Path(journal),
            recovery_dir=None if journal is None else Path(journal) / "recovered",
            quiet_period=self.options.commit_quiet_period,
            max_pending_bytes=self.options.max_pending_bytes,
            on_health=on_health,
            on_stale=self._stale,
            on_saved=self._saved,
            on_committed=self._committed,
        )
        # One lock for the tree and its pending writes: a namespace operation and the
        # commits it needs happen as one step.
        self._mutex = self.writes.lock
        self._cache = ReadCache()
        self._handles = Handles()
        self._reads = ReadRevisions()
        self._follower: ChangeFollower | None = None
        self._stale_queue: StaleQueue | None = None
        self._expirer: Expirer | None = None
        self._invalidate: Callable[[str], None] | None = None
        self._known_dirs: set[str] = {""}
        self._dirs_lock = threading.Lock()
        if self.options.commit_on_close:
            self.flush = self._flush
        if self.options.cache_readdir:
            self.opendir = self._opendir

    # --- lifecycle (called by memfs.mount.fuse, not by the kernel) ---------------------
    def recover(self) -> list[str]:
        """Save what a daemon that died had acknowledged (before serving)."""
        return self.writes.recover()

    def start(self, invalidate: Callable[[str], None] | None) -> None:
        """Start the committer and, if the kernel can be told, the change follower."""
        self._invalidate = invalidate
        if invalidate is not None:
            self._stale_queue = StaleQueue(invalidate)
            self._stale_queue.start()
        self.writes.start()
        if invalidate is not None:
            self.store.defer_maintenance()  # the follower calls maintain() from now on
            self._follower = ChangeFollower(
                self.store,
                self._own,
                self._foreign_changes,
                self.options.poll_interval,
                on_store=self.writes.store_reachable,
                on_lost=self._store_lost,
            )
            self._follower.start()
        if self.options.expire_unused_for_ns is not None:
            self._expirer = Expirer(
                self.store,
                self.options.expire_unused_for_ns,
                pending=lambda p: self.writes.get(p) is not None,
                on_error=self.writes.count_error,
            )
            self._expirer.start()

    def quiesce(self) -> None:
        """Stop telling the kernel of changes, for good (idempotent): the mount is about
        to stop. libfuse frees the paths those calls look up before it calls the
        teardown (destroy, then shutdown), so a follower telling the kernel of another
        mount's change meanwhile read freed memory and the daemon died with its
        journal (seen as a segfault at unmount while four appenders' queues landed);
        ``memfs umount`` asks for this first (memfs.mount.control)."""
        self._invalidate = None
        if self._follower is not None:
            self._follower.stop()
        # Before the last commits: the kernel is going away, and telling it anything while
        # libfuse tears the session down can block until the session is gone.
        if self._stale_queue is not None:
            self._stale_queue.stop()

    def shutdown(self) -> Health:
        """Commit every buffer and stop the background threads (idempotent); the health
        it returns names every file that could not be saved."""
        if self._expirer is not None:
            self._expirer.stop()
        self.quiesce()
        return self.writes.close()

    # --- what other doors on this machine ask (memfs.mount.control) --------------------
    def settle_paths(self, paths: list[str]) -> None:
        """Commit what is pending at, below or above (a file where a directory of the
        path would be) each store path, before another door reads or replaces them. A
        refused commit keeps its data, as every failed commit does."""
        for p in paths:
            parts = p.split("/") if p else []
            try:
                for i in range(1, len(parts)):
                    self._commit("/".join(parts[:i]))
                self._commit_under(p)
            except Exception as exc:
                log.warning("memfs: could not commit %s for another door: %s", p or "/", exc)

    def purge(self, hashes: Collection[str], *, check: bool = False) -> Purged:
        """What ``memfs redact`` asks (PendingWrites.purge); the content this mount
        keeps in memory of the redacted revisions goes too."""
        if not check:
            self._cache.clear()
        return self.writes.purge(hashes, check=check)

    def show_upto(self, seq: int, timeout: float) -> bool:
        """Follow the feed up to ``seq`` and invalidate what it changed, within ``timeout``."""
        follower = self._follower
        return True if follower is None else follower.catch_up(seq, timeout)

    def destroy(self, path: str) -> None:
        self.shutdown()

    # --- helpers ------------------------------------------------------------------------
    def _author(self) -> Writer:
        """Who makes the calling request: user and program, and the burst it is in."""
        uid, _ = self._caller_ids()
        return self._bursts.writer(self._caller_pid(), uid)

    def _tracked(
        self,
        author: str,
        fn: Callable[[], T],
        paths: Iterable[str],
        subtrees: Iterable[str] = (),
        made_dirs: Iterable[str] = (),
        same_names: Iterable[str] = (),
    ) -> T:
        paths, subtrees = list(paths), list(subtrees)
        names = {d: set[str]() for d in made_dirs} | self._meta.names_of(same_names)
        self._forget_known(paths, subtrees)
        with self._meta.changing(
            paths,
            subtrees,
            touched=self.store.touched,
            settled=self.store.settled,
            names=names,
        ):
            return self._own.run(author, fn)

    def _store_lost(self, problem: str) -> None:
        """The store's file or tree went away under the mount: no more changes, and what
        the open handle still holds is saved (memfs.mount.writes.PendingWrites.lose)."""
        where = self.writes.recovery_dir
        self.writes.lose(problem, lambda: self.store.rescue(where) if where else None)

    def _stale(self, path: str) -> None:
        """What this mount's kernel holds of ``path`` is not what was committed: forget
        it here and have the kernel forget it (see StaleQueue)."""
        self._cache.forget(path)
        self._sizes.forget((path,))
        self._meta.forget((path,), ())
        self._meta.bump()
        queue = self._stale_queue
        if queue is not None:
            queue.add(path)

    def _forget_known(self, paths: Iterable[str], subtrees: Iterable[str]) -> None:
        for p in paths:
            self._last_known.pop(p, None)
        tops = [t for t in subtrees if t]
        if "" in subtrees:
            self._last_known.clear()
        elif tops:
            # Other FUSE threads add entries meanwhile: scan a copy (list() of a dict is
            # one step under the GIL), never the dict itself. fsstress -p 8 met that as
            # "dictionary changed size during iteration", answered EIO.
            below = tuple(t + "/" for t in tops)
            for p in [k for k in list(self._last_known) if k.startswith(below)]:
                self._last_known.pop(p, None)

    def _mutate(
        self,
        who: Writer,
        fn: Callable[[], T],
        paths: Iterable[str],
        subtrees: Iterable[str] = (),
        made_dirs: Iterable[str] = (),
        same_names: Iterable[str] = (),
    ) -> T:
        """Run one namespace change of the store, in its writer's operation."""
        with self._mutex:
            self.writes.check_usable()
            try:
                with self.store.acting(self._bursts.act(who)):
                    return self._tracked(who.actor, fn, paths, subtrees, made_dirs, same_names)
            finally:
                self.writes.forget_usage()  # a namespace change: count the tree afresh

    def _is_dir(self, p: str) -> bool:
        try:
            return self._stat(p).is_dir
        except (OSError, errors.StoreError):
            return False

    def _owner(self) -> tuple[int | None, int | None]:
        """The caller's ids to record on a new entry, or None where they are the mounting
        user's (entries that record no owner show the mounting user)."""
        uid, gid = self._caller_ids()
        return (None if uid == self._uid else uid), (None if gid == self._gid else gid)

    def _foreign_changes(self, changes: Iterable[Change]) -> None:
        # An ordered set: a burst from another writer (a git checkout) touches many paths.
        paths: dict[str, None] = {}
        subtrees: list[str] = []
        for change in changes:
            paths.update(dict.fromkeys(touched_paths(change)))
            if change.kind in ("rename", "rmdir", "delete"):
                # Cached children of a moved or removed directory are stale too.
                for gone in (change.path, change.old_path):
                    if gone is not None and (change.kind == "rmdir" or self._was_dir(gone)):
                        subtrees.append(gone)
                        self._cache.forget_under(gone)
                        paths.update(dict.fromkeys(self._known_below(gone)))
        self._forget_known(paths, subtrees)
        self.writes.forget_usage()
        # Pending writes to these files were built on what the change replaced: land
        # them on it now, so what this mount shows is the result, not the older base.
        self.writes.commit_soon(list(paths))
        self._sizes.forget(paths)
        self._sizes.forget_under(subtrees)
        self._meta.bump()
        self._meta.forget(paths, subtrees)
        self._meta.bump()
        for p in paths:
            self._cache.forget(p)
        invalidate = self._invalidate
        if invalidate is not None:
            for p in paths:
                invalidate("/" + p)

    def _was_dir(self, p: str) -> bool:
        with self._dirs_lock:
            return p in self._known_dirs

    def _known_below(self, prefix: str) -> list[str]:
        below = prefix + "/"
        with self._dirs_lock:
            return [d for d in self._known_dirs if d.startswith(below)]

    # --- reading ------------------------------------------------------------------------
    @op
    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, int]:
        orphan = self._handles.orphaned(fh) if path is None else None
        if orphan is not None:
            return pending_attrs(orphan, self._uid, self._gid)
        p = rel(path)
        # No lock: a dict lookup is atomic, and a commit racing with this bumps the
        # generation, so the entry read below is fresh either way. (Taking the mutex
        # here made every lookup wait for the committer's store writes.)
        buf = self.writes.get(p)
        if buf is not None and buf.created:
            return pending_attrs(buf, self._uid, self._gid)
        entry = self._stat(p)
        if entry.kind == "dir":
            with self._dirs_lock:
                self._known_dirs.add(p)
            touched = self.writes.dir_mtime(p)
            if touched is not None and touched > entry.mtime_ns:
                # A file created or removed here is not in the store yet.
                entry = dataclasses.replace(entry, mtime_ns=touched, ctime_ns=touched)
        if buf is None and entry.is_file:
            size = self._handles.shown(p, entry.rev)
            if size is not None:
                entry = dataclasses.replace(entry, size=size)
            else:
                self._sizes.told(p, entry.rev)
        else:
            self._sizes.forget((p,))
        return attrs_of(entry, buf, self._uid, self._gid)

    @op
    def readdir(self, path: str, fh: int) -> list[tuple[str, int, int]]:
        return [(name, mode, 0) for name, mode in self._listing(path).names]

    @op
    def readdir_entries(self, path: str) -> Listing:
        """The directory's entries, cached until something in the directory changes."""
        return self._listing(path)

    def _stat(self, p: str) -> Entry:
        gen = self._meta.gen  # read before the query: a change during it voids the result
        hit = self._meta.entry(p)
        if hit is not None:
            return hit
        try:
            # Its directory's names say so; not while the store is away, whose answer
            # refuses a new file there and then (what it holds stays readable above).
            if self._meta.absent(p) and not self.writes.store_away:
                raise errors.NotFound(f"no entry at '{p}'", path=p)
            entry = self.store.stat(p)
        except errors.StoreUnavailable:
            # The store is away (a server restarting): what was last read of this path
            # keeps cached files readable until it is back; changes then catch up.
            known = self._last_known.get(p)
            if known is None:
                raise
            return known
        except errors.NotFound:
            # A store that went away answers nothing for sure: not "no such file".
            self.writes.check_usable()
            if not fits_gate(p):
                # Looked up by a name longer than any the store holds: say so, as a
                # local disk does for a name past NAME_MAX.
                raise OSError(errno.ENAMETOOLONG, "name or path too long") from None
            self._learn_names(parent_of(p))
            raise
        except errors.PathError:
            # A name the store cannot hold does not exist (tools probe such names).
            raise OSError(errno.ENOENT, "no such entry") from None
        self._meta.put_entries(gen, (entry,))
        if len(self._last_known) > LAST_KNOWN:
            self._last_known.clear()
        self._last_known[p] = entry
        return entry

    def _learn_names(self, directory: str) -> None:
        """After a lookup of a name ``directory`` lacks: read its names whole, so the
        next such lookup (a temporary file's, a path checked before it is made) needs
        no query, and its entries, so lookups of the names it has need none either."""
        entry = self._meta.entry(directory)
        if entry is None or not entry.is_dir or self._meta.knows_names(directory):
            return
        # The lookup's answer stands whatever the listing meets; only the shortcut waits.
        with contextlib.suppress(errors.StoreError):
            self._listing("/" + directory)

    def _listing(self, path: str) -> Listing:
        p = rel(path)
        gen = self._meta.gen
        hit = self._meta.listing(p)
        if hit is not None:
            return hit
        # Uncommitted files first, the store second: a file committed in between is
        # then in the store's answer. (The other order loses it from this listing.)
        pending = self.writes.created_in(p)
        names = [(".", stat.S_IFDIR), ("..", stat.S_IFDIR)]
        seen: set[str] = set()
        entries = self.store.listdir(p)
        for entry in entries:
            names.append((entry.name, _KINDS[entry.kind]))
            seen.add(entry.name)
        # The lookups that follow a listing (ls -l, find, grep) are then free.
        self._meta.put_entries(gen, entries)
        names.extend((name, stat.S_IFREG) for name in pending if name not in seen)
        listing = Listing(names)
        self._meta.put_listing(gen, p, listing)
        self._meta.put_names(gen, p, [*pending, *seen])
        return listing

    @op
    def _opendir(self, path: str) -> int:
        # Registered only so the FUSE layer can set cache_readdir on the directory handle.
        return 0

    @op
    def readlink(self, path: str) -> str:
        entry = self.store.stat(rel(path))
        if entry.kind != "symlink" or entry.target is None:
            raise OSError(errno.EINVAL, "not a symlink")
        return entry.target

    def open(self, path: str, flags: int) -> int:
        # Registered so the kernel sends OPEN; memfs.mount.fuse calls open_file itself.
        return self.open_file(path, flags).fh

    @op
    def open_file(self, path: str, flags: int) -> Opened:
        """OPEN: a handle reading the revision there now (what this mount holds pending
        for the file, if anything), recorded as the opening process's read of it when
        it opens to read. O_TRUNC arrives here (FUSE_CAP_ATOMIC_O_TRUNC) and starts a
        save of the whole file, whose base is what the process read before."""
        p = rel(path)
        who = self._author()
        if flags & os.O_TRUNC:
            if self.writes.get(p) is None:
                self._cache.forget(p)
            self.writes.truncate(p, 0, who, read_rev=lambda: self._reads.read_of(who, p))
        reading = flags & os.O_ACCMODE != os.O_WRONLY and not flags & os.O_TRUNC
        # What it reads must be a stored revision for the read to be a save's base.
        known = not reading or self.writes.settle_for_reading(p, who)
        buf = self.writes.get(p)
        if reading and buf is not None and buf.state is State.COMMITTING:
            # What it holds is landing (outside the lock): the revision it lands as is
            # what an opening to read has read, not the base it was built on. An open
            # only to write need not wait for it (appenders taking turns would wait for
            # one landing each): it pins the base, and the landing moves the pin on
            # (_committed), as it does for the handles open before it.
            buf = self.writes.steady(p)
        if buf is not None:
            rev = 0 if buf.created else buf.base_rev
        else:
            entry = self._stat(p)
            if entry.is_dir:
                raise OSError(errno.EISDIR, "is a directory")
            rev = entry.rev
        if reading and known:
            self._reads.read(who, p, rev)
        # Read only, a stored revision whose size the kernel may not hold: past its page
        # cache (memfs.mount.sizes). (Not for writers: their pages are the buffer's.)
        direct = flags & os.O_ACCMODE == os.O_RDONLY and buf is None
        return self._handles.open(
            p,
            rev,
            direct=direct and not self._sizes.holds(p, rev),
            size=None if buf is not None else entry.size,
        )

    @op
    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        orphan = self._handles.orphaned(fh) if path is None else None
        if orphan is not None:
            return bytes(orphan.data[offset : offset + size])
        p = rel(path)
        pin = self._handles.pin(fh)
        buf = self.writes.get(p)
        if buf is not None and (pin is None or pin.rev == 0 or pin.rev >= buf.base_rev):
            return bytes(buf.data[offset : offset + size])
        # The entry is cached (the kernel looked the file up to read it), and with it
        # the revision whose content may be kept from a read or a save through here.
        known = self._meta.entry(p)
        if pin is not None and pin.rev and (known is None or known.rev != pin.rev):
            pinned = self._pinned(p, pin, offset, size)
            if pinned is not None:
                return pinned
        data = None if known is None else self._cache.get(p, known.rev)
        if data is None or known is None:
            entry = self._stat(p) if known is None else known
            if not self._cache.keeps(entry.size):
                # Too large to keep whole: read by range (memfs.store.ranges), the
                # file's bytes checked once while it is open, not per request.
                try:
                    reader = self._ranged(p, entry.rev)
                except errors.NotFound:
                    # The entry known here is older than the file, and its revision
                    # no longer kept: read what is there.
                    entry = self.store.stat(p)
                    reader = self._ranged(p, entry.rev)
                self._handles.served(p, pin, entry.rev)
                return reader.read(offset, size)
            data, known = self.store.read(p)
            if pin is not None and pin.rev and known.rev != pin.rev:
                # Moved on since the entry known here, which the handle pinned: it reads
                # what it opened (its reader's save merges against that), not a mix.
                pinned = self._pinned(p, pin, offset, size, moved=True)
                if pinned is not None:
                    return pinned
            # Kept for the reads that follow (a file's next requests, a handler's edit
            # that renames over the file it just read; see _keep_open_data).
            self._cache.put(p, known.rev, data)
        self._handles.served(p, pin, known.rev)
        return data[offset : offset + size]

    def _ranged(self, p: str, rev: int) -> RevisionReader:
        """The range reader of revision ``rev`` of ``p``, opened (and its bytes checked)
        on the first read of it while the file is open here."""
        return self._cache.open_reader(p, rev, lambda: self.store.open_revision(p, rev))

    def _pinned(
        self, p: str, pin: Pin, offset: int, size: int, *, moved: bool = False
    ) -> bytes | None:
        """What an open handle reads of the revision it pins, when the file moved on
        since it was opened (another mount, host or door committed); None when that is
        what is there now, or when the revision is no longer kept (then the handle reads
        what is there). ``moved``: the store was just seen past the pin."""
        cached = self._cache.get_revision(p, pin.rev)
        if cached is not None:
            self._handles.served(p, pin, pin.rev)
            return cached[offset : offset + size]
        reader = self._cache.reader(p, pin.rev)
        if reader is None:
            if not moved and self._stat(p).rev == pin.rev:
                return None  # what is there: the ordinary path reads it
            try:
                opened = self.store.open_revision(p, pin.rev)
            except errors.NotFound:
                return None
            if self._cache.keeps(opened.size):
                try:
                    data = opened.read(0, opened.size)
                finally:
                    opened.close()
                self._cache.put_revision(p, pin.rev, data)
                self._handles.served(p, pin, pin.rev)
                return data[offset : offset + size]
            reader = self._cache.keep_reader(p, opened)
        self._handles.served(p, pin, pin.rev)
        return reader.read(offset, size)

    @op
    def statfs(self, path: str) -> dict[str, int]:
        # Tools call statfs on every run (find, grep, df); counting the whole tree each
        # time costs more than the rest of a warm run, and nobody needs it exact.
        now = time.monotonic()
        cached = self._statfs
        if cached is not None and now - cached[0] < STATFS_TTL_S:
            return cached[1]
        usage = self.store.usage()
        bsize = 4096
        used = (usage.bytes + bsize - 1) // bsize
        # The store has no fixed capacity; report plenty so tools do not refuse to write.
        total = max(used * 2, 1 << 24)
        files = max((usage.files + usage.dirs) * 2, 1 << 20)
        result = {
            "f_bsize": bsize,
            "f_frsize": bsize,
            "f_blocks": total,
            "f_bfree": total - used,
            "f_bavail": total - used,
            "f_files": files,
            "f_ffree": files - usage.files - usage.dirs,
            "f_favail": files - usage.files - usage.dirs,
            "f_namemax": 255,
        }
        self._statfs = (now, result)
        return result

    # --- file content -----------------------------------------------------------------
    @op
    def create(self, path: str, mode: int, flags: int = 0) -> int:
        p = rel(path)
        who = self._author()
        uid, gid = self._owner()
        with self._mutex:
            self.writes.check_usable()
            # The kernel has just looked the parent up, so it is cached: no store query.
            parent = self._stat(parent_of(p))
            if not parent.is_dir:
                raise OSError(errno.ENOTDIR, "parent is not a directory")
            with self._meta.changing((p,)):
                self.writes.create(p, mode & 0o7777, who, uid, gid)
        # The only requests with a real file handle in no-open mode: see handles.py.
        return self._handles.new(p)

    @op
    def release(self, path: str | None, fh: int) -> int:
        closed = self._handles.release(fh)
        if closed is not None:
            self._cache.close_readers(closed)
            if self._handles.owed(closed):
                self._stale(closed)  # the size shown was its readers' (Handles.shown)
        return 0

    @op
    def write(self, path: str | None, data: bytes, offset: int, fh: int, flags: int = 0) -> int:
        orphan = self._handles.orphaned(fh) if path is None else None
        if orphan is not None:
            orphan.write(data, offset)
            return len(data)
        p = rel(path)
        if self.writes.get(p) is None:
            self._cache.forget(p)
        append = bool(flags & os.O_APPEND)
        return self.writes.write(p, data, offset, self._author(), append=append)

    @op
    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        orphan = self._handles.orphaned(fh) if path is None else None
        if orphan is not None:
            orphan.resize(length)
            return 0
        p = rel(path)
        if self.writes.get(p) is None:
            self._cache.forget(p)
        who = self._author()
        self.writes.truncate(p, length, who, read_rev=lambda: self._read_rev(who, p, fh, length))
        return 0

    def _read_rev(self, who: Writer, p: str, fh: int | None, length: int) -> Read | None:
        """The revision a truncation to nothing (a save of the whole file beginning) was
        read from: what its handle opened (an O_TRUNC open truncates in open_file, so a
        handle here was opened without it); else, for truncate(2) by name, what its
        process last read of the file (memfs.mount.reads); None if unknown."""
        if length != 0:
            return None
        pin = self._handles.pin(fh)
        if pin is not None and pin.rev:
            return Read(pin.rev)
        return self._reads.read_of(who, p)

    @op
    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        # Durable: a large file's commit may follow it (PendingWrites.sync).
        return self._settled(path, self.writes.sync)

    @op
    def _flush(self, path: str | None, fh: int) -> int:
        # --commit-on-close promises the store has the file when close returns.
        return self._settled(path, self.writes.commit)

    def _settled(self, path: str | None, settle: Callable[[str], None]) -> int:
        if path is None:
            return 0  # an unlinked file has nowhere to be committed to
        p = rel(path)
        try:
            settle(p)
        except errors.StoreUnavailable:
            # Perhaps the store file was deleted under the mount a moment ago, which a
            # thread new to the store cannot open. If so the follower saves what is
            # pending (this file too) into the store it holds open and rescues that:
            # then this call has nothing left to do, and answers as the data deserves.
            follower = self._follower
            if follower is None or not follower.look_at_storage(STORAGE_LOOK_S):
                raise
            settle(p)
        return 0

    def _commit(self, p: str) -> None:
        self.writes.commit(p)

    def _commit_under(self, p: str) -> None:
        self.writes.commit_under(p)

    def _committed(self, snap: Snapshot, entry: Entry, seen: bool) -> None:
        """A buffer's snapshot landed as ``entry``: its changes were in place, so the
        handles that read its base read the result; and its writer has read what it
        saved when that is what landed (``seen``). A merge with another writer's change
        is not what it read: it holds what it wrote, and its next save merges against
        that (memfs.mount.reads)."""
        self._handles.repin(snap.path, snap.base_rev, entry.rev, as_written=seen)
        if snap.writer is None:
            return
        if seen:
            self._reads.read(snap.writer, snap.path, entry.rev)
        elif snap.landing_base > 0:
            self._reads.saw(snap.writer, snap.path, snap.landing_base, snap.data)

    def _saved(self, path: str, entry: Entry, data: bytes | bytearray) -> None:
        """A commit stored ``data`` as it was written (the kernel's size is its size):
        later reads need not fetch it."""
        self._cache.put(path, entry.rev, data)
        self._sizes.told(path, entry.rev)
