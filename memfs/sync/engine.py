"""Applying the decision table: one reconcile pass over a set of paths, both sides.

:class:`Engine` looks at each path's three versions (sync state, DIR, store), asks
:func:`memfs.sync.merge.decide` what to do and does it, advancing the sync state only
after both sides hold the result (merges and conflicts: :mod:`memfs.sync.both`). It
never waits: work that must wait (a delete not yet corroborated, a file still being
written or held open for writing, a store write that lost a race) goes back to the
caller as paths to look at again, via ``later`` and ``again``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from collections.abc import Iterable

from memfs.errors import (
    AlreadyExists,
    CapExceeded,
    Conflict,
    DirectoryNotEmpty,
    NotFound,
    PathError,
    StoreError,
    TooLarge,
)
from memfs.paths import parent_of
from memfs.store.base import Entry, Store
from memfs.sync.bases import Bases
from memfs.sync.both import BothSides
from memfs.sync.disk import Busy, Disk, LocalFile, sha256
from memfs.sync.look import Look, Skip
from memfs.sync.merge import Action, SideKind, Version, decide, is_wipe
from memfs.sync.names import ignored_path, refused_path
from memfs.sync.state import Record, SyncState

log = logging.getLogger("memfs.sync")

# A file a tree cap keeps out of the store is tried again this often (the log line is
# written once per content): room appears when something is deleted, by anyone.
CAP_RETRY_S = 2.0
# What a file system answers that does not mend itself in a second (read-only, full,
# refused): tried again at the next rescan, not every second. A one-off pass ends then.
LASTING_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM})


class Engine(BothSides):
    """Reconciles paths between a directory and a store; not thread-safe (one worker)."""

    def __init__(
        self,
        disk: Disk,
        store: Store,
        state: SyncState,
        *,
        author: str,
        delete_grace: float,
        settle: float,
    ) -> None:
        self.disk = disk
        self.store = store
        self.state = state
        self.author = author
        self.delete_grace = delete_grace
        self.settle_ns = int(settle * 1e9)
        self.dirty = False  # state changed since the last save
        self.later: dict[str, float] = {}  # path -> monotonic time to look again
        self.again: set[str] = set()  # look again at once (lost a race)
        self._missing_since: dict[str, float] = {}
        self._last_new_missing = 0.0
        self._warned: set[tuple[str, object]] = set()
        self.capped: set[str] = set()  # files a tree cap keeps out of the store, for now
        self.trust_own_heads = not state.fresh
        # A state saved by a clean stop is exact; one a kill left may lag the work.
        self.stale = set() if state.clean else set(state.entries)
        self.bases = Bases()

    # --- entry point ----------------------------------------------------------------
    def reconcile(
        self, paths: Iterable[str], subtrees: Iterable[str] = (), *, hash_all: bool = True
    ) -> None:
        """Bring every path in ``paths`` and below each of ``subtrees`` in sync.

        ``hash_all``: re-read files even if their stat matches the record (events say a
        write happened; scans trust an unchanged stat like git does).
        """
        todo = set(paths)
        for top in subtrees:
            todo |= self._under(top)
        todo.discard("")
        looks: list[tuple[Look, Action]] = []
        for path in sorted(todo):
            if self._skipped(path):
                continue
            try:
                look = self._look(path, hash_all=hash_all)
            except Skip:
                continue
            looks.append((look, self._decide(look)))
        self._missing_seen(looks)
        if any(a is Action.DELETE_REMOTE for _, a in looks) and self._deletions_quiet():
            # One batch for everything seen missing, whenever its events came in, so a
            # wipe cannot be cut into small batches that each look like a normal delete.
            seen = {lk.path for lk, _ in looks}
            for path in sorted(set(self._missing_since) - seen):
                with contextlib.suppress(Skip):
                    look = self._look(path, hash_all=hash_all)
                    looks.append((look, self._decide(look)))
            looks.sort(key=lambda item: item[0].path)
        deletes = [(lk, a) for lk, a in looks if a in (Action.DELETE_LOCAL, Action.DELETE_REMOTE)]
        ready = self._corroborated([lk.path for lk, a in deletes if a is Action.DELETE_REMOTE])
        for look, action in looks:
            if action not in (Action.DELETE_LOCAL, Action.DELETE_REMOTE):
                self._guard(look, action)
        for look, action in reversed(deletes):  # children before their directory
            if action is Action.DELETE_LOCAL or look.path in ready:
                self._guard(look, action)

    def _decide(self, look: Look) -> Action:
        base = self.state.entries.get(look.path)
        # The store's head came from this DIR (a push whose state save a kill lost): it
        # is a base DIR has moved on from, not a change to merge against.
        base_version = look.remote if look.ours else base.version if base else None
        return decide(base_version, look.local, look.remote)

    def _under(self, top: str) -> set[str]:
        found = {top} | set(self.state.under(top))
        found |= {rel for rel, _ in self.disk.scan(top)}
        with contextlib.suppress(NotFound, StoreError):
            found |= {e.path for e in self.store.walk(top)}
        return found

    def _skipped(self, path: str) -> bool:
        if ignored_path(path):
            return True
        problem = refused_path(path)
        if problem is not None:
            self.warn_once(path, "refused", "not syncing %s: %s", path, problem)
            return True
        return False

    # --- corroborating deletes ------------------------------------------------------
    def _missing_seen(self, looks: list[tuple[Look, Action]]) -> None:
        now = time.monotonic()
        for look, action in looks:
            if action is not Action.DELETE_REMOTE:
                self._missing_since.pop(look.path, None)  # back, or no longer ours to delete
            elif look.path not in self._missing_since:
                self._missing_since[look.path] = now
                self._last_new_missing = now

    def _deletions_quiet(self) -> bool:
        """True once no file has newly vanished for the grace period."""
        return time.monotonic() >= self._last_new_missing + self.delete_grace

    def _corroborated(self, paths: list[str]) -> set[str]:
        """The local deletions that are real: missing past the grace period, with no new
        vanishing since, and not a wipe (then they are restored from the store)."""
        for p in paths:
            self._missing_since.setdefault(p, time.monotonic())
        if not paths:
            return set()
        if not self._deletions_quiet():
            due = self._last_new_missing + self.delete_grace
            for p in paths:
                self.later[p] = due
            return set()
        files = sum(1 for p in paths if self.state.entries[p].kind == "file")
        if is_wipe(files, self.state.files()):
            log.warning(
                "%d of the %d synced files vanished from %s at once; treating it as a wiped"
                " or replaced folder and restoring them from the store instead of deleting"
                " them there",
                files, self.state.files(), self.disk.root,
            )  # fmt: skip
            for p in paths:
                self._missing_since.pop(p, None)
                self.state.entries.pop(p, None)  # base gone: the merge now pulls it back
                self.again.add(p)
            self.dirty = True
            return set()
        for p in paths:
            self._missing_since.pop(p, None)
        return set(paths)

    # --- doing ----------------------------------------------------------------------
    def _guard(self, look: Look, action: Action) -> None:
        try:
            self._apply(look, action)
            self.capped.discard(look.path)
        except (Conflict, AlreadyExists):
            self.again.add(look.path)  # the store moved under us: decide again
        except Busy:
            # Open for writing: replacing or removing it now would lose what the writer
            # writes next. Looked at again once quiet, and it is read only once closed.
            self.later[look.path] = time.monotonic() + max(self.settle_ns / 1e9, 0.01)
        except DirectoryNotEmpty:
            # Its children are still being decided (a delete not yet corroborated, or new
            # ones to pull); come back when they are.
            self.later[look.path] = time.monotonic() + 2 * self.delete_grace
        except TooLarge as e:
            key: tuple[object, ...] = ("too-large", look.local.sha256 if look.local else None)
            self.warn_once(look.path, key, "not syncing %s: %s", look.path, e)
        except CapExceeded as e:
            # The person's file stays as it is on disk; it goes in once there is room.
            key = ("cap", e.cap, look.local.sha256 if look.local else None)
            self.warn_once(
                look.path, key,
                "not syncing %s yet: the store is at its %s cap of %d (it would hold %d);"
                " delete files or raise the cap (?%s=N in the store URL); retrying",
                look.path, e.cap, e.limit, e.would, e.cap,
            )  # fmt: skip
            self.capped.add(look.path)
            self.later[look.path] = time.monotonic() + CAP_RETRY_S
        except PathError as e:
            self.warn_once(look.path, "refused", "not syncing %s: %s", look.path, e)
        except (OSError, StoreError) as e:
            # By errno: the message of a failed save names its fresh temporary file.
            lasting = isinstance(e, OSError) and e.errno in LASTING_ERRNOS
            key = ("err", e.errno if isinstance(e, OSError) else str(e))
            self.warn_once(look.path, key, "cannot sync %s now: %s", look.path, e)
            if not lasting:
                self.later[look.path] = time.monotonic() + 1.0

    def _apply(self, look: Look, action: Action) -> None:
        path, base = look.path, self.state.entries.get(look.path)
        if action not in (Action.NOTHING, Action.RECORD, Action.FORGET):
            log.info("%s %s", action.value, path)
        if action is Action.NOTHING:
            if base is not None:
                self._record(look)  # same content; refresh rev and stat
        elif action is Action.RECORD:
            self._record(look)
            self._conflict_over(path)
        elif action is Action.FORGET:
            self._forget(path)
        elif action is Action.PUSH:
            self._push(look)
        elif action is Action.PULL:
            self._pull(look)
        elif action is Action.DELETE_REMOTE:
            self._delete_remote(look)
        elif action is Action.DELETE_LOCAL:
            self._delete_local(look, base)
        elif action is Action.MERGE:
            self._merge(look)
        elif action is Action.CONFLICT:
            self._conflict(look)

    def _record(self, look: Look, *, entry: Entry | None = None) -> None:
        entry = entry or look.remote_entry
        local = look.local
        if local is None or entry is None:
            return
        file = look.local_file
        st = file.st if file else look.local_st
        data = file.data if file else None
        self._record_content(look.path, local.kind, entry.rev, local.sha256, st, data)

    def _record_content(
        self,
        path: str,
        kind: SideKind,
        rev: int,
        sha: str | None,
        st: os.stat_result | None,
        data: bytes | None = None,
    ) -> None:
        """Both sides hold ``sha`` at ``path`` (the store as revision ``rev``; DIR as the
        file ``st`` describes, if given, so an unchanged one need not be re-read).
        ``data``: that content, if in hand, kept as the base of a next merge."""
        before = self.state.entries.get(path)
        if sha is not None and data is not None:
            self.bases.keep(path, sha, data)
        elif before is None or before.sha256 != sha:
            self.bases.forget(path)
        rec = Record(kind=kind, rev=rev, sha256=sha)
        if st is not None and kind == "file":
            rec.size, rec.mtime_ns, rec.ctime_ns, rec.ino = (
                st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
            )  # fmt: skip
        self.stale.discard(path)
        if before != rec:
            self.state.entries[path] = rec
            self.dirty = True

    def _forget(self, path: str) -> None:
        self.stale.discard(path)
        self.bases.forget(path)
        self._conflict_over(path)
        if self.state.entries.pop(path, None) is not None:
            self.dirty = True
        # A directory whose removal waited for its children can go now.
        parent = parent_of(path)
        if parent:
            self.again.add(parent)

    def _record_parents(self, path: str) -> None:
        # Parents made implicitly on either side must be in the base too, or a later
        # rm -r would look like a brand-new remote directory and come back.
        parent = parent_of(path)
        while parent:
            if parent in self.state.entries:
                break
            self.state.entries[parent] = Record(kind="dir", rev=0)
            self.dirty = True
            parent = parent_of(parent)

    def _push(self, look: Look) -> None:
        path, entry = look.path, look.remote_entry
        assert look.local is not None
        if look.local.kind == "dir":
            if entry is not None and entry.kind == "file":
                self._conflict(look)
                return
            new = self.store.mkdir(path, author=self.author, parents=True, exist_ok=True)
        else:
            assert look.local_file is not None
            if entry is not None and entry.kind == "dir":
                self.store.delete(path, author=self.author)  # only if empty, else decide again
                entry = None
            new = self.store.write(
                path,
                look.local_file.data,
                author=self.author,
                expected_rev=entry.rev if entry is not None else 0,
                parents=True,
            )
            self._conflict_over(path)
        self._record(look, entry=new)
        self._record_parents(path)

    def _pull(self, look: Look) -> None:
        path, entry = look.path, look.remote_entry
        assert entry is not None and look.remote is not None
        if look.remote.kind == "dir":
            if look.local is not None and look.local.kind == "file":
                # Pulled only if the file is unchanged: it may go, if still as it was.
                assert look.local.sha256 is not None
                if not self.disk.remove(path, look.local.sha256):
                    self.again.add(path)
                    return
            self.disk.makedirs(path)
            look.local, look.local_st = Version.dir(), self.disk.lstat(path)
            self._record(look)
            self._record_parents(path)
            return
        if look.local is not None and look.local.kind == "dir":
            if not self.disk.rmdir(path):
                self._conflict(look)
                return
            look.local = None
        if look.remote_data is None:
            self._read_remote(look)
            if look.remote_entry is None or look.remote_data is None:
                self.again.add(path)
                return
        data = look.remote_data
        expected = look.local.sha256 if look.local is not None else None
        put = self._put_local(path, data, expected, entry.mode)
        if put is None:
            self.again.add(path)  # the person saved meanwhile: decide again
            return
        content, st = put
        if content != data:
            # A save that raced the pull was merged in: DIR now holds a person's edit of
            # the pulled revision, which the next pass pushes.
            self._record_content(path, "file", entry.rev, sha256(data), None, data)
            self.again.add(path)
        else:
            look.local, look.local_file = (
                Version.file(sha256(data)),
                LocalFile(data, sha256(data), st),
            )
            self._record(look)
        self._record_parents(path)

    def _delete_remote(self, look: Look) -> None:
        path, entry = look.path, look.remote_entry
        assert entry is not None
        # Only the revision this look judged unchanged may go, checked in the delete's
        # own transaction: an agent's write landing after the look is never lost.
        try:
            self.store.delete(path, author=self.author, expected_rev=entry.rev)
        except NotFound:
            pass
        except Conflict:
            self._edit_beats_delete(path)
            return
        self._forget(path)

    def _edit_beats_delete(self, path: str) -> None:
        # As in the merge table's "deleted locally, edited remotely": the store's version
        # comes back to DIR, the person's delete is dropped.
        try:
            look = self._look(path, hash_all=True)
        except Skip:
            return  # _look has arranged a retry, or warned
        if self._decide(look) is not Action.PULL:
            self.again.add(path)  # same content rewritten, or DIR changed too: decide again
            return
        log.warning(
            "%s changed in the store while its deletion from %s was being synced; an edit"
            " beats a delete, so the store's version is back",
            path, self.disk.root,
        )  # fmt: skip
        self._pull(look)

    def _delete_local(self, look: Look, base: Record | None) -> None:
        path = look.path
        assert base is not None and look.local is not None
        if look.local.kind == "dir":
            if self.disk.rmdir(path):
                self._forget(path)
            return
        assert look.local.sha256 is not None
        if self.disk.remove(path, look.local.sha256):
            self._forget(path)
        else:
            self.again.add(path)
