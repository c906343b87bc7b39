"""When both sides changed a file: merge the two edits, or keep both versions.

The rules are the ones every writer of a store follows (:mod:`memfs.store.rebase`):

- **Merge** (:attr:`~memfs.sync.merge.Action.MERGE`). The base is the content both sides
  held at the last sync, read back from the store by its hash; the person's edit is the
  file in DIR, the other the store's head. :func:`~memfs.sync.merge.merge_files` puts
  both in one content (appends on both sides keep both tails, the store's first; edits
  of different lines both apply). It goes to DIR first, replacing exactly the file that
  was read (a save made meanwhile makes the mirror decide again; one that reached the
  old file in its last instant is merged in too), then to the store with
  compare-and-set on the head it was merged with: a commit there meanwhile makes the
  mirror merge again, from that head, which DIR now holds. DIR first keeps the sync
  state's two promises: the recorded base is content DIR's file descends from, and a
  store head by this mirror holds content DIR held (which :mod:`memfs.sync.look`
  relies on after a kill).
- **No base to vouch for.** After a kill the saved state may lag the work by a second
  (:mod:`memfs.sync.state`), and a merge against too old a base would repeat lines. So
  until a path has been synced again by this run (or the state was saved by a clean
  stop), both sides' edits of it are a conflict, as they are with no base at all (a
  first run, the base no longer retained).
- **Conflict** (two edits of one line, no base, a file against a directory). The
  store's version keeps the name; the person's is kept beside it as a conflict copy
  (:func:`~memfs.store.rebase.conflict_name`), in DIR first, then in the store. One copy
  per conflict: while it lasts, until the person's side is taken under the name (pushed
  or merged) or anyone edits, moves or deletes the copy, each new clash on the path
  updates that copy (its history keeps every version) instead of making another.
"""

from __future__ import annotations

import contextlib
import logging
import os
from datetime import datetime

from memfs.errors import CapExceeded, Conflict, NotFound, StoreError
from memfs.store.base import Entry
from memfs.sync.bases import Bases
from memfs.sync.disk import Busy, LocalFile, sha256
from memfs.sync.look import Look, Looker
from memfs.sync.merge import SideKind, Version, merge_files
from memfs.sync.names import conflict_name
from memfs.sync.state import OpenConflict

log = logging.getLogger("memfs.sync")


