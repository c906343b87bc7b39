"""The mount's write path: every byte from the first write call to its revision, in one
owner. The FUSE operations only translate calls to :class:`PendingWrites`.

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
   (an editor's save) stays one revision, committed on fsync, before any namespace
   operation that involves the file, or ``quiet_period`` after its last write.
5. **Every change knows its base.** A buffer commits against the revision it was loaded
   from (compare-and-set), through :func:`memfs.store.rebase.land`: when another mount,
   host or door committed in between, appends are rebased onto the newer content, a
   whole-file save is merged with what changed since its writer read the file (a file
   created here: since it was empty), and lines both changed are a conflict, kept as a
   conflict copy beside the file and named in ``memfs status``. O_APPEND writes go at
   the end of what this mount holds, whatever offset the kernel computed from a size it
   cached before another writer's append; a change seen on the feed for a file with
   pending writes commits (rebases) it at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import itertools
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from memfs.errors import (
    CapExceeded,
    MemfsError,
    PathError,
    PathTooLong,
)
from memfs.mount import journal as jr
from memfs.mount.bursts import Writer
from memfs.mount.opkit import errno_of
from memfs.paths import MAX_SEGMENT_BYTES, fits, parent_of, parse_rel
from memfs.store.base import Act, Entry, Store, Usage
from memfs.store.rebase import Landing, Shape, land

log = logging.getLogger(__name__)

# (author, mutation, path): runs a store mutation on the mount's behalf, so the mount
# can tell its own changes from other writers' on the change feed.
CommitHook = Callable[[str, Callable[[], Entry], str], Entry]

DEFAULT_MAX_PENDING_BYTES = 256 << 20
# A journal this much larger than what is pending is rewritten from the buffers.
COMPACT_AT_BYTES = 64 << 20
RETRY_S = 1.0
TOUCHED_DIRS = 4096
# Conflict copies named in `memfs status` (the newest; each is also in the log).
CONFLICTS_SHOWN = 20
# How long the store's usage is trusted for the cap checks. The mount's namespace
# changes and every change the follower sees forget it, and its own commits move their
# growth into it, so this bounds only a store changed by others with no follower.
USAGE_TTL_S = 1.0


@dataclass(slots=True, eq=False)
class Buffer:
    """The pending content of one file, and what its writer did to the base.

    ``base_rev``/``base_size``: the store's revision and size the buffer was loaded from
    (0 for a file ``created`` here). ``whole``: the writer replaced the file whole
    (created it, or truncated it to nothing). ``low``: the lowest offset any write or
    truncate touched; everything below it is still the base's bytes. Together they give
    the change's :attr:`shape`, which decides how it lands on a moved base.
    ``read_rev``: for a whole save, the revision its writer read before (older than
    ``base_rev`` when another writer committed since): the base it merges against.
    """

    ident: int
    path: str
    data: bytearray
    author: str  # the writer's actor ("root (vim)"), as the journal keeps it
    base_rev: int
    mode: int
    created: bool
    base_size: int = 0
    whole: bool = False
    low: int = -1  # -1: nothing touched yet (set to base_size by __post_init__)
    uid: int | None = None
    gid: int | None = None
    # The process whose changes the buffer holds (one revision per writer) and the
    # operation they belong to (its burst); None for a buffer saved from a journal.
    writer: Writer | None = None
    act: Act | None = None
    dirty: bool = True
    last_write: float = field(default_factory=time.monotonic)
    mtime_ns: int = field(default_factory=time.time_ns)
    failed: BaseException | None = None
    retry_at: float = 0.0
    read_rev: int | None = None

    @property
    def landing_base(self) -> int:
        """The revision the change lands against (see :func:`memfs.store.rebase.land`)."""
        return self.base_rev if self.read_rev is None else self.read_rev

    def __post_init__(self) -> None:
        if self.low < 0:
            self.low = self.base_size

    @property
    def shape(self) -> Shape:
        if self.created or self.whole:
            return Shape.WHOLE
        return Shape.APPEND if self.low >= self.base_size else Shape.EDIT

    def touch(self) -> None:
        self.dirty = True
        self.last_write = time.monotonic()
        self.mtime_ns = time.time_ns()


@dataclass(frozen=True, slots=True)
class Health:
    """What a person must hear about: files not in the store yet, and unexpected errors."""

    unsaved: tuple[str, ...] = ()
    errors: int = 0
    recovery_dir: str = ""
    # The store cannot be reached (a server away): why, and since when (epoch seconds).
    store_problem: str = ""
    store_down_since: float = 0.0
    # Writes that met another writer's change to the same lines: "PATH -> COPY", newest
    # last (the copy holds the version that did not keep PATH: this mount's for an edit,
    # the other writer's for a save of the whole file).
    conflicts: tuple[str, ...] = ()
    # The store's storage went away under the mount (its file deleted, replaced, moved;
    # a tree dropped): what happened and where memfs saved what it held. Writes answer
    # EIO from then on.
    lost: str = ""


@dataclass(frozen=True, slots=True)
class Purged:
    """What :meth:`PendingWrites.purge` did: nothing but name the files whose pending
    content is being redacted (``pending``), or the journal it compacted (``dropped``
    bytes of records of finished writes went) and the recovered copies it deleted."""

    pending: tuple[str, ...] = ()
    journal: str = ""
    dropped: int = 0
    copies: tuple[str, ...] = ()

    def fields(self) -> dict[str, object]:
        return {
            "pending": list(self.pending),
            "journal": self.journal,
            "dropped": self.dropped,
            "copies": list(self.copies),
        }


@dataclass(frozen=True, slots=True)
class Saved:
    """What :func:`save_orphans` committed from stopped daemons' journals, and the
    journal that still holds what it could not (``""``: none)."""

    saved: tuple[str, ...] = ()
    unsaved: tuple[str, ...] = ()
    kept: str = ""
    journals: int = 0  # stopped daemons' journals replayed and deleted


def base_of(store: Store, path: str, rev: int) -> bytes:
    """The content revision ``rev`` of ``path`` had, for a journaled edit made on it
    (its current content, logged, when that revision is gone)."""
    with contextlib.suppress(Exception):
        data, entry = store.read(path)
        if entry.rev == rev:
            return data
    with contextlib.suppress(Exception):
        return store.read_revision(path, rev)
    log.warning("memfs: revision %d of %s is gone; replaying onto its current content", rev, path)
    with contextlib.suppress(Exception):
        return store.read(path)[0]
    return b""


def landed_before(store: Store, rec: jr.Recovered) -> bool:
    """Whether the store already holds what ``rec`` would commit: its content is the
    file's, or its last landing attempt (journaled before the write) made a revision
    (a killed daemon commits and dies before it notes the commit as done)."""
    with contextlib.suppress(Exception):
        data, _ = store.read(rec.path)
        if data == rec.data:
            return True
    if rec.landing is None:
        return False
    target, expected, sha = rec.landing
    with contextlib.suppress(Exception):
        return any(
            r.rev > expected and bytes.fromhex(r.sha256) == sha for r in store.history(target)
        )
    return False


def delete_copies(directory: Path | None, hashes: Collection[str]) -> list[str]:
    """Shred and delete the recovered copies under ``directory`` whose content's SHA-256
    (hex) is one of ``hashes``; the paths deleted. Whole stores rescued there
    (:func:`rescued`) are not copies of one file and are left alone."""
    if directory is None or not directory.is_dir() or not hashes:
        return []
    rescues = set(rescued(directory))
    gone: list[str] = []
    for path in sorted(directory.rglob("*")):
        if path in rescues or path.is_symlink() or not path.is_file():
            continue
        try:
            with path.open("rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            continue
        if digest not in hashes:
            continue
        jr.shred_file(path)
        path.unlink()
        gone.append(str(path))
        for parent in path.parents:  # the directories its store path made, if now empty
            if parent == directory or directory not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break
    return gone


def rescued(directory: Path | None) -> list[Path]:
    """Whole stores saved under ``directory`` when their storage went away under a mount
    (:meth:`memfs.store.base.Store.rescue`): a person's to keep or delete."""
    if directory is None or not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.rescued-*") if p.is_file())


