"""Namespace and attribute operations: mkdir, rmdir, unlink, symlink, rename, link,
chmod, chown, utimens. A mixin of :class:`memfs.mount.ops.MemfsOperations`; every
change to the tree first commits the pending writes it involves (the write path,
:mod:`memfs.mount.writes`), so the store decides with everything in view and sees one
consistent sequence.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from memfs.mount.bursts import Writer
from memfs.mount.handles import Handles, Orphan
from memfs.mount.meta import MetaCache
from memfs.mount.opkit import Pending, op, rel
from memfs.mount.readcache import ReadCache
from memfs.mount.reads import ReadRevisions
from memfs.mount.sizes import KernelSizes
from memfs.mount.writes import PendingWrites, check_new_name
from memfs.store.base import Entry, Store
from memfs.store.rebase import Landing, reconcile

T = TypeVar("T")

log = logging.getLogger(__name__)

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4


class NamespaceOps:
    """Needs the state :class:`~memfs.mount.ops.MemfsOperations` sets up."""

    store: Store
    _mutex: Any
    writes: PendingWrites
    _cache: ReadCache
    _handles: Handles
    _reads: ReadRevisions
    _known_dirs: set[str]
    _dirs_lock: Any
    _meta: MetaCache
    _sizes: KernelSizes
    _counter: Any

    if TYPE_CHECKING:
        # Provided by MemfsOperations; declared for the type checker only, so no stub
        # that could shadow a real operation exists at run time.
        def _author(self) -> Writer: ...

        def _mutate(
            self,
            who: Writer,
            fn: Callable[[], T],
            paths: Iterable[str],
            subtrees: Iterable[str] = (),
            made_dirs: Iterable[str] = (),
            same_names: Iterable[str] = (),
        ) -> T: ...

        def _is_dir(self, p: str) -> bool: ...

        def _stale(self, path: str) -> None: ...

        def _stat(self, p: str) -> Entry: ...

        def _was_dir(self, p: str) -> bool: ...

        def _owner(self) -> tuple[int | None, int | None]: ...

        def _commit(self, p: str) -> None: ...

        def _commit_under(self, p: str) -> None: ...

        def getattr(self, path: str | None, fh: int | None = None) -> dict[str, int]: ...

    # --- namespace ------------------------------------------------------------------------
    @op
    def mkdir(self, path: str, mode: int) -> int:
        p = rel(path)
        check_new_name(p)
        who = self._author()
        author = who.actor

        def make() -> Entry:
            return self.store.mkdir(p, author=author, mode=mode & 0o7777)

        self._mutate(who, make, (p,), made_dirs=(p,))
        self._own_entry(p, who)
        return 0

    def _own_entry(self, p: str, who: Writer) -> None:
        """Record another user's ownership of an entry they just made (--allow-other)."""
        uid, gid = self._owner()
        if uid is not None or gid is not None:
            author = who.actor
            self._mutate(
                who, lambda: self.store.set_attrs(p, author=author, uid=uid, gid=gid), (p,)
            )

    @op
    def rmdir(self, path: str) -> int:
        p = rel(path)
        who = self._author()
        author = who.actor
        with self._mutex:
            # Before the lookup: a store whose storage went away answers no entry at all.
            self.writes.check_usable()
            entry = self.store.stat(p)
            if not entry.is_dir:
                raise OSError(errno.ENOTDIR, "not a directory")
            # Files pending below count: the store then answers ENOTEMPTY for them.
            self._commit_under(p)
            self._mutate(who, lambda: self.store.delete(p, author=author), (p,), (p,))
            with self._dirs_lock:
                self._known_dirs.discard(p)
        return 0

    @op
    def unlink(self, path: str) -> int:
        p = rel(path)
        who = self._author()
        author = who.actor
        with self._mutex:
            self.writes.check_usable()  # as rmdir; and open handles keep their file
            buf = self.writes.steady(p)
            self._keep_open_data(p, buf)
            self._cache.forget(p)
            if self.writes.is_new(p):
                # Created and removed before it was ever committed (vim's 4913 probe,
                # lock files): the store never needs to hear of it.
                with self._meta.changing((p,)):
                    self.writes.drop(p)
                return 0
            if self._stat(p).is_dir:
                raise OSError(errno.EISDIR, "is a directory")
            self._mutate(who, lambda: self.store.delete(p, author=author), (p,))
            # Only once the store has let it go: a refused unlink keeps the writes.
            self.writes.drop(p)
        return 0

    def _keep_open_data(self, p: str, buf: Pending | None) -> None:
        """Give handles still open on the file at ``p`` a private copy of its data
        before the name goes away (unlinked, or replaced by a rename)."""
        fhs = self._handles.open_on(p)
        if not fhs:
            return
        if buf is not None:
            orphan = Orphan(
                path=p,
                data=bytearray(buf.data),
                mode=buf.mode,
                mtime_ns=buf.mtime_ns,
                uid=buf.uid,
                gid=buf.gid,
            )
        else:
            # A handler's edit holds its file open while it renames the new content over
            # it, having just read it here: both are cached, and no store query is made.
            entry = self._stat(p)
            if not entry.is_file:
                for fh in fhs:
                    self._handles.release(fh)  # what they named is gone already
                return
            cached = self._cache.get(p, entry.rev)
            data, entry = (cached, entry) if cached is not None else self.store.read(p)
            orphan = Orphan(
                path=p,
                data=bytearray(data),
                mode=entry.mode,
                mtime_ns=entry.mtime_ns,
                uid=entry.uid,
                gid=entry.gid,
            )
        for fh in fhs:
            self._handles.orphan(fh, orphan)

    @op
    def symlink(self, path: str, target: str) -> int:
        p = rel(path)
        check_new_name(p)
        who = self._author()
        author = who.actor
        self._mutate(who, lambda: self.store.symlink(p, target, author=author), (p,))
        self._own_entry(p, who)
        return 0

    @op
    def rename(self, old: str, new: str, flags: int = 0) -> int:
        if flags & ~RENAME_NOREPLACE:
            # RENAME_EXCHANGE (and WHITEOUT) cannot be done atomically by the store;
            # doing a plain rename instead would destroy the destination.
            raise OSError(errno.EINVAL, "only RENAME_NOREPLACE is supported")
        src, dst = rel(old), rel(new)
        check_new_name(dst)
        who = self._author()
        author = who.actor
        with self._mutex:
            # Pending writes on both sides go first: the destination's so its history
            # keeps them and so a directory with pending files counts as not empty, the
            # source's so they move with it (unless the rename is a save: _save_as).
            if flags & RENAME_NOREPLACE and self.writes.get(dst) is not None:
                raise OSError(errno.EEXIST, "destination exists")
            overwrite = not flags & RENAME_NOREPLACE
            self._commit_under(dst)
            if self._save_as(who, src, dst, not overwrite):
                return 0
            self._commit_under(src)
            # A moved directory takes its cached descendants' paths with it.
            # Every directory the kernel can name was looked up here (known_dirs), and a
            # file created here and renamed (the editor's save) is a file: neither needs
            # a store query. The query stays for anything else.
            is_dir = self._was_dir(src) or (not self._handles.open_on(src) and self._is_dir(src))
            if overwrite and not is_dir and self._handles.open_on(dst):
                # Descriptors open on the file being replaced keep reading its data.
                self._keep_open_data(dst, None)
            subtrees = (src, dst) if is_dir else ()
            known = None if is_dir else self._meta.entry(src)
            content = None if known is None else self._cache.get(src, known.rev)
            # A save through a temporary file that reached the store first: it replaces
            # what is there, and what changed since its writer read the file comes back.
            read_rev = None if is_dir or not overwrite else self._reads.base(who, dst)
            merged: Landing | None = None

            def move() -> None:
                nonlocal merged
                self.store.rename(src, dst, author=author, overwrite=overwrite)
                if read_rev is not None:
                    merged = reconcile(self.store, dst, base_rev=read_rev, author=author)

            self._mutate(who, move, (src, dst), subtrees)
            # The kernel moved its own attributes with the name; what it holds of dst is
            # not known to be the revision the move made (memfs.mount.sizes).
            self._sizes.forget((src, dst))
            self._sizes.forget_under(subtrees)
            landed = self.store.settled().get(dst)
            if merged is not None:
                self._merged_rename(dst, merged)
            elif content is not None and landed is not None:
                # The content a save just wrote, renamed into place (see readcache).
                self._cache.put(dst, landed.rev, content)
            self._handles.moved(src, dst, subtree=is_dir)
            if not is_dir:
                self._handles.follow(dst)
            with self._dirs_lock:
                moved = [d for d in self._known_dirs if d == src or d.startswith(src + "/")]
                for d in moved:
                    self._known_dirs.discard(d)
                    self._known_dirs.add(dst + d[len(src) :])
        return 0

    def _merged_rename(self, dst: str, landing: Landing) -> None:
        """Say what bringing back another writer's change after a rename did."""
        self._stale(dst)
        if landing.copy is not None:
            self._stale(landing.copy)
            self.writes.conflicted(dst, landing.copy)
        log.info("memfs: the save of %s through a rename: %s", dst, landing.outcome)

    def _save_as(self, who: Writer, src: str, dst: str, noreplace: bool) -> bool:
        """A save through a temporary file (written, renamed over the file without an
        fsync: sed -i, rsync, the memory tool's handler on a mount) whose temporary
        file never reached the store, done as one write of its content at ``dst``
        (handles still open on it follow it there, as in any rename); False where a
        rename would leave more than that write does (another mode or owner at
        ``dst``, something else there, or nothing known of it), and nothing is done."""
        # Another writer's file: its making and its move are two records, two authors;
        # another user's new file: its owner is a change of its own.
        mode = self.writes.save_as_mode(src, who.actor)
        if mode is None or src == dst:
            return False
        there = self._meta.entry(dst)
        if there is not None:
            if not there.is_file or there.mode != mode or (there.uid, there.gid) != (None, None):
                return False
            dst_rev = there.rev
        elif self._meta.absent(dst):
            dst_rev = 0
        else:
            return False
        if not noreplace and self._handles.open_on(dst):
            self._keep_open_data(dst, None)  # as a rename: see rename
        # The lock held since the checks (the write path's) keeps the buffer as it was.
        read_rev = None if noreplace else self._reads.base(who, dst)
        self._mutate(
            who,
            lambda: self.writes.save_as(src, dst, dst_rev, noreplace=noreplace, read_rev=read_rev),
            (src, dst),
        )
        self._handles.moved(src, dst, subtree=False)
        self._handles.follow(dst)
        return True

    @op
    def link(self, target: str, source: str) -> int:
        # Hard links cannot be coherent in a path-keyed store; git falls back to rename.
        raise OSError(errno.EPERM, "hard links are not supported")

    # --- attributes --------------------------------------------------------------------
    def _set_attrs(self, path: str, *, commit_first: bool = True, **attrs: int | None) -> None:
        p = rel(path)
        who = self._author()
        author = who.actor
        with self._mutex:
            if commit_first or self.writes.is_new(p):
                # Buffered content first: a file created here must exist in the store,
                # and a later commit must not move the mtime set here.
                self._commit(p)

            def change() -> Entry:
                return self.store.set_attrs(
                    p,
                    author=author,
                    mode=attrs.get("mode"),
                    uid=attrs.get("uid"),
                    gid=attrs.get("gid"),
                    mtime_ns=attrs.get("mtime_ns"),
                )

            self._mutate(who, change, (p,), same_names=(p,))

    @op
    def chmod(self, path: str, mode: int) -> int:
        p = rel(path)
        # Created here and not committed yet (the temp-file-then-rename pattern chmods
        # right after O_EXCL): the mode goes into the one commit to come, instead of an
        # empty revision plus an attribute change now.
        with self._mutex, self._meta.changing((p,), names=self._meta.names_of((p,))):
            if self.writes.chmod(p, mode & 0o7777):
                return 0
        # The content does not depend on the mode: a pending write need not commit now.
        self._set_attrs(path, commit_first=False, mode=mode & 0o7777)
        return 0

    @op
    def chown(self, path: str, uid: int, gid: int) -> int:
        new_uid, new_gid = (None if uid < 0 else uid), (None if gid < 0 else gid)
        now = self.getattr(path)
        if new_uid in (None, now["st_uid"]) and new_gid in (None, now["st_gid"]):
            return 0  # tar and cp -p chown to the owner the file has: nothing to change
        p = rel(path)
        # Created here and not committed yet: the owner goes into its commit, as a mode.
        with self._mutex, self._meta.changing((p,), names=self._meta.names_of((p,))):
            if self.writes.chown(p, new_uid, new_gid):
                return 0
        self._set_attrs(path, uid=new_uid, gid=new_gid)
        return 0

    @op
    def utimens(self, path: str, times: tuple[int | None, int | None] | None = None) -> int:
        """``times`` is (atime_ns, mtime_ns); None in a slot means UTIME_OMIT."""
        mtime = time.time_ns() if times is None else times[1]
        if mtime is None:
            # Only the access time was to change, and it is not stored.
            self.getattr(path)
            return 0
        p = rel(path)
        with self._mutex:
            # A pending write (tar and rsync set the time right after writing the file):
            # the time goes into its commit, one change, instead of a commit now and
            # another. A file, so no directory's files to settle first.
            with self._meta.changing((p,), names=self._meta.names_of((p,))):
                if self.writes.set_mtime(p, mtime):
                    return 0
            # A file created in this directory and not committed yet would touch the
            # directory's mtime when it commits, after the time set here: rsync -a sets
            # a directory's mtime right after writing its files. Commit them first.
            self.writes.settle(p)
        self._set_attrs(path, mtime_ns=mtime)
        return 0
