"""Two-way sync between a plain directory and a store: the :class:`Mirror` and its loop.

A person edits files in DIR with any editor; an agent (or another mirror, or another
host) changes the store. The mirror keeps both equal:

- DIR -> store: a watchdog observer feeds a per-path debouncer (``quiet``, default
  40 ms); a quiet path is read (size/mtime must not move while it is read), compared with
  the sync state and written with ``expected_rev``, so an agent's write in between
  becomes a conflict, never a lost update. Author: ``person via sync mirror (HOST:DIR)``.
- store -> DIR: ``store.changes(since=last_seq)`` is polled every ``poll`` seconds
  (default 50 ms; a store that pushes its changes wakes the mirror at each commit
  instead, :mod:`memfs.sync.push`, and the poll is a 1 s safety net); changed paths
  are written into DIR atomically and checked, see :mod:`memfs.sync.disk`. memfs's
  own writes are recognised by content hash and never echoed back.
- Every decision is the pure table in :mod:`memfs.sync.merge`, applied to each path by
  the :class:`~memfs.sync.engine.Engine`. Edits on both sides merge by the rules every
  writer of the store follows (:mod:`memfs.store.rebase`: appends keep both tails, the
  store's first; edits of different lines both apply); a real conflict keeps both
  versions, the person's as one conflict copy (``name.conflict-YYYYmmdd-HHMMSS-local.ext``
  beside the store's) updated while the conflict lasts (:mod:`memfs.sync.both`).
- A file someone holds open for writing in DIR is never replaced or removed under
  them (:mod:`memfs.sync.leases`).
- Deletions in DIR are corroborated: a path must stay missing for ``delete_grace``
  (default 250 ms) with no other file vanishing meanwhile; a batch removing at least 3
  files and more than half the tree, or DIR itself deleted/replaced (its inode
  changed), is a wipe: restored from the store, never propagated (logged as a warning).
- Not synced: editor temp/swap/backup files and ``.git`` (silently, see
  :mod:`memfs.sync.names`); names the path gate refuses, symlinks, special files and
  files over ``max_file_bytes`` (warned once per path and version, retried when they
  change). A file the store's tree caps (``max_tree_bytes``, ``max_files``) keep out
  is left as it is in DIR, logged once per content with the cap, and tried again every
  few seconds until there is room. Binary files are synced as bytes: the store holds
  bytes, and only the model's ``view`` declines non-UTF-8 content.
- Deletions in the store are applied in DIR (checked against the synced hash first); a
  store whose feed is behind the recorded ``last_seq`` at start (re-created or restored
  from a backup) is merged afresh instead, so its missing files are not deletions.
- The sync state (:mod:`memfs.sync.state`) is kept outside DIR and saved at most once a
  second and on stop; restarting after a kill re-scans both sides and converges: equal
  content on both sides is simply recorded, a store head written by this mirror (its
  author) counts as a base DIR may have moved on from, not as a remote edit, and
  edits on both sides of a path not synced since are kept as a conflict copy rather
  than merged against a base that may lag.
- Stopping (``stop()``, SIGTERM, Ctrl-C) flushes pending paths and rescans DIR once, so
  an edit whose event was still in watchdog's queue is not lost.

Usage: ``Mirror(dir, store).run()`` blocks until :meth:`Mirror.stop`;
``start()``/``stop()`` run it on a thread; ``run_once()`` does one reconciliation pass.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memfs.errors import CorruptStore, MemfsError, StoreUnavailable, SyncError
from memfs.store import Store, open_store
from memfs.sync.disk import Disk, sha256
from memfs.sync.engine import Engine
from memfs.sync.moves import try_rename
from memfs.sync.names import ASIDE_PREFIX, TEMP_PREFIX
from memfs.sync.push import StoreWaker
from memfs.sync.state import StateFile, default_state_path
from memfs.sync.watch import Debouncer, Due, TreeHandler, watch_tree

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

log = logging.getLogger("memfs.sync")

# The state may lag the work (replay is idempotent), so it is saved at most once a
# second while busy: each save rewrites the whole record with an fsync.
SAVE_EVERY = 1.0
PUSHED_POLL = 1.0  # the poll of a store that pushes its changes
ONCE_DEADLINE = 30.0  # a --once pass gives up on files that never stop changing


class Mirror:
    """Keeps directory ``dir`` and ``store`` (a Store or a URL) in two-way sync."""

    def __init__(
        self,
        dir: str | os.PathLike[str],
        store: Store | str,
        *,
        state_path: Path | None = None,
        author: str | None = None,
        quiet: float = 0.04,
        poll: float = 0.05,
        delete_grace: float = 0.25,
        rescan: float = 30.0,
        max_file_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        root = Path(os.path.abspath(dir))
        if not root.is_dir():
            what = "does not exist" if not root.exists() else "is not a directory"
            raise SyncError(f"cannot sync {root}: it {what}")
        self.root = root
        self._own_store = isinstance(store, str)
        self.store: Store = open_store(store) if isinstance(store, str) else store
        # The host makes the name unique per mirror: the merge trusts revisions with this
        # author to hold content that came from this DIR.
        self.author = author or f"person via sync mirror ({socket.gethostname()}:{root})"
        # A pushing store wakes the loop itself (memfs.sync.push); polling is a safety net.
        self.poll = max(poll, PUSHED_POLL) if self.store.pushes_changes else poll
        self.rescan = rescan
        self.state_file = StateFile(state_path or default_state_path(root, self.store.url))
        self.debouncer = Debouncer(quiet)
        self.disk = Disk(root, max_file_bytes)
        self._delete_grace = delete_grace
        self._stop = threading.Event()
        self.ready = threading.Event()  # set after the first full pass
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._root_missing = False
        self._observer: BaseObserver | None = None
        self._handler: TreeHandler | None = None
        self._next_poll = self._next_rescan = 0.0

    # --- public API -----------------------------------------------------------------
    def run_once(self) -> None:
        """One reconciliation pass (waiting out delete corroboration), then return."""
        self._run(once=True)

    def run(self, on_ready: Callable[[], None] | None = None) -> None:
        """Sync until :meth:`stop` (from a signal handler or another thread);
        ``on_ready`` is called once the first pass is done and DIR is watched."""
        self._run(once=False, on_ready=on_ready)

    def start(self) -> None:
        """Run on a background thread; :attr:`ready` is set after the first pass."""
        self._thread = threading.Thread(target=self._thread_main, name="memfs-sync", daemon=True)
        self._thread.start()

    def stop_soon(self) -> None:
        """Ask the loop to flush, save and return; safe from a signal handler."""
        self._stop.set()
        self.debouncer.wake()

    def stop(self, timeout: float = 30.0) -> None:
        """Flush pending events, save the state, stop watching; joins the thread."""
        self.stop_soon()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise SyncError("the mirror did not stop in time")
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise SyncError(f"the mirror stopped on an error: {error}") from error

    def _thread_main(self) -> None:
        try:
            self._run(once=False)
        except BaseException as e:
            self._error = e
            log.exception("the mirror of %s stopped", self.root)
        finally:
            self.ready.set()

    def settled(self) -> bool:
        """True when nothing is pending: no path waiting, the store's feed all seen."""
        if not self.ready.is_set() or self.debouncer.next_due() is not None:
            return False
        engine = getattr(self, "engine", None)
        return (
            engine is not None
            and not engine.again
            and (self.state.last_seq >= self.store.last_seq())
        )

    # --- the loop -------------------------------------------------------------------
    def _run(self, *, once: bool, on_ready: Callable[[], None] | None = None) -> None:
        self.state_file.lock()
        try:
            self.state = self.state_file.load(self.root, self.store.url)
            if self.store.last_seq() < self.state.last_seq:
                # The feed went backwards: a new or restored store behind the same URL.
                # Its missing files are not deletions; merge afresh (nothing deleted).
                log.warning(
                    "the store %s is older than the last sync of %s (restored or"
                    " re-created?); merging afresh, nothing is deleted",
                    self.store.url, self.root,
                )  # fmt: skip
                self.state.entries.clear()
                self.state.last_seq = 0
                self.state.fresh = True
            self.engine = Engine(
                self.disk,
                self.store,
                self.state,
                author=self.author,
                delete_grace=self._delete_grace,
                settle=self.debouncer.quiet,
            )
            if self.state.clean:
                # From here on the record may lag the work, until the stop saves it clean.
                self.state.clean = False
                self.state_file.save(self.state)
            if not self._check_root():
                raise SyncError(f"cannot sync {self.root}: it does not exist")
            self._recover_leftovers()
            if not once:
                self._watch()
            stopped = False
            try:
                self._loop(once, on_ready)
                stopped = True
            finally:
                self._unwatch()
                self.state.clean = stopped
                self.state_file.save(self.state)
        finally:
            self.state_file.unlock()
            if self._own_store:
                with contextlib.suppress(MemfsError):
                    self.store.close()

    def _loop(self, once: bool, on_ready: Callable[[], None] | None) -> None:
        seq = self.store.last_seq()
        self.engine.reconcile((), [""], hash_all=False)
        self.state.last_seq = max(self.state.last_seq, seq)
        self.state_file.save(self.state)  # the first pass is the costly one to redo
        self.engine.dirty = False
        self.ready.set()
        if on_ready is not None:
            on_ready()
        if self.store.pushes_changes and not once:
            StoreWaker(self.store, self._remote_changed, self._stop).start()
        started = last_save = self._next_poll = time.monotonic()
        self._next_rescan = started + self.rescan
        while True:
            stopping = self._stop.is_set()
            now = time.monotonic()
            try:
                self._step(now, stopping=stopping, once=once)
            except StoreUnavailable as e:
                if isinstance(e, CorruptStore) or once:
                    raise
                # Busy or briefly unreachable: keep going. What was taken from the
                # debouncer is found again by the rescan, which comes early.
                self.engine.warn_once("", ("store", str(e)), "%s; retrying", e)
                self._next_rescan = now + 1.0
                if stopping:
                    return
                self._stop.wait(1.0)
                continue
            if self.engine.dirty and (stopping or now - last_save >= SAVE_EVERY):
                self.state_file.save(self.state)
                self.engine.dirty = False
                last_save = now
            if stopping:
                return
            next_due = self.debouncer.next_due()
            if once:
                if next_due is None and not self.engine.again:
                    return
                if now - started > ONCE_DEADLINE:
                    log.warning("giving up on files in %s that keep changing", self.root)
                    return
            wakes = [t for t in (next_due, None if once else self._next_poll) if t is not None]
            if not self.engine.again:
                self.debouncer.wait(max(0.0, min(wakes, default=now) - time.monotonic()))

    def _remote_changed(self) -> None:
        self._next_poll = 0.0
        self.debouncer.wake()

    def _step(self, now: float, *, stopping: bool, once: bool) -> None:
        if not self._check_root():
            return
        remote: set[str] = set()
        if not once and now >= self._next_poll:
            remote, more = self._poll_remote()
            self._next_poll = now if more else now + self.poll
        due = self.debouncer.take(flush=stopping)
        if now >= self._next_rescan:
            # A safety net for events inotify dropped (queue overflow): it trusts
            # unchanged stats, so it costs a walk, not a read of every file.
            self.engine.reconcile((), [""], hash_all=False)
            self._next_rescan = now + self.rescan
        self._reconcile(due, remote)
        if stopping:
            # Events still inside watchdog's queues would be lost with it: a last scan
            # finds those edits, taking files as they are now.
            self.engine.settle_ns = 0
            self.engine.reconcile((), [""], hash_all=False)

    def _reconcile(self, due: Due, remote: set[str]) -> None:
        engine = self.engine
        for src, dst, is_dir in due.moves:
            try_rename(engine, src, dst, is_dir)
        again, engine.again = engine.again, set()
        # A path a person is still editing waits for the debouncer; it is looked at
        # (both sides) once the edit is quiet.
        remote = {p for p in remote - due.paths if not self.debouncer.pending(p)}
        engine.reconcile(due.paths | again, due.subtrees, hash_all=True)
        if remote:
            engine.reconcile(remote, hash_all=False)
        for path, at in engine.later.items():
            self.debouncer.touch(path, at=at)
        engine.later.clear()

    def _poll_remote(self) -> tuple[set[str], bool]:
        limit = 1000
        changes = self.store.changes(since=self.state.last_seq, limit=limit)
        paths: set[str] = set()
        for change in changes:
            paths.add(change.path)
            if change.old_path is not None:
                paths.add(change.old_path)
        renamed = {c.path for c in changes if c.kind == "rename"}
        renamed |= {c.old_path for c in changes if c.kind == "rename" and c.old_path}
        for top in renamed:  # a rename moves a whole subtree with one record
            self.debouncer.touch(top, subtree=True, at=0.0)
        if changes:
            self.state.last_seq = changes[-1].seq
            self.engine.dirty = True
        return paths - renamed, len(changes) == limit

    # --- DIR itself -----------------------------------------------------------------
    def _check_root(self) -> bool:
        """False while DIR is missing. On a new DIR (deleted and re-made, or swapped),
        forget the local side so nothing is deleted from the store and everything
        missing comes back from it."""
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            if not self._root_missing:
                log.warning("%s is gone; waiting for it to come back", self.root)
            self._root_missing = True
            return False
        dir_id = (st.st_dev, st.st_ino)
        # A re-made directory may get the old inode number back, so the watcher's word
        # that the old one went away counts too.
        handler = self._handler
        gone = handler is not None and handler.root_gone.is_set()
        replaced = self._root_missing or gone
        if replaced or dir_id != self.state.dir_id:
            if self.state.dir_id is not None and self.state.entries:
                log.warning(
                    "%s was deleted or replaced; merging it afresh with the store (files"
                    " missing from it are restored, none are deleted from the store)",
                    self.root,
                )
                self.state.entries.clear()
                self.engine.trust_own_heads = False
            self.state.dir_id = dir_id
            self.engine.dirty = True
            self._root_missing = False
            if replaced and self._observer is not None:
                self._unwatch()  # the old inotify watch died with the old directory
                self._watch()
            self.debouncer.touch("", subtree=True, at=0.0)
        return True

    def _watch(self) -> None:
        self._observer, self._handler = watch_tree(self.root, self.debouncer)

    def _unwatch(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join()

    def _recover_leftovers(self) -> None:
        """Clean up after a killed mirror: temp files go; a set-aside file is deleted
        only if its content is known to be safe elsewhere, else put back."""
        for path in self.disk.leftovers():
            name = os.path.basename(path)
            if name.startswith(TEMP_PREFIX):
                os.unlink(path)
                continue
            original = name[len(ASIDE_PREFIX) :].partition("-")[2]
            final = os.path.join(os.path.dirname(path), original)
            rel = os.path.relpath(final, self.root)
            content = sha256(self.disk.read_path(path))
            record = self.state.entries.get(rel)
            try:
                current = sha256(self.disk.read_path(final))
            except OSError:
                current = None
            if content in (current, record.sha256 if record else None):
                os.unlink(path)
            else:
                kept = self.disk.keep(path, final)
                log.warning("recovered %s from an interrupted sync as %s", rel, kept)