def orphans_holding(
    store: Store, journal_dir: Path, hashes: Collection[str]
) -> list[tuple[str, str]]:
    """``(journal, path)`` for each write a stopped daemon's journal holds pending (to be
    committed by the next mount) whose content's SHA-256 is one of ``hashes``."""
    found: list[tuple[str, str]] = []
    for journal, _fd in jr.orphans(journal_dir):
        try:
            pending = jr.replay(journal, lambda p, rev: base_of(store, p, rev))
        except Exception:
            continue  # unreadable: the next mount sets it aside, and says so
        for rec in pending:
            if hashlib.sha256(rec.data).hexdigest() in hashes and not landed_before(store, rec):
                found.append((str(journal), rec.path))
    return found


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
    kept = "" if writes._journal is None else str(writes._journal.path)
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


def _remedy(exc: BaseException) -> str:
    """What a person can do about a refused commit, for the log line."""
    if isinstance(exc, CapExceeded):
        return (
            f" (once there is room: the store is at its {exc.cap} cap of {exc.limit};"
            f" delete files or raise the cap with ?{exc.cap}=N in the store URL)"
        )
    return ""


def program_of(buf: Buffer) -> str:
    """The program a conflict copy of ``buf`` is named after (``NAME.conflict-STAMP-
    PROGRAM.EXT``): its writer's, or for a buffer saved from a journal the one its actor
    names, ``"USER (PROGRAM)"``."""
    if buf.writer is not None:
        return buf.writer.program
    return buf.author.rpartition(" (")[2].removesuffix(")")


