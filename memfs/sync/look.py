"""Looking at one path on both sides: what DIR and the store hold right now.

Cheap where it can be: an unchanged stat on disk reuses the recorded hash (scans only;
an event always re-reads), and an unchanged store revision reuses the recorded one; a
changed revision costs one indexed query for its hash and author, and content is only
read when it is about to be pulled.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass

from memfs.errors import NotFound
from memfs.store.base import Entry, Store
from memfs.sync.disk import Disk, LocalFile, Oversize, Unstable, sha256
from memfs.sync.merge import Version
from memfs.sync.state import Record, SyncState

log = logging.getLogger("memfs.sync")


@dataclass(slots=True)
class Look:
    """What one path holds on each side right now."""

    path: str
    local: Version | None = None
    local_file: LocalFile | None = None
    local_st: os.stat_result | None = None
    remote: Version | None = None
    remote_entry: Entry | None = None
    remote_data: bytes | None = None
    ours: bool = False  # the store's current revision was written by this mirror


class Skip(Exception):
    """This path cannot be synced now (warned already); leave it alone."""


class Looker:
    """The looking half of :class:`memfs.sync.engine.Engine`."""

    disk: Disk
    store: Store
    state: SyncState
    author: str
    settle_ns: int
    later: dict[str, float]
    again: set[str]
    # Whether a store head by this mirror may stand in for a missing base (off while the
    # base is empty for a reason other than a lost save: first run, DIR replaced, ...).
    trust_own_heads: bool

    _warned: set[tuple[str, object]]

    def warn_once(self, path: str, key: object, msg: str, *args: object) -> None:
        """Warn about ``path`` once per ``key`` (e.g. per size and mtime of a big file)."""
        if (path, key) not in self._warned:
            self._warned.add((path, key))
            log.warning(msg, *args)

    # --- looking --------------------------------------------------------------------
    def _look(self, path: str, *, hash_all: bool) -> Look:
        look = Look(path)
        base = self.state.entries.get(path)
        try:
            st = self.disk.lstat(path)
        except OSError as e:
            # Unreadable is not missing: never let a permission problem become a delete.
            self.warn_once(path, ("stat", e.errno), "cannot look at %s: %s", path, e.strerror)
            raise Skip(path) from None
        look.local_st = st
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                look.local = Version.dir()
            elif stat.S_ISREG(st.st_mode):
                if not hash_all and base and base.kind == "file" and base.same_stat(st):
                    look.local = base.version
                else:
                    look.local_file = self._read_local(path, st, hash_all=hash_all)
                    look.local = Version.file(look.local_file.sha256)
            else:
                kind = "symlink" if stat.S_ISLNK(st.st_mode) else "special file"
                self.warn_once(path, kind, "not syncing %s: it is a %s", path, kind)
                raise Skip(path)
        try:
            entry = self.store.stat(path)
        except NotFound:
            entry = None
        look.remote_entry = entry
        if entry is not None:
            if entry.kind == "dir":
                look.remote = Version.dir()
            elif entry.kind == "file":
                if base and base.kind == "file" and base.rev == entry.rev:
                    look.remote = base.version
                else:
                    self._remote_head(look, base)
            else:
                self.warn_once(
                    path, "rsymlink", "not syncing %s: it is a symlink in the store", path
                )
                raise Skip(path)
        return look

    def _read_local(self, path: str, st: os.stat_result, *, hash_all: bool) -> LocalFile:
        try:
            # A scan has no event saying the write finished, so it leaves young files to
            # the watcher (or the next pass).
            return self.disk.read(path, min_age_ns=0 if hash_all else self.settle_ns)
        except Unstable:
            self.later[path] = time.monotonic() + self.settle_ns / 1e9
            raise Skip(path) from None
        except Oversize as e:
            self.warn_once(
                path, ("big", st.st_size, st.st_mtime_ns),
                "not syncing %s: %d bytes is over the limit of %d",
                path, e.size, self.disk.max_file_bytes,
            )  # fmt: skip
            raise Skip(path) from None
        except FileNotFoundError:
            self.again.add(path)
            raise Skip(path) from None
        except OSError as e:
            self.warn_once(path, ("os", e.errno), "cannot read %s: %s", path, e.strerror)
            raise Skip(path) from None

    def _remote_head(self, look: Look, base: Record | None) -> None:
        try:
            head = self.store.history(look.path, limit=1)[0]
        except NotFound:
            look.remote_entry, look.remote = None, None
            return
        if look.remote_entry is None or head.rev != look.remote_entry.rev:
            self.again.add(look.path)  # written between the two queries
            raise Skip(look.path)
        look.remote = Version.file(head.sha256)
        if head.author == self.author:
            # Written by this mirror, so it came from DIR. With a base, DIR has moved on
            # from it; with none (a create whose save a kill lost), only if DIR has a
            # file there: a missing one must come back, never be deleted on this guess.
            local_file = look.local is not None and look.local.kind == "file"
            look.ours = base.kind == "file" if base else local_file and self.trust_own_heads

    def _read_remote(self, look: Look) -> None:
        try:
            data, entry = self.store.read(look.path)
        except NotFound:
            look.remote_entry, look.remote = None, None
            return
        look.remote_entry, look.remote_data = entry, data
        look.remote = Version.file(sha256(data))
