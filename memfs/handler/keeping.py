"""The store behind the handler's directory, when there is one: its caps and last use.

The handler works on a directory (a memfs mount, or a plain one). When it is given the
:class:`~memfs.store.base.Store` that directory shows (``store``, with ``prefix`` the
directory's place in it: ``""`` for a mountpoint), it does two more things:

- **Caps, refused with numbers.** Before a write it compares what the memory would hold
  with the store's ``max_tree_bytes`` and ``max_files`` (:meth:`Store.usage` reads
  counters), so the model hears the limit, the use and what to do. The mount refuses
  such writes too (EDQUOT), and a race the check lost ends there: the handler then
  answers with the same numbers, read after the refusal.
- **Model reads count as use.** ``view`` of a file records a use with
  :meth:`Store.mark_used` (``memfs expire`` deletes files unused for long). A directory
  listing marks nothing: the model saw names, not memories, and listing ``/memories``
  at the start of every task would otherwise keep every file alive forever.

Without a store (a plain ``--root DIR``) neither happens: the per-file cap still holds,
the tree caps are the directory's file system's business, and no use is recorded (there
is no store to expire from).
"""

from __future__ import annotations

import logging

from memfs.errors import MemfsError
from memfs.handler import strings
from memfs.paths import MemPath
from memfs.store.base import Store

log = logging.getLogger(__name__)


class Keeping:
    """Caps and last use for one handler; a no-op without a store."""

    def __init__(self, store: Store | None, prefix: str = "") -> None:
        self.store = store
        self.prefix = prefix.strip("/")

    def _rel(self, path: MemPath) -> str:
        if not self.prefix:
            return path.rel
        return f"{self.prefix}/{path.rel}" if path.rel else self.prefix

    def used(self, path: MemPath) -> None:
        """The model read ``path``: record it (a failure costs the read nothing)."""
        if self.store is None:
            return
        try:
            self.store.mark_used([self._rel(path)])
        except MemfsError as exc:
            log.warning("could not record a use of %s: %s", path.model, exc)

    def refusal(self, raw: str, grow: int, new_file: bool) -> str | None:
        """The model's message if growing the memory by ``grow`` bytes (and one file if
        ``new_file``) would pass a cap of the store; None if it fits or there is none."""
        store = self.store
        if store is None or (store.max_tree_bytes is None and store.max_files is None):
            return None
        try:
            usage = store.usage()
        except MemfsError as exc:
            log.warning("could not read the store's usage: %s", exc)
            return None  # the mount still refuses what does not fit
        if new_file and store.max_files is not None and usage.files + 1 > store.max_files:
            return strings.over_file_cap(raw, usage.files, store.max_files)
        limit = store.max_tree_bytes
        if grow > 0 and limit is not None and usage.bytes + grow > limit:
            return strings.over_byte_cap(raw, usage.bytes + grow, usage.bytes, limit)
        return None

    def full(self, command: str, raw: str) -> str:
        """The message for a write the directory refused with EDQUOT (a cap)."""
        store = self.store
        if store is not None:
            try:
                usage = store.usage()
            except MemfsError:
                pass
            else:
                if store.max_files is not None and usage.files >= store.max_files:
                    return strings.over_file_cap(raw, usage.files, store.max_files)
                if store.max_tree_bytes is not None:
                    return strings.memory_full_bytes(raw, usage.bytes, store.max_tree_bytes)
        return strings.memory_full(command, raw)
