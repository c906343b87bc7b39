"""The mount's write path: every byte from the first write call to its revision, in one
owner. The FUSE operations only translate calls to :class:`PendingWrites`.

A file's pending content is a :class:`memfs.mount.buffer.Buffer`, whose states and moves
are drawn in that module; this one owns the buffers, their journal and their committer.
Beside it, each in its own module and none importing this one: the caps
(:mod:`~memfs.mount.caps`), the health (:mod:`~memfs.mount.health`), the copies kept
outside the store (:mod:`~memfs.mount.recovery`), journal replay
(:mod:`~memfs.mount.replay`), the redaction purge (:mod:`~memfs.mount.purge`) and the
mount's lock (:mod:`~memfs.mount.mountlock`).

The promises, and where each is kept:

1. **Acknowledged is durable.** :meth:`PendingWrites.create`, :meth:`write`,
   :meth:`truncate` and :meth:`chmod` append their change to the daemon's journal
   (:mod:`memfs.mount.journal`) before they return; a daemon that dies leaves the
   journal, and :meth:`recover` (run by the next mount before it serves) puts every
   pending file into the store, attributed to its writer. Everything else the mount
   acknowledges (mkdir, rename, unlink, symlink, attributes) is its own store
   transaction, done before the call returns.
2. **Refused when asked, never later.** The file-size cap is checked by the call that
   would pass it (EFBIG, a huge ``truncate`` too), and so are the store's tree caps
   (EDQUOT: ``max_tree_bytes`` by the write or truncate that would grow the tree past
   it, ``max_files`` by the create), counting what is pending here on top of the
   store's usage; a name the gate refuses is refused by
   the call that makes it (EINVAL, ENAMETOOLONG for a limit); a full journal disk and
   the bound on buffered bytes answer ENOSPC. Directory renames and removals commit
   what is pending below them first, so the store decides with everything in view
   (ENOTEMPTY, ENAMETOOLONG for a descendant carried past a limit).
3. **Nothing is dropped.** A commit that fails after the fact keeps the buffer (and its
   journal records), writes a copy under ``recovery_dir``, logs it, and makes the next
   write, truncate or fsync of that file fail with the error; the committer retries it.
   :meth:`close` names every file it could not save, and their journal stays for the
   next mount. The committer thread logs and counts any unexpected error and goes on.
   A commit the store refuses for a tree cap (another process filled the store after
   the write was acknowledged) takes the same path, and its log line says how to make
   room.
   Buffered bytes are bounded (:attr:`max_pending_bytes`).
4. **One revision per save, per writer.** A write or truncate by another program than
   the one whose changes a buffer holds commits that buffer first; one program's burst
   (an editor's save) stays one revision, committed on fsync (a large file's is made
   durable in the journal and lands just after: :meth:`PendingWrites.sync`), before
   any namespace operation that involves the file, or ``quiet_period`` after its last
   write.
5. **Every change knows its base.** A buffer commits against the revision it was loaded
   from (compare-and-set), through :func:`memfs.store.rebase.land`: when another mount,
   host or door committed in between, appends are rebased onto the newer content, a
   whole-file save is merged with what changed since its writer read the file (a file
   created here: since it was empty), and lines both changed are a conflict, kept as a
   conflict copy beside the file and named in ``memfs status``. O_APPEND writes go at
   the end of what this mount holds, whatever offset the kernel computed from a size it
   cached before another writer's append; a change seen on the feed for a file with
   pending writes commits (rebases) it at once.
6. **No file's change waits on another file's commit.** A commit started by the
   committer, an fsync or a write that meets another writer's buffer freezes a
   snapshot of the buffer under the lock and lands it without the lock (its store
   round trips, its retries), then takes the lock back to see whether the buffer
   changed meanwhile (:class:`memfs.mount.buffer.Buffer`'s generation): if so the
   changes stay pending on the revision that landed, else the buffer goes. A change
   to the bytes being landed, or a second writer's on top of the first's unlanded
   bytes, waits for that file's landing: alone, or with the files that fell due with it
   (the committer lands those in one store transaction, each its own savepoint, up to
   :data:`BATCH_FILES` and :data:`BATCH_BYTES`). Inside a namespace operation (which
   holds the lock for its whole step) a commit runs under the lock, as that step needs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import itertools
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from memfs.errors import NotFound, PathError, PathTooLong
from memfs.mount import journal as jr
from memfs.mount.buffer import PAGE, Buffer, Snapshot, State, Tally, Turn
from memfs.mount.bursts import Writer
from memfs.mount.caps import Caps
from memfs.mount.health import Health, HealthBoard
from memfs.mount.mountlock import MountLock
from memfs.mount.opkit import errno_of
from memfs.mount.purge import Purged, purge
from memfs.mount.reads import Read
from memfs.mount.recovery import Saved, forget_copy, keep_copy
from memfs.mount.replay import adopt_orphans
from memfs.paths import MAX_SEGMENT_BYTES, fits, parent_of, parse_rel
from memfs.store.base import Act, Entry, Step, Store
from memfs.store.rebase import Landing, Shape, land

__all__ = [
    "Buffer",
    "Health",
    "PendingWrites",
    "Purged",
    "Saved",
    "Snapshot",
    "check_new_name",
    "fits_gate",
    "same_writer",
    "save_orphans",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class CommitHook(Protocol):
    """Runs a store mutation of ``paths`` on the mount's behalf, so the mount can tell
    its own changes from other writers' on the change feed."""

    def __call__(self, author: str, mutation: Callable[[], _T], paths: Sequence[str], /) -> _T: ...


# The revision a whole save's writer read: known, unknown (None), or to be asked.
ReadRev = int | Read | None | Callable[[], int | Read | None]

DEFAULT_MAX_PENDING_BYTES = 256 << 20
# A journal this much larger than what is pending is rewritten from the buffers.
COMPACT_AT_BYTES = 64 << 20
RETRY_S = 1.0
# The committer lands the buffers due together in one store transaction, up to this many
# files and bytes: a small file's own transaction (its BEGIN, its COMMIT, its operation
# row) cost the daemon more than the file's rows, on the CPU the writer needs (writing
# 1,000 small files took 1.8x the bare passthrough; with no commit during the loop, 1.0x).
BATCH_FILES = 64
BATCH_BYTES = 4 << 20
# After a pass that landed something, the next one comes no sooner than this (unless a
# commit is asked for: commit_soon), so files written one after another fall due
# together and land in one transaction instead of one each.
BATCH_PAUSE = 0.01
TOUCHED_DIRS = 4096
# An fsync of a file with at least this much pending makes it durable in the journal
# and lets its commit follow in the background (PendingWrites.sync): hashing and
# storing 32 MiB took 114 ms, where the disk's own fsync of them takes 20-25 ms.
SYNC_IN_JOURNAL_FROM = 4 << 20
# A write's lowest offset when it goes at the end (O_APPEND): wherever that is then.
END = -1