def same_writer(a: Writer | None, b: Writer) -> bool:
    """Whether two writers are one process: its id and start time decide, since a
    process that execs (``bash`` becoming ``cat`` after ``cat > f``) changes its name."""
    return a is not None and (a.pid, a.started) == (b.pid, b.started)


class PendingWrites:
    """Buffers keyed by store path, with their journal and their committer.

    ``lock`` is the mount's mutex: every method but :meth:`get`, :meth:`created_in` and
    :meth:`dir_mtime` (lock-free reads) takes it.
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
        on_saved: Callable[[str, Entry, bytes], None] | None = None,
        on_committed: Callable[[Buffer, Entry], None] | None = None,
    ) -> None:
        self.store = store
        self.lock = threading.RLock()
        self._run = run_mutation
        self._journal_dir = journal_dir
        self._journal: jr.Journal | None = None
        self.recovery_dir = recovery_dir
        self.quiet_period = quiet_period
        cap = store.max_file_bytes or 0
        self.max_pending_bytes = max(max_pending_bytes, 2 * cap)
        self._on_health = on_health
        # Told each path whose content the kernel may hold wrong after a commit here (an
        # append moved to the true end, a rebase, a conflict copy): it invalidates them
        # from a thread that is not a FUSE callback.
        self._on_stale = on_stale or (lambda path: None)
        # Told each commit that stored the buffer's bytes as they were (no rebase).
        self._on_saved = on_saved or (lambda path, entry, data: None)
        # Told each buffer that landed, and how (whatever the outcome).
        self._on_committed = on_committed or (lambda buf, entry: None)
        # The operation a writer's change belongs to (memfs.mount.bursts).
        self._act_for = act_for or (lambda who: Act(who.actor, detail=f"pid {who.pid}"))
        self._conflicts: list[str] = []
        self._lost = ""
        self._bufs: dict[str, Buffer] = {}
        self._created: dict[str, dict[str, None]] = {}  # parent -> names not in the store
        self._touched: OrderedDict[str, int] = OrderedDict()  # dir -> mtime of a change
        self._bytes = 0
        self._base_bytes = 0  # sum of base_size: _bytes - _base_bytes is the pending growth
        self._new_files = 0  # created buffers: files the store does not count yet
        self._usage: tuple[float, Usage] | None = None
        self._unsaved: set[str] = set()
        self._ids = itertools.count(1)
        self.errors = 0
        self.replayed = 0  # stopped daemons' journals adopted and deleted by recover()
        self._health = Health()
        self._store_problem: tuple[str, float] = ("", 0.0)
        self._wake = threading.Event()
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
        return self._bytes

    # --- calls from FUSE operations --------------------------------------------------------
    def create(self, path: str, mode: int, who: Writer, uid: int | None, gid: int | None) -> None:
        check_new_name(path)
        author = who.actor
        with self.lock:
            self.check_usable()
            old = self._bufs.get(path)
            if old is not None:
                self._settle(old)
            self._check_files(path)
            buf = Buffer(
                ident=next(self._ids),
                path=path,
                data=bytearray(),
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
        self._wake.set()

    def write(
        self, path: str, data: bytes, offset: int, who: Writer, *, append: bool = False
    ) -> int:
        """Write ``data`` at ``offset``; with ``append`` (the file was opened O_APPEND) at
        the end of the content this mount holds, as a local disk puts it: the kernel's
        offset comes from a size it may have cached before another mount appended."""
        self._check_size(path, offset + len(data))
        with self.lock:
            buf = self._writable(path, who, whole=False)
            if append and offset != len(buf.data):
                offset = len(buf.data)
                self._check_size(path, offset + len(data))
                self._on_stale(path)  # the kernel placed these bytes elsewhere
            end = offset + len(data)
            self._check_tree_bytes(path, end - len(buf.data))
            self._reserve(buf, end)
            self._log().wrote(buf.ident, offset, data)
            old = len(buf.data)  # before a hole is filled in: it counts too
            if offset > old:
                buf.data.extend(b"\0" * (offset - old))
            buf.data[offset:end] = data
            self._bytes += len(buf.data) - old
            buf.low = min(buf.low, offset)
            buf.touch()
            self._bound_journal()
        self._wake.set()
        return len(data)

    def truncate(self, path: str, size: int, who: Writer, *, read_rev: int | None = None) -> None:
        """Truncate ``path`` to ``size``; to nothing, it starts a save of the whole file,
        and ``read_rev`` is the revision its writer read (memfs.mount.reads), if known."""
        self._check_size(path, size)
        with self.lock:
            self.check_usable()  # before the lookup: a store gone away answers no entry
            buf = self._bufs.get(path)
            if buf is None:
                entry = self.store.stat(path)
                if entry.is_file and entry.size == size:
                    return
            buf = self._writable(path, who, whole=size == 0, read_rev=read_rev)
            self._check_tree_bytes(path, size - len(buf.data))
            self._reserve(buf, size)
            self._log().truncated(buf.ident, size)
            old = len(buf.data)
            if size < old:
                del buf.data[size:]
            else:
                buf.data.extend(b"\0" * (size - old))
            self._bytes += size - old
            buf.low = min(buf.low, size)
            buf.whole = buf.whole or size == 0  # all of the base is gone: a rewrite
            buf.touch()
            self._bound_journal()
        self._wake.set()

    def chmod(self, path: str, mode: int) -> bool:
        """Set the mode of a file not in the store yet; False if it is in the store."""
        with self.lock:
            self.check_usable()
            buf = self._bufs.get(path)
            if buf is None or not buf.created:
                return False
            self._log().moded(buf.ident, mode)
            buf.mode = mode
            return True

    def drop(self, path: str) -> Buffer | None:
        """Forget the buffer of ``path`` (its file is being unlinked)."""
        with self.lock:
            buf = self._bufs.get(path)
            if buf is None:
                return None
            self._remove(buf)
            if buf.created:
                self._touch_dir(path)
            return buf

    def commit(self, path: str) -> None:
        """Commit ``path`` now (fsync, or a namespace operation that involves it); raise
        the store's error if it is refused (the data stays)."""
        with self.lock:
            buf = self._bufs.get(path)
            if buf is not None:
                self._commit(buf)

    def commit_soon(self, paths: list[str]) -> None:
        """Another writer changed these paths (seen on the feed): commit what is pending
        for them now, so it lands on their change and reads here show the result."""
        with self.lock:
            due = [b for b in (self._bufs.get(p) for p in paths) if b is not None and b.dirty]
            # Due now: its quiet period ended. (Not 0.0: the monotonic clock starts near
            # zero at boot, and on a machine up for less than a quiet period 0.0 is not
            # long ago.)
            for buf in due:
                if buf.failed is None:
                    buf.last_write = time.monotonic() - self.quiet_period
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
        (memfs.store.rebase). The caller holds the lock since it checked that (and that
        a rename would leave ``dst`` as the write does: a file of the same mode and
        owner, or nothing), and runs this as the rename's mutation."""
        with self.lock:
            buf = self._bufs[src]
            assert buf.created and buf.uid is None and buf.gid is None and buf.failed is None
            data = bytes(buf.data)
            if noreplace or read_rev is None:
                # A daemon killed after the write and before the buffer is done must
                # not replay the buffer at src: the landing names where it went.
                self._log().landing(buf.ident, dst, dst_rev, hashlib.sha256(data).digest())
                entry = self.store.write(
                    dst,
                    data,
                    author=buf.author,
                    expected_rev=0 if noreplace else None,
                    mode=buf.mode,
                    replace=True,
                )
                self._on_saved(dst, entry, data)
            else:
                landing = land(
                    self.store,
                    dst,
                    data,
                    base_rev=read_rev,
                    shape=Shape.WHOLE,
                    author=buf.author,
                    mode=buf.mode,
                    side=program_of(buf),
                    replace=True,
                    before_write=lambda target, expected, content: self._log().landing(
                        buf.ident, target, expected, hashlib.sha256(content).digest()
                    ),
                )
                entry = landing.entry
                self._landed(buf, landing, dst)
                if landing.outcome == "written":
                    self._on_saved(dst, entry, data)
            if buf.writer is not None:
                self._on_committed(dataclasses.replace(buf, path=dst, base_rev=dst_rev), entry)
            self._remove(buf)
            self._publish()
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

    # --- inside the lock --------------------------------------------------------------------
    def _log(self) -> jr.Journal:
        if self._journal is None:
            if self._journal_dir is None:
                raise RuntimeError("the write path was not started")
            self._journal = jr.Journal(self._journal_dir)
        return self._journal

    def _check_size(self, path: str, size: int) -> None:
        cap = self.store.max_file_bytes
        if cap is not None and size > cap:
            raise OSError(errno.EFBIG, f"{path} would be {size} bytes; the limit is {cap}")

    # --- the store's tree caps ---------------------------------------------------------------
    def forget_usage(self) -> None:
        """The store's usage moved (a mutation here, a change seen on the feed)."""
        self._usage = None

    def _counted(self, buf: Buffer, size: int) -> None:
        """Move a committed buffer's growth from the pending sums to the cached usage
        (no query: a burst of small files commits one after another)."""
        cached = self._usage
        if cached is not None:
            at, u = cached
            grown = Usage(u.files + buf.created, u.dirs, u.bytes + size - buf.base_size)
            self._usage = (at, grown)

    def _store_usage(self) -> Usage:
        now = time.monotonic()
        cached = self._usage
        if cached is not None and now - cached[0] < USAGE_TTL_S:
            return cached[1]
        usage = self.store.usage()
        self._usage = (now, usage)
        return usage

    def _check_tree_bytes(self, path: str, growth: int) -> None:
        """EDQUOT if growing ``path`` by ``growth`` bytes would pass max_tree_bytes."""
        cap = self.store.max_tree_bytes
        if cap is None or growth <= 0:
            return
        used = self._store_usage().bytes + self._bytes - self._base_bytes
        if used + growth > cap:
            raise OSError(
                errno.EDQUOT,
                f"{path}: the memory would hold {used + growth} bytes; the store's"
                f" max_tree_bytes is {cap}",
            )

    def _check_files(self, path: str) -> None:
        """EDQUOT if one more file would pass max_files."""
        cap = self.store.max_files
        if cap is None:
            return
        used = self._store_usage().files + self._new_files
        if used + 1 > cap:
            raise OSError(
                errno.EDQUOT,
                f"{path}: the memory holds {used} files; the store's max_files is {cap}",
            )

    def _writable(
        self, path: str, who: Writer, *, whole: bool, read_rev: int | None = None
    ) -> Buffer:
        """The buffer that takes ``who``'s next change to ``path`` (``read_rev``: see
        :class:`Buffer`, for a new buffer of a whole save)."""
        self.check_usable()
        author = who.actor
        buf = self._bufs.get(path)
        if buf is not None and buf.failed is not None:
            raise OSError(errno_of(buf.failed), f"{path} could not be saved: {buf.failed}")
        if buf is not None and buf.dirty and not same_writer(buf.writer, who):
            # Another program's change: what the first one wrote is its own revision.
            self._commit(buf)
            buf = None
        if buf is not None:
            buf.author, buf.writer, buf.act = author, who, self._act_for(who)
            return buf
        if whole:
            entry = self.store.stat(path)
            if not entry.is_file:
                self.store.read(path)  # raises the precise error (IsADirectory, NotFound)
            content = b""
        else:
            # One read: the content and the revision it is the base of, consistently.
            content, entry = self.store.read(path)
        buf = Buffer(
            ident=next(self._ids),
            path=path,
            data=bytearray(content),
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
            read_rev=read_rev if whole and read_rev != entry.rev else None,
        )
        # A whole save's journal record needs no base content, only the revision it
        # lands against.
        self._log().opened(
            buf.ident, path, author, buf.landing_base, entry.mode, jr.WHOLE if whole else 0
        )
        self._add(buf)
        return buf

    def _reserve(self, buf: Buffer, size: int) -> None:
        """Make room for ``buf`` to grow to ``size``: commit other buffers, oldest first,
        or refuse with ENOSPC when that cannot free enough."""
        growth = size - len(buf.data)
        if growth <= 0 or self._bytes + growth <= self.max_pending_bytes:
            return
        for other in sorted(self._bufs.values(), key=lambda b: b.last_write):
            if self._bytes + growth <= self.max_pending_bytes:
                return
            if other is not buf and other.failed is None:
                with contextlib.suppress(Exception):
                    self._commit(other)
        if self._bytes + growth > self.max_pending_bytes:
            raise OSError(errno.ENOSPC, "too much data is waiting to be saved")

    def _add(self, buf: Buffer) -> None:
        self._bufs[buf.path] = buf
        self._bytes += len(buf.data)
        self._base_bytes += buf.base_size
        self._new_files += buf.created
        if buf.created:
            parent, _, name = buf.path.rpartition("/")
            self._created.setdefault(parent, {})[name] = None
            self._touch_dir(buf.path)

    def _remove(self, buf: Buffer) -> None:
        if self._bufs.get(buf.path) is not buf:
            return
        del self._bufs[buf.path]
        self._bytes -= len(buf.data)
        self._base_bytes -= buf.base_size
        self._new_files -= buf.created
        self._unsaved.discard(buf.path)
        if buf.created:
            parent, _, name = buf.path.rpartition("/")
            names = self._created.get(parent)
            if names is not None:
                names.pop(name, None)
                if not names:
                    del self._created[parent]
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

    def _settle(self, buf: Buffer) -> None:
        """Commit ``buf`` if it holds changes, else let it go."""
        if buf.dirty:
            self._commit(buf)
        else:
            self._remove(buf)

    def _commit(self, buf: Buffer) -> None:
        if not buf.dirty:
            self._remove(buf)
            return
        data = bytes(buf.data)
        try:
            landing = self._store_write(buf, data)
        except Exception as e:
            self._failed(buf, data, e)
            raise
        entry = landing.entry
        self._landed(buf, landing)
        self._on_committed(buf, entry)
        if landing.outcome == "written":
            self._on_saved(buf.path, entry, data)
        self._counted(buf, len(data))  # the store counts this file now; the buffer goes
        if buf.failed is not None:
            log.warning("memfs: %s is saved after all (revision %d)", buf.path, entry.rev)
            self._forget_copy(buf.path)
            buf.failed = None
            self._unsaved.discard(buf.path)
        if buf.uid is not None or buf.gid is not None:
            # Made by another user through --allow-other: the entry is theirs. The content
            # is saved already; a failure here must not make it look unsaved.
            try:
                with self.store.acting(buf.act or Act(buf.author)):
                    self._run(
                        buf.author,
                        lambda: self.store.set_attrs(
                            buf.path, author=buf.author, uid=buf.uid, gid=buf.gid
                        ),
                        buf.path,
                    )
            except Exception:
                self.errors += 1
                log.exception("memfs: could not record the owner of %s", buf.path)
        self._remove(buf)
        self._publish()

    def _store_write(self, buf: Buffer, data: bytes) -> Landing:
        """Commit ``buf`` against its base; a moved base is rebased (memfs.store.rebase)."""
        landing: Landing | None = None

        def attempt() -> Entry:
            nonlocal landing
            landing = land(
                self.store,
                buf.path,
                data,
                base_rev=buf.landing_base,
                shape=buf.shape,
                base_size=buf.base_size,
                author=buf.author,
                mode=buf.mode if buf.created else None,
                side=program_of(buf),
                before_write=lambda target, expected, content: self._log().landing(
                    buf.ident, target, expected, hashlib.sha256(content).digest()
                ),
            )
            return landing.entry

        act = buf.act or Act(buf.author)
        buf.act = act  # a retry after a failure stays in the same operation
        with self.store.acting(act):
            self._run(buf.author, attempt, buf.path)
        assert landing is not None
        return landing

    def conflicted(self, path: str, copy: str) -> None:
        """A change to ``path`` met another writer's and one of them is kept at ``copy``:
        named in the health (``memfs status``)."""
        with self.lock:
            self._conflicts.append(f"{path} -> {copy}")
            del self._conflicts[:-CONFLICTS_SHOWN]
        self._publish()

    def _landed(self, buf: Buffer, landing: Landing, path: str | None = None) -> None:
        """Say what a commit (of ``buf``, at ``path`` if it was renamed there) that met
        another writer's change did, and let the kernel know the content it holds for
        the path is not what was committed."""
        if landing.outcome == "written":
            return
        if path is not None:
            buf = dataclasses.replace(buf, path=path)
        self._on_stale(buf.path)
        if landing.outcome == "conflict" and landing.copy is not None:
            self._on_stale(landing.copy)
            self._conflicts.append(f"{buf.path} -> {landing.copy}")
            del self._conflicts[:-CONFLICTS_SHOWN]
            log.warning(
                "memfs: conflict: %s changed the same bytes of %s as another writer"
                " (revision %s); theirs stays, %s's version is kept as %s",
                buf.author,
                buf.path,
                landing.over,
                buf.author,
                landing.copy,
            )
        elif landing.outcome == "displaced" and landing.copy is not None:
            self._on_stale(landing.copy)
            self._conflicts.append(f"{buf.path} -> {landing.copy}")
            del self._conflicts[:-CONFLICTS_SHOWN]
            log.warning(
                "memfs: conflict: %s's save of %s changed the lines another writer changed"
                " since it read the file; the save stands, and the revision %s it replaced"
                " is kept as %s",
                buf.author,
                buf.path,
                landing.over,
                landing.copy,
            )
        elif landing.outcome == "merged":
            log.info(
                "memfs: %s's save of %s was merged with revision %s by another writer",
                buf.author,
                buf.path,
                landing.over,
            )
        elif landing.outcome == "replaced":
            log.warning(
                "memfs: %s's save of %s replaced revision %s by another writer, which"
                " stays in the history",
                buf.author,
                buf.path,
                landing.over,
            )
        elif landing.outcome == "recreated":
            log.warning(
                "memfs: %s was deleted by another writer while %s was writing it; its"
                " writes are saved as the file again",
                buf.path,
                buf.author,
            )
        else:
            log.info(
                "memfs: %s's change to %s was rebased onto revision %s",
                buf.author,
                buf.path,
                landing.over,
            )

    def _failed(self, buf: Buffer, data: bytes, exc: BaseException) -> None:
        first = buf.failed is None
        buf.failed = exc
        buf.retry_at = time.monotonic() + RETRY_S
        self._wake.set()  # the committer may be asleep for a whole quiet period
        self._unsaved.add(buf.path)
        if not isinstance(exc, MemfsError):
            # Not a refusal the store explained: a bug or an environment problem. The
            # traceback goes to the log and the count to `memfs status`.
            self.errors += 1
            log.error("memfs: unexpected error saving %s", buf.path, exc_info=exc)
        if first:
            # Writes to a failed file are refused, so its data cannot change: one copy.
            copy = self._keep_copy(buf.path, data)
            log.error(
                "memfs: could not save %s (%s): the data is kept%s and will be retried%s",
                buf.path,
                exc,
                f" in {copy}" if copy else "",
                _remedy(exc),
            )
        self._publish()

    def _keep_copy(self, path: str, data: bytes) -> Path | None:
        """A person-readable copy of a file the store refused, under ``recovery_dir``."""
        if self.recovery_dir is None:
            return None
        target = self.recovery_dir / path
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = target.with_name(f".{target.name}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except OSError as e:
            log.error("memfs: could not keep a copy of %s in %s: %s", path, target, e)
            return None
        return target

    def _forget_copy(self, path: str) -> None:
        if self.recovery_dir is not None:
            with contextlib.suppress(OSError):
                (self.recovery_dir / path).unlink()

    def _bound_journal(self) -> None:
        """Rewrite the journal from the buffers once it is mostly history: it never grows
        much past what is pending (a file rewritten in place for minutes, like fsx)."""
        if self._log().size > max(COMPACT_AT_BYTES, 4 * self._bytes):
            self._compact()

    def _compact(self, *, purge: bool = False) -> None:
        """A new journal holding only what is pending, whole; the old one goes. For a
        ``purge`` the new one is durable before the old one is shredded and unlinked:
        at every moment one of them holds every acknowledged write."""
        old = self._log()
        fresh = jr.Journal(old.directory)
        for buf in self._bufs.values():
            flags = jr.WHOLE | (jr.CREATED if buf.created else 0)
            fresh.opened(buf.ident, buf.path, buf.author, buf.landing_base, buf.mode, flags)
            fresh.shaped(buf.ident, buf.shape, buf.base_size)
            fresh.wrote(buf.ident, 0, buf.data)
        if purge:
            fresh.sync()
        self._journal = fresh
        old.close(keep=False, shred=purge)

    def purge(self, hashes: Collection[str], *, check: bool = False) -> Purged:
        """Drop what this daemon keeps on disk of content whose SHA-256 (hex) is one of
        ``hashes`` (being redacted): compact the journal to what is pending and delete
        recovered copies of it. A buffer whose pending content is one of them is a
        file's current content to this mount: it is named and nothing is done (an
        acknowledged write is never dropped). ``check`` only names them."""
        wanted = set(hashes)
        with self.lock:
            holding = tuple(
                sorted(
                    buf.path
                    for buf in self._bufs.values()
                    if hashlib.sha256(buf.data).hexdigest() in wanted
                )
            )
            if holding or check:
                return Purged(pending=holding)
            journal, dropped = "", 0
            if self._journal is not None:
                before = self._journal.size
                self._compact(purge=True)
                journal, dropped = str(self._journal.path), before - self._journal.size
            copies = delete_copies(self.recovery_dir, wanted)
        return Purged(journal=journal, dropped=dropped, copies=tuple(copies))

    def check_usable(self) -> None:
        """EIO once the store's storage went away (see :meth:`lose`)."""
        if self._lost:
            raise OSError(errno.EIO, self._lost)

    @property
    def lost(self) -> str:
        return self._lost

    def lose(self, problem: str, rescue: Callable[[], Path | None]) -> None:
        """The store's storage went away (``problem`` says how): refuse every change from
        now on, commit what is pending into the handle still open, and have ``rescue``
        save that whole store somewhere it can be mounted again."""
        with self.lock:
            if self._lost:
                return
            self._lost = problem  # from here on every write answers EIO
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
            self._lost = f"{problem}; {told}"
            self._publish()

    @property
    def store_away(self) -> bool:
        """The change follower last found the store not answering (an outage)."""
        return bool(self._store_problem[0])

    def store_reachable(self, problem: str | None) -> None:
        """Told by the change follower when the store stops (a reason) or starts again
        (None) answering, for `memfs status`."""
        with self.lock:
            if problem is None:
                self._store_problem = ("", 0.0)
            elif not self._store_problem[0]:
                self._store_problem = (problem, time.time())
            self._publish()

    def _publish(self) -> None:
        if (
            self.errors == self._health.errors
            and self._unsaved == set(self._health.unsaved)
            and self._store_problem == (self._health.store_problem, self._health.store_down_since)
            and tuple(self._conflicts) == self._health.conflicts
            and self._lost == self._health.lost
        ):
            return
        unsaved = tuple(sorted(self._unsaved))
        problem, down_since = self._store_problem
        health = Health(
            unsaved=unsaved,
            errors=self.errors,
            recovery_dir=str(self.recovery_dir or ""),
            store_problem=problem,
            store_down_since=down_since,
            conflicts=tuple(self._conflicts),
            lost=self._lost,
        )
        if health != self._health:
            self._health = health
            if self._on_health is not None:
                try:
                    self._on_health(health)
                except Exception:
                    log.exception("memfs: could not report the mount's health")

    # --- lifecycle ---------------------------------------------------------------------------
    def recover(self, *, shred: bool = False) -> list[str]:
        """Adopt what dead daemons' journals hold for this store, then commit it; returns
        the paths recovered. Run before the mount serves; ``shred`` overwrites each
        journal adopted before it goes (:func:`memfs.mount.journal.shred_file`)."""
        if self._journal_dir is None:
            return []
        found: list[str] = []
        with self.lock:
            for path, _fd in jr.orphans(self._journal_dir):
                try:
                    pending = jr.replay(path, self._base)
                except Exception:
                    kept = jr.quarantine(path)
                    log.exception("memfs: cannot replay the journal %s; kept as %s", path, kept)
                    continue
                # What one stopped daemon held for one writer is one operation.
                acts: dict[str, Act] = {}
                for rec in pending:
                    act = acts.setdefault(
                        rec.author,
                        Act(rec.author, detail="saved from the journal of a stopped daemon"),
                    )
                    if self._adopt(rec, act):
                        found.append(rec.path)
                if shred:
                    if self._journal is not None:
                        self._journal.sync()  # what was adopted is durable before it goes
                    jr.shred_file(path)
                path.unlink()
                self.replayed += 1
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

    def _base(self, path: str, rev: int) -> bytes:
        return base_of(self.store, path, rev)

    def _adopt(self, rec: jr.Recovered, act: Act) -> bool:
        if self._landed_before(rec):
            return False  # committed before the daemon could note it
        old = self._bufs.get(rec.path)
        if old is not None:
            self._remove(old)  # an older journal's version of the same file
        # The change keeps the base it was built on: the store decides, by the same
        # rules as a live commit, how it lands on whatever was written since.
        buf = Buffer(
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
        )
        flags = jr.WHOLE | (jr.CREATED if rec.created else 0)
        journal = self._log()
        journal.opened(buf.ident, buf.path, buf.author, buf.base_rev, buf.mode, flags)
        journal.shaped(buf.ident, buf.shape, buf.base_size)
        journal.wrote(buf.ident, 0, buf.data)
        self._add(buf)
        return True

    def _landed_before(self, rec: jr.Recovered) -> bool:
        return landed_before(self.store, rec)

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
                return self._health
            self._closed = True
            # A store that went away takes no more commits: what is left stays in the
            # journal (and is named), not in a file nobody can open again.
            for buf in [] if self._lost else list(self._bufs.values()):
                try:
                    self._settle(buf)
                except Exception as e:
                    log.error("memfs: could not save %s at unmount: %s", buf.path, e)
            self._unsaved.update(self._bufs)
            self._publish()
            if self._journal is not None:
                self._journal.close(keep=bool(self._bufs))
                self._journal = None
            return self._health

    def _committer(self) -> None:
        """Commit buffers nobody has written for ``quiet_period`` (and retry failed
        ones). Bound for a reader of the store: a write is there ``quiet_period`` plus
        one commit after the last write to its file, at once after fsync."""
        while not self._halt.is_set():
            try:
                wait = self._commit_due()
            except Exception:
                self.errors += 1
                log.exception("memfs: the committer hit an unexpected error; going on")
                wait = RETRY_S
                with self.lock:
                    self._publish()
            self._wake.wait(timeout=wait)
            self._wake.clear()

    def _commit_due(self) -> float | None:
        """Commit what is due, one buffer per lock hold so other files are not held up;
        return the seconds until the next one is due."""
        with self.lock:
            if self._lost:
                return None  # nothing more goes into a store that went away
            paths = list(self._bufs)
        for path in paths:
            if self._halt.is_set():
                return None
            with self.lock:
                buf = self._bufs.get(path)
                if buf is None or self._due_in(buf) > 0:
                    continue
                with contextlib.suppress(Exception):  # _commit logged and kept it
                    self._commit(buf)
        with self.lock:
            waits = [self._due_in(b) for b in self._bufs.values()]
        return max(0.0, min(waits)) if waits else None

    def _due_in(self, buf: Buffer) -> float:
        now = time.monotonic()
        if buf.failed is not None:
            return buf.retry_at - now
        return buf.last_write + self.quiet_period - now

    def count_error(self) -> None:
        """Count an unexpected error of another of the daemon's threads (it logged it),
        where `memfs status` shows the count."""
        with self.lock:
            self.errors += 1
            self._publish()

    @property
    def health(self) -> Health:
        return self._health