class BothSides(Looker):
    """The merging and conflict-keeping part of :class:`memfs.sync.engine.Engine`."""

    # Paths whose recorded base may lag what both sides last held (see the docstring).
    stale: set[str]
    bases: Bases  # recent bases in memory, before the store's history is asked

    # --- provided by memfs.sync.engine.Engine -------------------------------------------
    def _pull(self, look: Look) -> None:
        raise NotImplementedError

    def _record(self, look: Look, *, entry: Entry | None = None) -> None:
        raise NotImplementedError

    def _record_content(
        self,
        path: str,
        kind: SideKind,
        rev: int,
        sha: str | None,
        st: os.stat_result | None,
        data: bytes | None = None,
    ) -> None:
        raise NotImplementedError

    def _forget(self, path: str) -> None:
        raise NotImplementedError

    def _under(self, top: str) -> set[str]:
        raise NotImplementedError

    # --- merging ------------------------------------------------------------------------
    def _merge(self, look: Look) -> None:
        path = look.path
        assert look.local_file is not None, "an edited file was read"
        base = self._base_content(path)
        if base is None:
            self._conflict(look)
            return
        if look.remote_data is None:
            self._read_remote(look)
        entry, remote = look.remote_entry, look.remote_data
        if entry is None or remote is None:
            self.again.add(path)  # deleted since the look: decide again
            return
        merged = merge_files(base, look.local_file.data, remote)
        if merged is None:
            self._conflict(look)
            return
        put = self._put_local(path, merged, look.local_file.sha256, entry.mode)
        if put is None:
            self.again.add(path)  # the person saved meanwhile: merge that
            return
        content, st = put
        # DIR holds the merge now, built on the store's head: that is the base until the
        # store takes it (a Conflict below means merging again, from the newer head).
        self._record_content(path, "file", entry.rev, sha256(remote), None, remote)
        if content != remote:
            entry = self.store.write(path, content, author=self.author, expected_rev=entry.rev)
        self._record_content(path, "file", entry.rev, sha256(content), st, content)
        self._conflict_over(path)
        log.info(
            "merged %s: the edits from %s and from the store are both in it", path, self.disk.root
        )

    def _base_content(self, path: str) -> bytes | None:
        """What both sides held at the last sync, if the mirror can vouch for it."""
        rec = self.state.entries.get(path)
        if rec is None or rec.kind != "file" or rec.sha256 is None or path in self.stale:
            return None
        held = self.bases.get(path, rec.sha256)
        if held is not None:
            return held
        try:
            data = self.store.read_blob(rec.sha256)
        except NotFound:
            try:
                data = self.store.read_revision(path, rec.rev)
            except NotFound:
                return None  # no longer retained, or redacted: nothing to merge against
        return data if sha256(data) == rec.sha256 else None

    def _put_local(
        self, path: str, data: bytes, expected_sha: str | None, mode: int
    ) -> tuple[bytes, os.stat_result] | None:
        """Put ``data`` at ``path`` in DIR in place of the file with ``expected_sha``
        (None: none). A save that reached the old file in the replace's last instant is
        merged in, or kept as a conflict copy. Returns what DIR holds now and its stat,
        or None when the file was not as expected (nothing changed)."""
        done = self.disk.replace(path, data, expected_sha, mode=mode or 0o600)
        if done is None:
            return None
        content, st, displaced = data, done.st, done.displaced
        if displaced is not None:
            merged = merge_files(done.before, displaced, content)
            if merged is not None:
                with contextlib.suppress(Busy):
                    redo = self.disk.replace(path, merged, sha256(content), mode=mode or 0o600)
                    if redo is not None:
                        content, st, displaced = merged, redo.st, redo.displaced
            if displaced is not None:
                self._keep_local_copy(path, displaced)
        return content, st

    # --- conflicts ----------------------------------------------------------------------
    def _conflict(self, look: Look) -> None:
        """The store's version keeps the name, the local one is kept beside it (in DIR
        and in the store) under a conflict name: the path's open copy, or a new one."""
        path = look.path
        assert look.local is not None and look.remote is not None
        if look.local.kind == "dir":
            # A whole local directory where the store has a file: move it aside in one
            # rename; the next passes push it under its new name and pull the file.
            copy = self._copy_path(path)
            os.rename(self.disk.abs(path), self.disk.abs(copy))
            self._forget(path)
            for old in self.state.under(path):
                self._forget(old)
            self.again |= {path, *self._under(copy)}
            new = True
        else:
            assert look.local_file is not None
            copy, new = self._keep_conflicting(path, look.local_file)
            if look.remote.kind == "file":
                self._pull(look)
            elif self.disk.remove(path, look.local_file.sha256):
                self.disk.makedirs(path)
                look.local, look.local_st = Version.dir(), self.disk.lstat(path)
                self._record(look)
            else:
                self.again.add(path)
        if new:
            log.warning(
                "conflict on %s: both sides changed it; the store's version keeps the name,"
                " the version from %s is kept beside it as %s",
                path, self.disk.root, copy,
            )  # fmt: skip
        else:
            log.info(
                "conflict on %s goes on: %s holds the newer version from %s",
                path,
                copy,
                self.disk.root,
            )

    def _keep_conflicting(self, path: str, local: LocalFile) -> tuple[str, bool]:
        """Keep the person's version of ``path`` as its conflict copy; returns the copy
        and whether it is a new one."""
        open_ = self.state.conflicts.get(path)
        if open_ is not None:
            rev = self._update_copy(open_, local.data)
            if rev is not None:
                self.state.conflicts[path] = OpenConflict(open_.copy, rev)
                self.dirty = True
                return open_.copy, False
        copy = self._copy_path(path)
        # The copy goes to disk first: a copy the store then refuses (a tree cap) would
        # be made again on every retry, so room is checked before.
        self._check_room(copy, len(local.data))
        rev = self._keep_local_copy(path, local.data, copy=copy)
        self.state.conflicts[path] = OpenConflict(copy, rev)
        self.dirty = True
        return copy, True

    def _update_copy(self, open_: OpenConflict, data: bytes) -> int | None:
        """Put ``data`` in the open conflict copy, if it is still as the mirror left it
        on both sides: the copy's revision now. None (make a new copy) if anyone changed,
        moved or deleted it."""
        copy = open_.copy
        rec = self.state.entries.get(copy)
        if rec is None or rec.kind != "file" or rec.sha256 is None or rec.rev != open_.rev:
            return None
        try:
            entry = self.store.stat(copy)
        except NotFound:
            return None
        if entry.kind != "file" or entry.rev != open_.rev:
            return None
        if rec.sha256 == sha256(data):
            return entry.rev
        try:
            # Checked against what the mirror put there: an edit of the copy in DIR stays.
            put = self._put_local(copy, data, rec.sha256, entry.mode)
        except Busy:
            return None
        if put is None:
            return None
        content, st = put
        try:
            entry = self.store.write(copy, content, author=self.author, expected_rev=entry.rev)
        except Conflict:
            # Written in the store this instant: DIR's copy holds the person's version,
            # and the copy's own next pass merges the two.
            self.again.add(copy)
            return entry.rev
        self._record_content(copy, "file", entry.rev, sha256(content), st)
        return entry.rev

    def _conflict_over(self, path: str) -> None:
        """The person's side of ``path`` went in under its name: its next clash is a new
        conflict, with a new copy."""
        if self.state.conflicts.pop(path, None) is not None:
            self.dirty = True

    def _check_room(self, path: str, size: int) -> None:
        """CapExceeded if a new file of ``size`` bytes would pass a tree cap now."""
        store = self.store
        if store.max_files is None and store.max_tree_bytes is None:
            return
        usage = store.usage()
        if store.max_files is not None and usage.files + 1 > store.max_files:
            raise CapExceeded(
                f"a conflict copy {path} would make {usage.files + 1} files",
                path=path, cap="max_files", limit=store.max_files, would=usage.files + 1,
            )  # fmt: skip
        if store.max_tree_bytes is not None and usage.bytes + size > store.max_tree_bytes:
            raise CapExceeded(
                f"a conflict copy {path} would make {usage.bytes + size} bytes",
                path=path, cap="max_tree_bytes", limit=store.max_tree_bytes,
                would=usage.bytes + size,
            )  # fmt: skip

    def _copy_path(self, path: str) -> str:
        parent, _, name = path.rpartition("/")
        taken = {e.name for e in self._remote_children(parent)}
        with contextlib.suppress(OSError):
            taken |= set(os.listdir(self.disk.abs(parent)))
        copy_name = conflict_name(name, datetime.now(), "local", taken)
        return f"{parent}/{copy_name}" if parent else copy_name

    def _remote_children(self, parent: str) -> list[Entry]:
        try:
            return self.store.listdir(parent)
        except StoreError:
            return []

    def _keep_local_copy(self, path: str, data: bytes, *, copy: str | None = None) -> int:
        """Keep ``data`` (the DIR side's version of ``path``) as a conflict copy: first on
        disk, so it is safe before anything else happens, then in the store. Returns
        the copy's revision."""
        copy = copy or self._copy_path(path)
        done = self.disk.replace(copy, data, None)
        new = self.store.write(copy, data, author=self.author, expected_rev=0, parents=True)
        if done is not None:
            self._record_content(copy, "file", new.rev, sha256(data), done.st)
        return new.rev
