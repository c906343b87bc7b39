"""The store's caps, checked by the call that would pass them (promise 2 of
:mod:`memfs.mount.writes`): the file-size cap (EFBIG) and the tree caps (EDQUOT:
``max_tree_bytes`` by the write or truncate that would grow the tree past it,
``max_files`` by the create), counting what is pending on top of the store's usage."""

from __future__ import annotations

import errno
import time

from memfs.mount.buffer import Snapshot, Tally
from memfs.store.base import Store, Usage

# How long the store's usage is trusted for the cap checks. The mount's namespace
# changes and every change the follower sees forget it, and its own commits move their
# growth into it, so this bounds only a store changed by others with no follower.
USAGE_TTL_S = 1.0


class Caps:
    """The checks, over ``store``'s usage and the pending buffers' ``tally``."""

    def __init__(self, store: Store, tally: Tally) -> None:
        self.store = store
        self._tally = tally
        self._usage: tuple[float, Usage] | None = None

    def forget_usage(self) -> None:
        """The store's usage moved (a mutation here, a change seen on the feed)."""
        self._usage = None

    def counted(self, snap: Snapshot) -> None:
        """Move a landed snapshot's growth from the pending sums to the cached usage (no
        query: a burst of small files commits one after another)."""
        cached = self._usage
        if cached is not None:
            at, u = cached
            grown = Usage(u.files + snap.created, u.dirs, u.bytes + len(snap.data) - snap.base_size)
            self._usage = (at, grown)

    def _store_usage(self) -> Usage:
        now = time.monotonic()
        cached = self._usage
        if cached is not None and now - cached[0] < USAGE_TTL_S:
            return cached[1]
        usage = self.store.usage()
        self._usage = (now, usage)
        return usage

    def check_size(self, path: str, size: int) -> None:
        """EFBIG if ``path`` would be ``size`` bytes, past the store's file-size cap."""
        cap = self.store.max_file_bytes
        if cap is not None and size > cap:
            raise OSError(errno.EFBIG, f"{path} would be {size} bytes; the limit is {cap}")

    def check_tree_bytes(self, path: str, growth: int) -> None:
        """EDQUOT if growing ``path`` by ``growth`` bytes would pass max_tree_bytes."""
        cap = self.store.max_tree_bytes
        if cap is None or growth <= 0:
            return
        used = self._store_usage().bytes + self._tally.bytes - self._tally.base_bytes
        if used + growth > cap:
            raise OSError(
                errno.EDQUOT,
                f"{path}: the memory would hold {used + growth} bytes; the store's"
                f" max_tree_bytes is {cap}",
            )

    def check_files(self, path: str) -> None:
        """EDQUOT if one more file would pass max_files."""
        cap = self.store.max_files
        if cap is None:
            return
        used = self._store_usage().files + self._tally.new_files
        if used + 1 > cap:
            raise OSError(
                errno.EDQUOT,
                f"{path}: the memory holds {used} files; the store's max_files is {cap}",
            )
