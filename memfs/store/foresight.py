"""What a store's next transaction will read, foreseen from what its own last ones read
just before they committed: so a server backend can send a mutation's writes with its
reads, in one round trip (:meth:`memfs.store.sql.Cursor.expect`).

Three kinds of answers are kept:

- the tree's counters (the dialect's ``begin``), read again at the end of a transaction
  that foresees. They stay true until anyone commits again, so one transaction claims
  them (:meth:`Foresight.claim`): two threads guessing the same counters would make one
  of them miss.
- a statement's row about one path (a write's look at its file), read again after the
  transaction changed the path. It stays true until a change reaches that path: this
  store's own later commits drop the rows of the paths they changed, or all of them for
  a change that reached paths it has no record of (a directory's rename, a batch).
- the directories its transactions wrote in or made, and the paths they changed. A
  name that is neither (:meth:`Foresight.new_name`) in one of those directories is, if
  nobody else got there, a name that never was: a create-only write guesses what its
  look at such a name finds.

Nothing here needs to be right: every guess is checked by the server, in the
transaction, under the tree's lock, and a wrong one only costs the mutation a second
try (a writer on another host is seen that way). After a miss, guessing pauses for a
few transactions, so writers that keep meeting each other do not pay for it each time.

Inside one transaction nothing needs guessing: :class:`OwnReads` keeps what a batch's
mutation read about a path after its own last change there, which stays the answer
for the batch's next mutations (nobody else writes under the tree's lock) until one of
them reaches the path. A mutation's read then comes back with the previous one's
savepoint sync instead of costing a round trip of its own: a queue of appends landed
as one revision each is one round trip a revision, not three.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from memfs.store.sql import Pending, Row

# Paths whose rows are kept (the least recently foreseen go first).
KEPT_PATHS = 4096
# Transactions that do not guess after a guess missed.
PAUSE_AFTER_MISS = 8


class Foresight:
    """The answers one store foresees; shared by its threads."""

    def __init__(self, kept_paths: int = KEPT_PATHS) -> None:
        self._lock = threading.Lock()
        self._kept = kept_paths
        self._counters: Row | None = None
        # The feed number of the newest commit heard of: answers read before it are stale.
        self._seq = -1
        self._rows: OrderedDict[str, dict[str, Row]] = OrderedDict()
        # Directories this store's commits wrote in or made, and the paths they changed
        # (which have a history, so a create there finds more than nothing).
        self._dirs: OrderedDict[str, None] = OrderedDict()
        self._changed: OrderedDict[str, None] = OrderedDict()
        self._paused = 0
        self.hits = self.misses = 0

    def claim(self) -> Row | None:
        """The counters, for one transaction to guess (None: unknown, claimed, or
        paused after a miss)."""
        with self._lock:
            if self._paused:
                self._paused -= 1
                return None
            counters, self._counters = self._counters, None
            return counters

    def row(self, sql: str, path: str) -> Row | None:
        with self._lock:
            return self._rows.get(path, {}).get(sql)

    def new_name(self, path: str, parent: str) -> bool:
        """Whether ``path`` (in ``parent``) is, as far as this store's commits tell, a
        name in a directory that has never held anything there."""
        with self._lock:
            return parent in self._dirs and path not in self._changed and path not in self._rows

    def committed(
        self,
        seq: int,
        changed: Iterable[str] | None,
        counters: Row | None = None,
        rows: Iterable[tuple[str, str, Row]] = (),
        dirs: Iterable[str] = (),
    ) -> None:
        """A transaction of this store committed, up to feed number ``seq``: forget
        what it made stale (the rows and directories of the ``changed`` paths;
        everything for None), then keep what it read just before its commit
        (``counters``, and ``rows`` as (statement, path, row)) and the ``dirs`` it
        wrote in or made."""
        with self._lock:
            if changed is None:
                self._rows.clear()
                self._dirs.clear()
            else:
                for path in changed:
                    self._rows.pop(path, None)
                    self._dirs.pop(path, None)
                    _keep(self._changed, path, self._kept)
            if seq < self._seq:
                return  # another thread committed after it: what it read may be stale
            self._seq = seq
            self._counters = counters
            for sql, path, row in rows:
                self._rows.setdefault(path, {})[sql] = row
                self._rows.move_to_end(path)
            while len(self._rows) > self._kept:
                self._rows.popitem(last=False)
            for path in dirs:
                _keep(self._dirs, path, self._kept)

    def hit(self) -> None:
        with self._lock:
            self.hits += 1

    def missed(self) -> None:
        """A guess was wrong: someone else changed the tree, or a change reached wider
        than this store knew. Nothing kept can be trusted."""
        with self._lock:
            self.misses += 1
            self._counters = None
            self._rows.clear()
            self._dirs.clear()
            self._paused = PAUSE_AFTER_MISS


def _keep(kept: OrderedDict[str, None], path: str, most: int) -> None:
    """Add ``path`` to ``kept`` as its newest, the oldest going beyond ``most``."""
    kept[path] = None
    kept.move_to_end(path)
    while len(kept) > most:
        kept.popitem(last=False)


# Paths a batch remembers writing (to tell a path written again), and paths whose
# answers it keeps at once (the least recently kept go first).
OWN_WRITTEN = 1024
OWN_KEPT = 64


class OwnReads:
    """What a batch's mutations read after their own changes, for the later mutations
    of that transaction (see the module docstring). Only a path the batch writes again
    is worth it (a queue of appends; not an import of many files, where every read
    kept would be one more statement for nothing): :meth:`again` tells.

    Each answer is stamped with the mutation that kept it. When a mutation ends, the
    answers about the paths it reached are forgotten but its own (kept after its last
    change to the path, as every caller of :meth:`keep` must); when it is rolled back,
    its own and its inner mutations' are.

    Two kinds of answers: a statement's row about a path, and the base a path's last
    revision was stored continuing (found whole and held by the server in this
    transaction), so the next revision continues it without asking again."""

    def __init__(self) -> None:
        self._mutation = 0
        self._written: OrderedDict[str, None] = OrderedDict()
        # path -> (stamp, {statement: answer}, base or None)
        self._kept: OrderedDict[str, tuple[int, dict[str, Pending], str | None]] = OrderedDict()

    def begin(self) -> int:
        """A mutation starts: its stamp."""
        self._mutation += 1
        return self._mutation

    def again(self, path: str) -> bool:
        """Note that this transaction writes ``path``: whether it wrote it before."""
        before = path in self._written
        _keep(self._written, path, OWN_WRITTEN)
        return before

    def row(self, sql: str, path: str) -> Pending | None:
        found = self._kept.get(path)
        return None if found is None else found[1].get(sql)

    def base(self, path: str) -> str | None:
        found = self._kept.get(path)
        return None if found is None else found[2]

    def keep(self, path: str, sql: str, answer: Pending) -> None:
        rows, base = self._mine(path)
        rows[sql] = answer
        self._kept[path] = (self._mutation, rows, base)

    def keep_base(self, path: str, base: str) -> None:
        rows, _ = self._mine(path)
        self._kept[path] = (self._mutation, rows, base)

    def _mine(self, path: str) -> tuple[dict[str, Pending], str | None]:
        """What this mutation kept about ``path`` so far (an earlier one's is stale:
        this mutation keeps only after changing the path)."""
        found = self._kept.pop(path, None)
        while len(self._kept) >= OWN_KEPT:
            self._kept.popitem(last=False)
        if found is None or found[0] != self._mutation:
            return {}, None
        return found[1], found[2]

    def done(self, mutation: int, reached: Iterable[str] | None) -> None:
        """Mutation ``mutation`` ended, having changed the ``reached`` paths (None: it
        may have changed any)."""
        paths = list(self._kept) if reached is None else reached
        for path in paths:
            found = self._kept.get(path)
            if found is not None and found[0] != mutation:
                del self._kept[path]

    def undone(self, mutation: int) -> None:
        """Mutation ``mutation`` was rolled back (with any it held inside)."""
        for path in [p for p, (stamp, _, _) in self._kept.items() if stamp >= mutation]:
            del self._kept[path]