def save_orphans(store: Store, journal_dir: Path) -> Saved:
    """Do what a mount's start does with stopped daemons' journals of ``store``: commit
    what they hold pending (a failure keeps it in a journal, as a mount's does), then
    shred and delete them, so none keeps records of finished writes."""
    writes = PendingWrites(
        store,
        lambda author, fn, path: fn(),
        journal_dir=journal_dir,
        recovery_dir=journal_dir / "recovered",
    )
    found = writes.recover(shred=True)
    kept = writes.journal_path
    health = writes.close()
    return Saved(tuple(found), health.unsaved, kept if health.unsaved else "", writes.replayed)


def check_new_name(path: str) -> None:
    """Refuse a name the model could not address, as the store would, with its errno."""
    try:
        parse_rel(path)
    except PathTooLong as e:
        raise OSError(errno.ENAMETOOLONG, str(e)) from None
    except PathError as e:
        log.warning("memfs: refused to create %r: %s", path, e)
        raise OSError(errno.EINVAL, str(e)) from None


def fits_gate(path: str) -> bool:
    """Whether ``path``'s names and length are within the gate's limits (the rest of
    the rule aside): a lookup past them answers ENAMETOOLONG rather than ENOENT."""
    raw = path.encode("utf-8", "surrogateescape")
    return fits(path.count("/") + 1, len(raw)) and all(
        len(part) <= MAX_SEGMENT_BYTES for part in raw.split(b"/")
    )


def same_writer(a: Writer | None, b: Writer) -> bool:
    """Whether two writers are one process: its id and start time decide, since a
    process that execs (``bash`` becoming ``cat`` after ``cat > f``) changes its name."""
    return a is not None and (a.pid, a.started) == (b.pid, b.started)


