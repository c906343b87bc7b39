"""The content of recent syncs, kept in memory as the bases of the next merges.

Merging two edits needs what both sides held at the last sync. The store has it as a
revision, but keeps only its ``history`` option's number of them (50 by default; 0 is
allowed): while a person types into a file for a few seconds, an agent's inserts or
another mount's appends can commit more than that, and the base would be gone, making a
conflict copy of what should merge. The mirror has that content in hand each time it
records a sync (it has just pushed, pulled or merged it), so it keeps the most recent
ones, by path and hash, within a byte budget; the store is asked only for the others.
"""

from __future__ import annotations

from collections import OrderedDict

BUDGET = 32 * 1024 * 1024  # bytes held in all
LARGEST = 4 * 1024 * 1024  # a bigger file's base is read back from the store


class Bases:
    """Least recently synced first out, once the budget is spent."""

    def __init__(self, budget: int = BUDGET, largest: int = LARGEST) -> None:
        self.budget = budget
        self.largest = min(largest, budget)
        self._held: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._bytes = 0

    def keep(self, path: str, sha: str, data: bytes) -> None:
        self.forget(path)
        if len(data) > self.largest:
            return
        self._held[path] = (sha, data)
        self._bytes += len(data)
        while self._bytes > self.budget:
            _, (_, old) = self._held.popitem(last=False)
            self._bytes -= len(old)

    def get(self, path: str, sha: str) -> bytes | None:
        """The content with ``sha`` last synced at ``path``, if still held."""
        held = self._held.get(path)
        return held[1] if held is not None and held[0] == sha else None

    def forget(self, path: str) -> None:
        held = self._held.pop(path, None)
        if held is not None:
            self._bytes -= len(held[1])