class PendingWrites:
    """Buffers keyed by store path, with their journal and their committer.

    ``lock`` is the mount's mutex: every method but :meth:`get`, :meth:`created_in` and
    :meth:`dir_mtime` (lock-free reads) takes it; a commit lets it go while the store
    answers (promise 6).
    """

    def __init__(
        self,
        store: Store,
        run_mutation: CommitHook,
        *,
        journal_dir: Path | None,
        recovery_dir: Path | None = None,
        quiet_period: float = 0.1,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        on_health: Callable[[Health], None] | None = None,
        on_stale: Callable[[str], None] | None = None,
        act_for: Callable[[Writer], Act] | None = None,
        on_saved: Callable[[str, Entry, bytes | bytearray], None] | None = None,
        on_committed: Callable[[Snapshot, Entry, bool], None] | None = None,
    ) -> None:
        self.store = store
        self.lock = MountLock()
        self._run = run_mutation
        self._journal_dir = journal_dir
        self._journal: jr.Journal | None = None
        self.recovery_dir = recovery_dir
        self.quiet_period = quiet_period
        cap = store.max_file_bytes or 0
        self.max_pending_bytes = max(max_pending_bytes, 2 * cap)
        self.sync_in_journal_from = SYNC_IN_JOURNAL_FROM  # see sync
        # Told each path whose content the kernel may hold wrong after a commit here (an
        # append moved to the true end, a rebase, a conflict copy): it invalidates them
        # from a thread that is not a FUSE callback.
        self._on_stale = on_stale or (lambda path: None)
        # Told each commit that stored the buffer's bytes as they were (no rebase).
        self._on_saved = on_saved or (lambda path, entry, data: None)
        # Told each snapshot that landed (whatever the outcome), and whether what landed
        # is what its writer saw (its bytes, as they were).
        self._on_committed = on_committed or (lambda snap, entry, seen: None)
        # The operation a writer's change belongs to (memfs.mount.bursts).
        self._act_for = act_for or (lambda who: Act(who.actor, detail=f"pid {who.pid}"))
        self._board = HealthBoard(str(recovery_dir or ""), on_health)
        self._bufs: dict[str, Buffer] = {}
        # Files whose pending change an fsync made durable in the journal (sync): until
        # they land, a journal that replaces this one is synced before this one goes.
        self._durable: set[str] = set()
        self._tally = Tally()
        self._caps = Caps(store, self._tally)
        self._created: dict[str, dict[str, None]] = {}  # parent -> names not in the store
        self._touched: OrderedDict[str, int] = OrderedDict()  # dir -> mtime of a change
        self._ids = itertools.count(1)
        self.replayed = 0  # stopped daemons' journals adopted and deleted by recover()
        self._wake = threading.Event()
        # When the committer looks at the buffers next (monotonic; inf: not until woken),
        # set under the lock with what it saw. A write due no sooner need not wake it
        # (woken by each of a large file's writes, it recomputed every buffer's due time
        # under the lock the writer needs).
        self._looks_at = 0.0
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    # --- lock-free reads ------------------------------------------------------------------
    def get(self, path: str) -> Buffer | None:
        return self._bufs.get(path)

    def created_in(self, parent: str) -> list[str]:
        """Names of files created in ``parent`` and not committed yet (for listings)."""
        return list(self._created.get(parent, ()))

    def dir_mtime(self, path: str) -> int | None:
        """When a pending create or drop last changed directory ``path`` (the store's
        mtime of the directory moves only when the file is committed)."""
        return self._touched.get(path)

    @property
    def pending_bytes(self) -> int:
        """Bytes held for commit (holes included): bounded by max_pending_bytes."""
        return self._tally.bytes

    @property
    def errors(self) -> int:
        return self._board.errors

    @property
    def health(self) -> Health:
        return self._board.health

    @property
    def journal_path(self) -> str:
        return "" if self._journal is None else str(self._journal.path)

    def check_tally(self) -> None:
        """Raise unless the byte and file counts are the sums over the live buffers."""
        with self.lock:
            self._tally.check(self._bufs.values())

    # --- what namespace operations ask (under the lock) ----------------------------------
    def steady(self, path: str) -> Buffer | None:
        """The buffer of ``path`` once no landing of it is in flight (None: none)."""
        with self.lock:
            while (buf := self._bufs.get(path)) is not None and buf.state is State.COMMITTING:
                self.lock.wait()
            return buf

    def is_new(self, path: str) -> bool:
        """Whether ``path`` is a file created here that the store has not got yet."""
        buf = self.steady(path)
        return buf is not None and buf.created

    def save_as_mode(self, path: str, actor: str) -> int | None:
        """The mode of ``path`` if it is a file ``actor`` created here, as the mounting
        user, never in the store and not failing: one that can be saved under another
        name in one write (:meth:`save_as`); None if not."""
        buf = self.steady(path)
        if buf is None or not buf.created or buf.author != actor or buf.failure is not None:
            return None
        if buf.uid is not None or buf.gid is not None:
            return None  # another user's new file (its owner is a change of its own)
        return buf.mode

    # --- calls from FUSE operations --------------------------------------------------------
    def create(self, path: str, mode: int, who: Writer, uid: int | None, gid: int | None) -> None:
        check_new_name(path)
        author = who.actor
        with self.lock:
            self.check_usable()
            old = self.steady(path)
            if old is not None:
                self._settle(old)
            self._caps.check_files(path)
            buf = Buffer(
                self._tally,
                ident=next(self._ids),
                path=path,
                data=b"",
                author=author,
                base_rev=0,
                mode=mode,
                created=True,
                uid=uid,
                gid=gid,
                writer=who,
                act=self._act_for(who),
            )
            self._log().opened(buf.ident, path, author, 0, mode, jr.CREATED)
            self._add(buf)
            wake = self._needs_look(buf)
        if wake:
            self._wake.set()

    def write(
        self, path: str, data: bytes, offset: int, who: Writer, *, append: bool = False
    ) -> int:
        """Write ``data`` at ``offset``; with ``append`` (the file was opened O_APPEND) at
        the end of the content this mount holds, as a local disk puts it: the kernel's
        offset comes from a size it may have cached before another mount appended."""
        self._caps.check_size(path, offset + len(data))
        with self.lock:
            while True:
                buf = self._writable(path, who, whole=False, low=END if append else offset)
                at = offset
                if append and offset != len(buf.data):
                    at = len(buf.data)
                    self._caps.check_size(path, at + len(data))
                end = at + len(data)
                self._caps.check_tree_bytes(path, end - len(buf.data))
                if self._room_for(buf, end):
                    break
            if at != offset:
                self._on_stale(path)  # the kernel placed these bytes elsewhere
            self._log().wrote(buf.ident, at, data)
            # The kernel splits where its own offset crosses a page, whatever ``at`` is.
            buf.write(at, data, more_may_come=(offset + len(data)) % PAGE == 0)
            self._bound_journal()
            wake = self._needs_look(buf)
        if wake:
            self._wake.set()
        return len(data)

    def truncate(self, path: str, size: int, who: Writer, *, read_rev: ReadRev = None) -> None:
        """Truncate ``path`` to ``size``; to nothing, it starts a save of the whole file,
        and ``read_rev`` is the revision its writer read (memfs.mount.reads), if known:
        asked once no landing of the file is in flight (one of the writer's own, landing
        meanwhile, moves what it read to the revision that landed)."""
        self._caps.check_size(path, size)
        with self.lock:
            self.check_usable()  # before the lookup: a store gone away answers no entry
            if self._bufs.get(path) is None:
                entry = self.store.stat(path)
                if entry.is_file and entry.size == size:
                    return
            while True:
                buf = self._writable(path, who, whole=size == 0, low=size, read_rev=read_rev)
                self._caps.check_tree_bytes(path, size - len(buf.data))
                if self._room_for(buf, size):
                    break
            self._log().truncated(buf.ident, size)
            buf.truncate(size)
            self._bound_journal()
            wake = self._needs_look(buf)
        if wake:
            self._wake.set()

    def chmod(self, path: str, mode: int) -> bool:
        """Set the mode of a file not in the store yet; False if it is in the store."""
        with self.lock:
            self.check_usable()
            buf = self.steady(path)
            if buf is None or not buf.created or buf.state is not State.DIRTY:
                return False
            self._log().moded(buf.ident, mode)
            buf.set_mode(mode)
            return True

    def chown(self, path: str, uid: int | None, gid: int | None) -> bool:
        """Set the owner of a file not in the store yet; False if it is in the store. Not
        journaled, as a new file's owner is not (a recovered file is the mounting
        user's)."""
        with self.lock:
            self.check_usable()
            buf = self.steady(path)
            if buf is None or not buf.created or buf.state is not State.DIRTY:
                return False
            buf.set_owner(uid, gid)
            return True

    def set_mtime(self, path: str, mtime_ns: int) -> bool:
        """Give the pending change of ``path`` the mtime ``mtime_ns``, which its commit
        lands with; False if there is none to take it (nothing pending, or a landing in
        flight whose snapshot has no mtime: the caller sets it in the store)."""
        with self.lock:
            self.check_usable()
            buf = self.steady(path)
            if buf is None or buf.state is not State.DIRTY:
                return False
            self._log().timed(buf.ident, mtime_ns)
            buf.set_mtime(mtime_ns)
            return True

    def drop(self, path: str) -> Buffer | None:
        """Forget the buffer of ``path`` (its file is being unlinked)."""
        with self.lock:
            buf = self.steady(path)
            if buf is None:
                return None
            self._release(buf)
            if buf.created:
                self._touch_dir(path)
            return buf

    def settle_for_reading(self, path: str, who: Writer) -> bool:
        """Make what ``who`` is opening ``path`` to read a stored revision, so the save
        it may build on that read carries the revision it read (memfs.mount.reads):
        another program's pending changes are committed first. ``who``'s own are not
        (its next save takes over the same buffer, which keeps the base it was built
        on, and a landing records what it saved: see ops._committed). False when what
        it reads is no stored revision (another program's changes that could not
        land): its read is not one to record. Without this a reader of another
        program's pending save, or of appends rebased onto a change it never saw,
        recorded the pending buffer's base: its next save then took back what the
        landing had merged in (the write path's state machine lost a door's append so).
        """
        with self.lock:
            buf = self._bufs.get(path)
            if buf is None or buf.state is State.CLEAN:
                return True
            if same_writer(buf.writer, who):
                return True
            if buf.state is State.DIRTY:
                try:
                    self._commit(buf)
                except Exception:  # kept and retried like any failed commit
                    return False
                return buf.state in (State.LANDED, State.CLEAN) or self._bufs.get(path) is None
            return buf.state is not State.FAILED

    def commit(self, path: str) -> None:
        """Commit ``path`` now (fsync, or a namespace operation that involves it); raise
        the store's error if it is refused (the data stays)."""
        with self.lock:
            buf = self._bufs.get(path)
            if buf is not None:
                self._commit(buf)

    def sync(self, path: str) -> None:
        """fsync: make what is pending for ``path`` durable. A small change is committed
        now, as :meth:`commit`. A large one (:attr:`sync_in_journal_from` bytes or more)
        is made durable where it already is, the journal (one fdatasync), and falls due
        at once: the committer lands it in the background, so the fsync costs about what
        the disk's own does rather than the hashing and storing of every byte. Once it
        has landed it is as durable as any commit (the store's ``synchronous`` setting:
        with ``full`` the store has synced it before the journal says it is done).
        Other mounts see it when it lands; a landing that fails is kept, reported and
        retried like any commit, and the next write or fsync of the file answers its
        error."""
        with self.lock:
            buf = self._bufs.get(path)
            if buf is None:
                return
            if (
                self._journal_dir is None
                or buf.state not in (State.DIRTY, State.COMMITTING)
                or len(buf.data) < self.sync_in_journal_from
            ):
                self._commit(buf)
                return
            self.check_usable()
            self._durable.add(path)  # before the sync: a compaction meanwhile syncs too
            buf.hurry(self.quiet_period)
            journal = self._log()
        journal.sync_data()
        self._wake.set()

    def commit_soon(self, paths: list[str]) -> None:
        """Another writer changed these paths (seen on the feed): commit what is pending
        for them now, so it lands on their change and reads here show the result."""
        with self.lock:
            due = [b for b in (self._bufs.get(p) for p in paths) if b is not None and b.dirty]
            for buf in due:
                buf.hurry(self.quiet_period)
        if due:
            self._wake.set()

    def commit_under(self, prefix: str) -> None:
        """Commit ``prefix`` and everything below it (before a directory operation)."""
        below = prefix + "/" if prefix else ""
        with self.lock:
            for path in [p for p in self._bufs if p == prefix or p.startswith(below)]:
                buf = self._bufs.get(path)
                if buf is not None:
                    self._commit(buf)

    def save_as(
        self, src: str, dst: str, dst_rev: int, *, noreplace: bool, read_rev: int | None = None
    ) -> Entry:
        """Commit ``src``, a file created here by the mounting user that never reached
        the store, as the new content of ``dst`` (``dst_rev``: its revision, 0 if there
        is none): its rename over ``dst``, in one write. ``read_rev``: the revision of
        ``dst`` its writer read, if known: the save merges with what changed since
        (memfs.store.rebase). The caller holds the lock since it asked
        :meth:`save_as_mode` (and checked that a rename would leave ``dst`` as the write
        does: a file of the same mode and owner, or nothing), and runs this as the
        rename's mutation; the lock stays held throughout."""
        with self.lock:
            buf = self._bufs[src]
            snap = buf.begin_commit()
            try:
                if noreplace or read_rev is None:
                    # A daemon killed after the write and before the buffer is done must
                    # not replay the buffer at src: the landing names where it went.
                    sha = hashlib.sha256(snap.data).hexdigest()
                    self._log().landing(
                        snap.ident, dst, dst_rev, bytes.fromhex(sha), len(snap.data)
                    )
                    entry = self.store.write(
                        dst,
                        snap.data,
                        author=snap.author,
                        expected_rev=0 if noreplace else None,
                        mode=snap.mode,
                        replace=True,
                        mtime_ns=snap.mtime_ns,  # rsync sets the temp file's time first
                        sha256=sha,
                    )
                    landing = Landing(entry, "written")
                else:
                    landing = land(
                        self.store,
                        dst,
                        snap.data,
                        base_rev=read_rev,
                        shape=Shape.WHOLE,
                        author=snap.author,
                        mode=snap.mode,
                        side=snap.program,
                        replace=True,
                        before_write=self._journal_landing(snap.ident, len(snap.data)),
                        mtime_ns=snap.mtime_ns,
                    )
            except BaseException:
                buf.unfreeze()
                raise
            entry = landing.entry
            self._board.landed(dst, snap.author, landing, self._on_stale)
            if landing.outcome == "written":
                self._on_saved(dst, entry, snap.data)
            if snap.writer is not None:
                self._on_committed(
                    dataclasses.replace(snap, path=dst, base_rev=dst_rev),
                    entry,
                    landing.outcome == "written",
                )
            gone = buf.landed(snap, entry, ident=next(self._ids))
            assert gone, "the lock was held: nothing can have changed"
            self._forget(buf)
            self._board.publish()
            return entry

    def settle(self, directory: str) -> None:
        """Before ``directory``'s mtime is set: commit the files created in it and not in
        the store yet (their commit adds an entry there, which moves the mtime) and forget
        the mtime pending changes gave it, so the time set is the time shown."""
        with self.lock:
            self._touched.pop(directory, None)
            for name in list(self._created.get(directory, ())):
                buf = self._bufs.get(f"{directory}/{name}" if directory else name)
                if buf is not None and buf.created:
                    self._commit(buf)

    def conflicted(self, path: str, copy: str) -> None:
        """A change to ``path`` met another writer's and one of them is kept at ``copy``:
        named in the health (``memfs status``)."""
        self._board.conflicted(path, copy)
        self._board.publish()

    # --- the buffers -------------------------------------------------------------------
    def _log(self) -> jr.Journal:
        if self._journal is None:
            if self._journal_dir is None:
                raise RuntimeError("the write path was not started")
            self._journal = jr.Journal(self._journal_dir)
        return self._journal

    def _journal_landing(self, ident: int, upto: int) -> Callable[[str, int, str], None]:
        """``land``'s ``before_write`` for the first ``upto`` bytes of journal buffer
        ``ident`` (writes that come meanwhile go past them). It runs inside the
        store transaction of a batch (_land_group), so it must not take the mount's lock:
        a namespace operation holds that lock while it waits for the store's write lock,
        and the two waited for each other until the store's busy timeout (an untar's
        utimens failed so). The journal it appends to stays while a landing is in
        flight (compaction waits for landings), and serializes its own appends."""

        def note(target: str, expected: int, sha256: str) -> None:
            digest = bytes.fromhex(sha256)
            journal = self._journal
            if journal is None:  # (not started: a landing before any write was journaled)
                with self.lock:
                    journal = self._log()
            journal.landing(ident, target, expected, digest, upto)

        return note

    def _journal_whole(self, journal: jr.Journal, buf: Buffer) -> None:
        """``buf`` as one buffer of ``journal``: its base, its shape, all its bytes."""
        flags = jr.WHOLE | jr.SEALED | (jr.CREATED if buf.created else 0)
        authors = [turn.author for turn in buf.turns] + [buf.author]
        journal.opened(buf.ident, buf.path, authors[0], buf.landing_base, buf.mode, flags)
        journal.shaped(buf.ident, buf.shape, buf.base_size)
        journal.wrote(buf.ident, 0, buf.data)
        for turn, after in zip(buf.turns, authors[1:], strict=True):
            journal.turned(buf.ident, turn.end, after)
        if buf.set_mtime_ns is not None:
            journal.timed(buf.ident, buf.set_mtime_ns)
        journal.sealed(buf.ident)

    def _writable(
        self, path: str, who: Writer, *, whole: bool, low: int, read_rev: ReadRev = None
    ) -> Buffer:
        """The buffer that takes ``who``'s next change to ``path``, whose lowest offset
        is ``low`` (END: at the end) (``read_rev``: see :class:`Buffer`, for a new buffer
        of a whole save). May let the lock go (a landing to wait for, another writer's
        buffer to commit): the caller checks what it decided from anew."""
        while True:
            self.check_usable()
            buf = self._bufs.get(path)
            if buf is None:
                break
            if buf.state is State.FAILED:
                failure = buf.failure or OSError(errno.EIO, "failed")
                raise OSError(errno_of(failure), f"{path} could not be saved: {failure}")
            at = len(buf.data) if low == END else low
            mine = same_writer(buf.writer, who)
            if not mine and buf.can_queue(at):
                # Another program appending: what the first one wrote is its own
                # revision, queued to land first (Buffer.queue_turn), not waited for.
                self._queue_turn(buf, who)
                return buf
            if buf.state is State.COMMITTING:
                if (mine or not buf.changed_since_snapshot()) and buf.takes_while_committing(at):
                    buf.take_over(who, self._act_for(who))
                    return buf
                self.lock.wait()  # for this file's landing, not the store's lock
                continue
            if (buf.dirty and not mine) or at < buf.queued_end:
                # Another program's change (what the first one wrote is its own
                # revision), or a change to bytes a queued turn holds: land them first.
                self._commit(buf)
                continue
            buf.take_over(who, self._act_for(who))
            return buf
        author = who.actor
        given = read_rev() if callable(read_rev) else read_rev
        read = Read(given) if isinstance(given, int) else given
        if whole:
            entry = self.store.stat(path)
            if not entry.is_file:
                self.store.read(path)  # raises the precise error (IsADirectory, NotFound)
            content = b""
        else:
            # One read: the content and the revision it is the base of, consistently.
            content, entry = self.store.read(path)
        buf = Buffer(
            self._tally,
            ident=next(self._ids),
            path=path,
            data=content,
            author=author,
            base_rev=entry.rev,
            mode=entry.mode,
            created=False,
            base_size=entry.size,
            whole=whole,
            low=0 if whole else -1,
            writer=who,
            act=self._act_for(who),
            dirty=False,
            read_rev=read.rev if whole and read and (read.rev != entry.rev or read.view) else None,
            read_view=read.view if read else None,
        )
        # A whole save's journal record needs no base content, only the revision it
        # lands against.
        self._log().opened(
            buf.ident, path, author, buf.landing_base, entry.mode, jr.WHOLE if whole else 0
        )
        self._add(buf)
        return buf

    def _queue_turn(self, buf: Buffer, who: Writer) -> None:
        """``who`` appends after what ``buf`` holds; the writer before it has a turn of
        its own, journaled, and the committer lands it at once."""
        buf.queue_turn(who, self._act_for(who))
        # (With no bytes since the last turn the record only hands over: see replay.)
        self._log().turned(buf.ident, len(buf.data), buf.author)
        self._wake.set()

    def _room_for(self, buf: Buffer, size: int) -> bool:
        """Whether ``buf`` may grow to ``size`` within max_pending_bytes. If not, commit
        the oldest other buffer and say False (the lock may have been let go: the
        caller decides again); ENOSPC when nothing is left to commit."""
        growth = size - len(buf.data)
        if growth <= 0 or self._tally.bytes + growth <= self.max_pending_bytes:
            return True
        oldest = self._tally.oldest_dirty(but=buf)
        if oldest is None:
            if any(b.state is State.COMMITTING for b in self._bufs.values()):
                self.lock.wait()  # a landing in flight frees its bytes
                return False
            raise OSError(errno.ENOSPC, "too much data is waiting to be saved")
        with contextlib.suppress(Exception):  # kept, reported and retried like any failure
            self._commit(oldest)
        return False

    def _add(self, buf: Buffer) -> None:
        self._bufs[buf.path] = buf
        if buf.created:
            parent, _, name = buf.path.rpartition("/")
            self._created.setdefault(parent, {})[name] = None
            self._touch_dir(buf.path)

    def _unlist(self, path: str) -> None:
        """``path`` is no longer a file only this mount knows of."""
        parent, _, name = path.rpartition("/")
        names = self._created.get(parent)
        if names is not None:
            names.pop(name, None)
            if not names:
                del self._created[parent]

    def _release(self, buf: Buffer) -> None:
        """Let ``buf`` go without a commit (CLEAN, or its changes are not wanted)."""
        if self._bufs.get(buf.path) is buf:
            buf.discard()
            self._forget(buf)

    def _forget(self, buf: Buffer) -> None:
        """``buf`` is LANDED or DROPPED: out of the owner and done in the journal."""
        if self._bufs.get(buf.path) is not buf:
            return
        del self._bufs[buf.path]
        self._board.unsaved.discard(buf.path)
        self._durable.discard(buf.path)
        if buf.created:
            self._unlist(buf.path)
        journal = self._log()
        journal.done(buf.ident)
        if not self._bufs:
            journal.reset()
        else:
            self._bound_journal()

    def _touch_dir(self, path: str) -> None:
        parent = parent_of(path)
        self._touched[parent] = time.time_ns()
        self._touched.move_to_end(parent)
        while len(self._touched) > TOUCHED_DIRS:
            self._touched.popitem(last=False)

    # --- commits -----------------------------------------------------------------------
    def _settle(self, buf: Buffer) -> None:
        """Commit ``buf`` if it holds changes, else let it go."""
        if buf.dirty:
            self._commit(buf)
        else:
            self._release(buf)

    def _commit(self, buf: Buffer) -> None:
        """Land what ``buf`` holds (the caller holds the lock; the landing runs without
        it at the outermost hold); raise the store's error if it is refused (the data
        stays, FAILED, retried by the committer)."""
        while buf.state is State.COMMITTING:
            self.lock.wait()  # another thread's landing of it
        if buf.state in (State.LANDED, State.DROPPED):
            return
        if buf.state is State.CLEAN:
            self._release(buf)
            return
        failure = self._commit_all([buf], lambda snaps: [self._try_land(snaps[0])])[0]
        if failure is not None:
            raise failure

    def _commit_group(self, bufs: list[Buffer]) -> None:
        """Land several due buffers in one store transaction (the caller holds the lock;
        the landing runs without it). Each lands or fails on its own, as if alone: a
        refused one leaves nothing and the others go on (Store.batch); a transaction that
        does not commit fails them all, and each is kept and retried as any failure."""
        self._commit_all(bufs, self._land_group)

    def _commit_all(
        self,
        bufs: list[Buffer],
        land_all: Callable[[list[Snapshot]], list[Landing | BaseException]],
    ) -> list[BaseException | None]:
        """Freeze ``bufs`` (under the lock), land them without it at the outermost hold
        (``land_all``: one landing or error per snapshot), then settle each by its result;
        return each one's failure (None: landed)."""
        snaps = [buf.begin_commit() for buf in bufs]
        with self.lock.outside():
            results = land_all(snaps)
            contents = [
                self._content_since(*each) for each in zip(bufs, snaps, results, strict=True)
            ]
        failures: list[BaseException | None] = []
        try:
            for buf, snap, result, content in zip(bufs, snaps, results, contents, strict=True):
                try:
                    if isinstance(result, Landing):
                        self._landed(buf, snap, result, content)
                        failures.append(None)
                    else:
                        self._failed(buf, snap, result)
                        failures.append(result)
                except Exception as e:  # one file's settling must not strand the others
                    log.exception("memfs: settling the commit of %s failed", snap.path)
                    self._board.count_error()
                    failures.append(e)
        finally:
            self.lock.notify()
        return failures

    def _content_since(
        self, buf: Buffer, snap: Snapshot, result: Landing | BaseException
    ) -> bytes | None:
        """What landed, read without the lock, when writes arrived meanwhile on top of
        bytes the store did not keep as they were (they follow what it did keep); None
        when not needed, or when the read fails (:meth:`_landed` reads it then)."""
        if not isinstance(result, Landing) or result.outcome == "written":
            return None
        if result.content is not None:
            return result.content
        with contextlib.suppress(Exception):
            if buf.changed_since_snapshot():
                return self.store.read_revision(snap.path, result.entry.rev)
        return None

    def _try_land(self, snap: Snapshot) -> Landing | BaseException:
        try:
            return self._land(snap)
        except BaseException as e:  # settled as the buffer's failure, then raised
            return e

    def _land_group(self, snaps: list[Snapshot]) -> list[Landing | BaseException]:
        results: list[Landing | BaseException] = []

        def landings() -> None:
            with self.store.batch():
                for snap in snaps:
                    try:
                        with self.store.acting(snap.act):
                            results.append(self._landing(snap))
                    except Exception as e:
                        results.append(e)
                        continue
                    self._own(snap, lambda mutation: mutation())

        try:
            self._run(snaps[0].author, landings, [snap.path for snap in snaps])
        except BaseException as e:
            return [e] * len(snaps)  # the transaction did not commit: nothing landed
        return results

    def _land(self, snap: Snapshot) -> Landing:
        """Commit ``snap`` against its base; a moved base is rebased (memfs.store.rebase).
        Runs without the lock when the commit can."""
        with self.store.acting(snap.act):
            landing = self._run(snap.author, lambda: self._landing(snap), (snap.path,))
        self._own(snap, lambda mutation: self._run(snap.author, mutation, (snap.path,)))
        return landing

    def _landing(self, snap: Snapshot) -> Landing:
        """The store calls that land ``snap`` (in the caller's transaction, if any)."""
        if snap.turns and snap.shape is Shape.APPEND:
            return self._landing_turns(snap)
        return land(
            self.store,
            snap.path,
            snap.data,
            base_rev=snap.landing_base,
            shape=snap.shape,
            base_size=snap.base_size,
            author=snap.author,
            mode=snap.mode if snap.created else None,
            side=snap.program,
            before_write=self._journal_landing(snap.ident, len(snap.data)),
            mtime_ns=snap.mtime_ns,
            written_ns=snap.written_ns,
            base=snap.read_view,
        )

    def _landing_turns(self, snap: Snapshot) -> Landing:
        """``snap``'s queued turns, each its own revision by its own writer, then the
        last writer's bytes, in one transaction (a savepoint of the caller's). Only
        appends queue, so only the first can meet another writer's change (and is
        rebased onto it); the rest follow what it landed, as one series of revisions."""
        last = Turn(len(snap.data), snap.author, snap.act, snap.writer)
        turns: list[Turn] = []
        for turn in (*snap.turns, last):
            if turn.end > (turns[-1].end if turns else snap.base_size):
                turns.append(turn)  # (not a writer that handed over before it wrote)
        if not turns:
            turns.append(last)
        first = turns[0]
        # One content grown by each turn's bytes, and its hash from the one before:
        # building and hashing each whole content again cost a queue of turns the
        # square of the file's length.
        content = bytearray(snap.data[: first.end])
        hashed = hashlib.sha256(content)
        alone = first is last
        with self.store.batch():
            with self.store.acting(first.act):
                landing = land(
                    self.store, snap.path, content, base_rev=snap.landing_base,
                    shape=Shape.APPEND, base_size=snap.base_size, author=first.author,
                    before_write=self._journal_landing(snap.ident, first.end),
                    mtime_ns=snap.mtime_ns if alone else None,
                    written_ns=snap.written_ns if alone else None,
                    sha256=hashed.hexdigest(),
                )  # fmt: skip
            if len(turns) == 1:
                return landing
            if landing.outcome != "written":
                made = landing.content
                if made is None:
                    made = self.store.read_revision(snap.path, landing.entry.rev)
                content = bytearray(made)
                hashed = hashlib.sha256(content)
            steps = []
            start = first.end
            for turn in turns[1:]:
                added = snap.data[start : turn.end]
                content += added
                hashed.update(added)
                steps.append(Step(len(content), hashed.hexdigest(), turn.author, turn.act))
                start = turn.end
            # The rest land as made, on what the first landed: the last with its time.
            mtime_ns = snap.written_ns if snap.mtime_ns is None else snap.mtime_ns
            self._journal_landing(snap.ident, last.end)(
                snap.path, landing.entry.rev, steps[-1].sha256
            )
            entry = self.store.write_series(
                snap.path, content, steps, expected_rev=landing.entry.rev, mtime_ns=mtime_ns
            )
        if landing.outcome == "written":
            return Landing(entry, "written", None, None, None)
        return Landing(entry, "rebased", None, landing.over, bytes(content))

    def _own(self, snap: Snapshot, run: Callable[[Callable[[], Entry]], Entry]) -> None:
        """Record the owner of a file another user made through --allow-other: the entry
        is theirs. Its content is saved already; a failure here must not make it look
        unsaved, so it is logged and counted."""
        if not snap.created or (snap.uid is None and snap.gid is None):
            return
        try:
            with self.store.acting(snap.act):
                run(
                    lambda: self.store.set_attrs(
                        snap.path, author=snap.author, uid=snap.uid, gid=snap.gid
                    )
                )
        except Exception:
            self._board.count_error()
            log.exception("memfs: could not record the owner of %s", snap.path)

    def _landed(self, buf: Buffer, snap: Snapshot, landing: Landing, content: bytes | None) -> None:
        entry = landing.entry
        try:
            self._board.landed(snap.path, snap.author, landing, self._on_stale)
            self._on_committed(snap, entry, landing.outcome == "written")
            if landing.outcome == "written":
                self._on_saved(snap.path, entry, snap.data)
            self._caps.counted(snap)  # the store counts this file now
        except Exception:
            # What the mount shows of the landing (pins, caches, counts) is behind; the
            # buffer's own move must still happen: left COMMITTING, every writer of the
            # file would wait for it for ever.
            self._board.count_error()
            log.exception("memfs: after %s landed, updating the mount's view failed", snap.path)
        was_failing = buf.failure is not None
        built_on = entry  # what the writes made meanwhile stay pending on
        if content is None and landing.outcome != "written" and buf.changed_since_snapshot():
            # Writes came after the check outside the lock: one read, under it.
            content = landing.content
            if content is None:
                try:
                    content, built_on = self._landed_content(snap.path, entry)
                except Exception:
                    # The writes since are appends past the snapshot: left built on the
                    # snapshot's own base, they land after whatever is there by then
                    # (an append's rebase), and the snapshot is not landed twice.
                    self._board.count_error()
                    log.exception("memfs: could not read what landed at %s", snap.path)
                    built_on = dataclasses.replace(entry, rev=snap.landing_base)
                    self._on_stale(snap.path)  # the kernel holds what was written here
        if buf.landed(snap, built_on, ident=next(self._ids), content=content):
            self._forget(buf)
        else:
            # Still pending, on the revision that landed: journaled anew as that, whole,
            # before the old records are done (a replay must not take the landed bytes
            # for the ones still to come).
            if snap.created:
                self._unlist(snap.path)
            journal = self._log()
            self._journal_whole(journal, buf)
            if snap.path in self._durable:
                # An fsync made the old records durable; the done record must not reach
                # the disk before the ones that replace them (a rare fdatasync under
                # the lock: writes came while a large fsynced file was landing).
                journal.sync_data()
            journal.done(snap.ident)
            if content is not None:
                self._on_stale(snap.path)
            self._wake.set()  # its quiet period runs from its last write
        if was_failing:
            log.warning("memfs: %s is saved after all (revision %d)", snap.path, entry.rev)
            forget_copy(self.recovery_dir, snap.path)
            self._board.unsaved.discard(snap.path)
        self._board.publish()

    def _landed_content(self, path: str, entry: Entry) -> tuple[bytes, Entry]:
        """What is at ``path`` for the writes that came during a landing to follow: the
        revision that landed (``entry``), or, once another writer's history has pruned
        it, the file as it is now. Those writes only go past the landing's bytes, so
        they are appends on either."""
        try:
            return self.store.read_revision(path, entry.rev), entry
        except NotFound:
            return self.store.read(path)

    def _failed(self, buf: Buffer, snap: Snapshot, exc: BaseException) -> None:
        first = buf.commit_failed(exc, time.monotonic() + RETRY_S)
        self._wake.set()  # the committer may be asleep for a whole quiet period
        # Writes to a failed file are refused, so its data cannot change: one copy.
        copy = keep_copy(self.recovery_dir, snap.path, snap.data) if first else None
        self._board.failed(snap.path, exc, copy, first)

    def _bound_journal(self) -> None:
        """Rewrite the journal from the buffers once it is mostly history: it never grows
        much past what is pending (a file rewritten in place for minutes, like fsx)."""
        if self._log().size > max(COMPACT_AT_BYTES, 4 * self._tally.bytes) and not any(
            b.state is State.COMMITTING for b in self._bufs.values()
        ):
            self._compact()  # (not while a landing is in flight: its record must stay)

    def _compact(self, *, purge: bool = False) -> None:
        """A new journal holding only what is pending, whole; the old one goes. For a
        ``purge`` the new one is durable before the old one is shredded and unlinked:
        at every moment one of them holds every acknowledged write."""
        old = self._log()
        fresh = jr.Journal(old.directory)
        for buf in self._bufs.values():
            self._journal_whole(fresh, buf)
        if purge or self._durable:
            fresh.sync()  # what an fsync made durable stays so
        self._journal = fresh
        old.close(keep=False, shred=purge)

    def purge(self, hashes: Collection[str], *, check: bool = False) -> Purged:
        """Drop what this daemon keeps on disk of content whose SHA-256 (hex) is one of
        ``hashes`` (being redacted): compact the journal to what is pending and delete
        recovered copies of it. A buffer whose pending content is one of them is a
        file's current content to this mount: it is named and nothing is done (an
        acknowledged write is never dropped). ``check`` only names them."""
        wanted = set(hashes)

        def compact() -> tuple[str, int]:
            if self._journal is None:
                return "", 0
            before = self._journal.size
            self._compact(purge=True)
            return str(self._journal.path), before - self._journal.size

        with self.lock:
            while any(b.state is State.COMMITTING for b in self._bufs.values()):
                self.lock.wait()
            holding = [
                buf.path
                for buf in self._bufs.values()
                if hashlib.sha256(buf.data).hexdigest() in wanted
            ]
            return purge(
                holding, wanted, compact=compact, recovery_dir=self.recovery_dir, check=check
            )

    # --- the store's state ---------------------------------------------------------------
    def forget_usage(self) -> None:
        """The store's usage moved (a mutation here, a change seen on the feed)."""
        self._caps.forget_usage()

    def check_usable(self) -> None:
        """EIO once the store's storage went away (see :meth:`lose`)."""
        if self._board.lost:
            raise OSError(errno.EIO, self._board.lost)

    @property
    def lost(self) -> str:
        return self._board.lost

    def lose(self, problem: str, rescue: Callable[[], Path | None]) -> None:
        """The store's storage went away (``problem`` says how): refuse every change from
        now on, commit what is pending into the handle still open, and have ``rescue``
        save that whole store somewhere it can be mounted again."""
        with self.lock:
            if self._board.lost:
                return
            self._board.lost = problem  # from here on every write answers EIO
            log.error("memfs: %s; writes now answer EIO", problem)
            for buf in list(self._bufs.values()):
                try:
                    self._settle(buf)
                except Exception as exc:
                    log.error("memfs: %s stays in the journal: %s", buf.path, exc)
            try:
                where = rescue()
            except Exception as exc:
                where = None
                log.exception("memfs: could not save the store that went away")
                told = f"memfs could not save it ({exc})"
            else:
                told = (
                    f"memfs saved what it held to {where}"
                    if where is not None
                    else "what was written is on the server"
                )
            if where is not None:
                log.error("memfs: the whole store as this mount saw it is saved in %s", where)
            self._board.lost = f"{problem}; {told}"
            self._board.publish()

    @property
    def store_away(self) -> bool:
        """The change follower last found the store not answering (an outage)."""
        return self._board.store_away

    def store_reachable(self, problem: str | None) -> None:
        """Told by the change follower when the store stops (a reason) or starts again
        (None) answering, for `memfs status`."""
        self._board.store_reachable(problem)

    def count_error(self) -> None:
        """Count an unexpected error of another of the daemon's threads (it logged it),
        where `memfs status` shows the count."""
        self._board.count_error()

    # --- lifecycle ---------------------------------------------------------------------------
    def recover(self, *, shred: bool = False) -> list[str]:
        """Adopt what dead daemons' journals hold for this store, then commit it; returns
        the paths recovered. Run before the mount serves; ``shred`` overwrites each
        journal adopted before it goes (:func:`memfs.mount.journal.shred_file`)."""
        if self._journal_dir is None:
            return []

        def durable() -> None:  # what was adopted, before its journal goes
            if self._journal is not None:
                self._journal.sync()

        with self.lock:
            found, replayed = adopt_orphans(
                self.store, self._journal_dir, self._adopt, before_delete=durable, shred=shred
            )
            self.replayed += replayed
            for name in found:
                buf = self._bufs.get(name)
                if buf is not None:
                    try:
                        self._commit(buf)
                    except Exception as e:  # kept, reported and retried like any failure
                        log.warning("memfs: recovering %s failed for now: %r", name, e)
        if found:
            log.warning("memfs: recovered %d file(s) a stopped daemon had not saved", len(found))
        return found

    def _adopt(self, rec: jr.Recovered, act: Act, replaces: bool) -> bool:
        old = self._bufs.get(rec.path)
        if old is not None and replaces:
            self._release(old)  # an older journal's version of the same file
        elif old is not None:
            # Another daemon's change to the same file (two mounts of one store on this
            # machine, both stopped with changes pending): the one adopted first lands
            # first, as it would have. Adopting the second in its place dropped it.
            try:
                self._commit(old)
            except Exception as e:
                copy = keep_copy(self.recovery_dir, old.path, old.data)
                log.error(
                    "memfs: could not save %s from a stopped daemon's journal (%s); kept as %s",
                    old.path, e, copy,
                )  # fmt: skip
                self._release(old)
        # The change keeps the base it was built on: the store decides, by the same
        # rules as a live commit, how it lands on whatever was written since.
        buf = Buffer(
            self._tally,
            ident=next(self._ids),
            path=rec.path,
            data=rec.data,
            author=rec.author,
            base_rev=rec.base_rev,
            mode=rec.mode,
            created=rec.created,
            base_size=rec.base_size,
            whole=rec.shape is Shape.WHOLE,
            low=0 if rec.shape is Shape.EDIT else -1,
            act=act,
            # Each writer's turn again its own revision, as the stopped daemon would have
            # landed it.
            turns=tuple(
                Turn(end, author, Act(author, detail=act.detail), None)
                for end, author in rec.turns
                if rec.shape is Shape.APPEND  # (only appends queue turns)
            ),
        )
        if rec.mtime_ns is not None:
            buf.set_mtime(rec.mtime_ns)  # acknowledged before the daemon stopped
        self._journal_whole(self._log(), buf)
        self._add(buf)
        return True

    def start(self) -> None:
        self._log()
        self._thread = threading.Thread(target=self._committer, name="memfs-committer", daemon=True)
        self._thread.start()

    def close(self) -> Health:
        """Stop the committer, commit everything, and say what could not be saved (its
        journal stays for the next mount)."""
        self._halt.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        with self.lock:
            if self._closed:
                return self._board.health
            self._closed = True
            # A store that went away takes no more commits: what is left stays in the
            # journal (and is named), not in a file nobody can open again.
            for buf in [] if self._board.lost else list(self._bufs.values()):
                try:
                    self._settle(buf)
                except Exception as e:
                    log.error("memfs: could not save %s at unmount: %s", buf.path, e)
            self._board.unsaved.update(self._bufs)
            self._board.publish()
            if self._journal is not None:
                self._journal.close(keep=bool(self._bufs))
                self._journal = None
            return self._board.health

    def _needs_look(self, buf: Buffer) -> bool:
        """Whether the committer must be woken for ``buf`` (under the lock): it will not
        look again before the buffer is due."""
        now = time.monotonic()
        return now + buf.due_in(self.quiet_period, now) < self._looks_at

    def _committer(self) -> None:
        """Commit buffers nobody has written for ``quiet_period`` (and retry failed
        ones). Bound for a reader of the store: a write is there ``quiet_period`` plus
        one commit after the last write to its file (plus BATCH_PAUSE while other files
        keep falling due), at once after fsync."""
        while not self._halt.is_set():
            try:
                wait = self._commit_due()
            except Exception:
                log.exception("memfs: the committer hit an unexpected error; going on")
                self._board.count_error()
                wait = RETRY_S
                with self.lock:
                    self._looks_at = time.monotonic() + wait
            self._wake.wait(timeout=wait)
            self._wake.clear()

    def _commit_due(self) -> float | None:
        """Commit what is due (the files due together in one transaction), each landing
        without the lock so other files are not held up; return the seconds until the
        next one is due."""
        with self.lock:
            if self._board.lost:
                self._looks_at = math.inf
                return None  # nothing more goes into a store that went away
            due, _ = self._tally.due(self.quiet_period, time.monotonic())
        ready = deque(due)
        landed = False
        while ready:
            if self._halt.is_set():
                return None
            with self.lock:
                group = self._group(ready)
                if not group:
                    continue
                landed = True
                with contextlib.suppress(Exception):  # _commit logged and kept it
                    if len(group) == 1:
                        self._commit(group[0])
                    else:
                        self._commit_group(group)
        with self.lock:
            now = time.monotonic()
            due, wait = self._tally.due(self.quiet_period, now)
            if due:
                wait = 0.0  # fell due meanwhile
            if landed and wait is not None:
                wait = max(wait, BATCH_PAUSE)
            self._looks_at = math.inf if wait is None else now + wait
        return wait

    def _group(self, ready: deque[Buffer]) -> list[Buffer]:
        """Take from the front of ``ready`` (under the lock) what lands next: the
        buffers still due, up to BATCH_FILES and BATCH_BYTES; a failed one alone (its
        retry is reported on its own)."""
        group: list[Buffer] = []
        size = 0
        now = time.monotonic()
        while ready and len(group) < BATCH_FILES:
            buf = ready[0]
            if (
                self._bufs.get(buf.path) is not buf
                or buf.state not in (State.DIRTY, State.FAILED)
                or buf.due_in(self.quiet_period, now) > 0  # written again since
            ):
                ready.popleft()
                continue
            alone = buf.state is State.FAILED or len(buf.data) >= BATCH_BYTES
            if group and (alone or size + len(buf.data) > BATCH_BYTES):
                break
            group.append(ready.popleft())
            size += len(buf.data)
            if alone:
                break
        return group
