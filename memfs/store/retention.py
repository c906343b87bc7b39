"""Per-path revision history, for every backend: recording, retention and what a
reader sees (invariant 6 of :mod:`memfs.store.base`).

A revision row records the path it was made at; its content is stored once per SHA-256
(the dialect's ``put_blob``) and goes with the last row using it. A file's current
content is the row named by its entry's ``rev``, always the newest row of its path.

A path that stops being a file gets a ``gone`` row (``deleted_ns``; ``trim_ns``: from
when only its last revision counts, NULL once the older rows are physically gone;
``due_ns``: when the sweep next has rows to remove there):

- ``delete`` trims at once (``trim_ns`` = the delete's time);
- a rename's source (and every file of a moved directory) keeps all its rows until its
  history expires (``deleted_history_days``, and at least
  :data:`~memfs.store.rules.MOVED_GRACE_NS`): atomic saves move a file aside and bring
  a new one to its name within milliseconds, so the returning name must find its whole
  history, and ``history --follow`` reads a moved file's earlier revisions there.

Readers apply these rules through the store's clock (:func:`visible`), so what
``history`` shows never depends on when rows are physically removed. Removal is lazy:
a mutation that finds rows due when its transaction begins removes at most
:data:`~memfs.store.rules.SWEEP_ROWS` of them (tombstones older than
``deleted_history_days``, then the older rows of trimmed paths). A path that becomes a
file again (a write creating it, a rename arriving) first has its due removals done,
then continues its history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memfs.errors import NotFound
from memfs.store import rules
from memfs.store.base import Revision
from memfs.store.rules import DAY_NS, MOVED_GRACE_NS, REDACTED, SWEEP_ROWS
from memfs.store.sql import Row

if TYPE_CHECKING:
    from memfs.store.engine import SqlStore, Tx


def revision(path: str, row: Row) -> Revision:
    """A revision from the columns of :data:`memfs.store.statements.REV_COLS`."""
    rev, author, time_ns, size, sha, redacted_by, redacted_ns = row
    return Revision(
        path, rev, author, time_ns, size, str(sha).removeprefix(REDACTED), redacted_by, redacted_ns
    )


def visible(store: SqlStore, path: str, rows: list[Row]) -> list[Row]:
    """The rows of ``path`` a reader sees, newest first, from the history statement's
    rows (entry kind, tombstone, then a revision's columns; see
    :attr:`memfs.store.statements.Statements.history`). IsADirectory for a directory,
    NotFound for a symlink or a path with nothing retained."""
    kind, deleted, trim = rows[0][:3]
    present = [row for row in rows if row[3] is not None]
    if kind is not None:
        rules.need_file(path, str(kind))
        return present
    gone = None if deleted is None else (int(deleted), trim)
    try:
        shown = rules.gone_visible(gone, store.clock(), store.limits.deleted_history_days)
    except NotFound:
        raise NotFound(f"no entry and no retained history at '{path}'", path=path) from None
    return present if shown < 0 else present[:shown]


def retained(store: SqlStore, rows: list[Row]) -> list[Revision]:
    """Every retained revision among the rows of :attr:`Statements.all_revisions`
    (path, revision columns, entry kind, tombstone; by path, newest first)."""
    now, days = store.clock(), store.limits.deleted_history_days
    found: list[Revision] = []
    shown, keep, last_path = 0, 0, None
    for row in rows:
        path = str(row[0])
        if path != last_path:
            last_path, shown = path, 0
            kind, deleted = row[8], row[9]
            if kind == "file":
                keep = -1  # a live file: every row (pruned when written)
            elif kind is not None or deleted is None:
                keep = 0  # a directory or symlink there now, or no tombstone
            else:
                try:
                    keep = rules.gone_visible((int(deleted), row[10]), now, days)
                except NotFound:
                    keep = 0
        elif keep == 0:
            continue
        if keep < 0 or shown < keep:
            found.append(revision(path, row[1:8]))
            shown += 1
    return found


def add_row(
    store: SqlStore,
    tx: Tx,
    path: str,
    rev: int,
    author: str,
    now: int,
    size: int,
    sha: str,
    kept: int | None,
) -> None:
    """Add revision ``rev`` of ``path`` and drop what falls out of the ``history``
    option; ``kept``: how many rows the path held before (None: unknown)."""
    tx.db.run(
        store.q.insert_revision,
        {"p": path, "rev": rev, "author": author, "now": now, "size": size, "sha": sha},
    )
    keep = store.limits.history
    if kept is None or kept > keep:
        tx.db.run(store.q.prune, {"p": path, "keep": keep})


def add_rows(store: SqlStore, tx: Tx, rows: list[dict[str, object]], kept: int | None) -> None:
    """:func:`add_row` for revisions of one path (``rows``: the insert's parameters,
    oldest first), pruned once: a path holds at most ``history`` + 1 rows after."""
    tx.db.many(store.q.insert_revision, rows)
    if kept is None or kept + len(rows) > store.limits.history + 1:
        tx.db.run(store.q.prune, {"p": rows[-1]["p"], "keep": store.limits.history})


def arrive(
    store: SqlStore,
    tx: Tx,
    arrivals: list[tuple[str, int, str]],
    gone: dict[str, tuple[int, int | None]],
    kept: int | None,
    author: str,
    now: int,
) -> tuple[int | None, int | None, str | None]:
    """Record each file just moved to a path (``arrivals``: path, size, SHA-256) as
    arriving there with its content, continuing a tombstoned history (``gone``: the
    tombstones at those paths); ``kept``: how many revisions the one arrival's path
    held (None: unknown). The last arrival's revision number, size and SHA-256."""
    last: tuple[int | None, int | None, str | None] = (None, None, None)
    numbered = []
    for path, size, sha in arrivals:
        tomb = gone.get(path)
        if tomb is not None:
            revive(store, tx, path, tomb[0], tomb[1], now)
        last = (tx.next_rev(), size, sha)
        numbered.append(
            {"p": path, "rev": last[0], "author": author, "now": now, "size": size, "sha": sha}
        )
    tx.db.many(store.q.set_rev, numbered)
    tx.db.many(store.q.insert_revision, numbered)
    keep = store.limits.history
    if kept is None or kept > keep:
        tx.db.many(store.q.prune, [{"p": row["p"], "keep": keep} for row in numbered])
    return last


def tombstone(store: SqlStore, tx: Tx, paths: list[str], now: int, *, moved: bool) -> None:
    """Mark file ``paths`` as no longer existing; their rows become tombstones."""
    if not paths:
        return
    # Not swept by this transaction (a later one does: removal is lazy), so a delete
    # costs no read after its writes.
    # A moved-away path keeps all its rows as long as a deleted one keeps its last (so
    # history can follow the file across the move), and at least a save's grace.
    days = store.limits.deleted_history_days * DAY_NS
    trim = now + max(MOVED_GRACE_NS, days) if moved else now
    tx.db.many(store.q.tombstone, [{"p": path, "now": now, "trim": trim} for path in paths])


def revive(store: SqlStore, tx: Tx, path: str, deleted: int, trim: int | None, now: int) -> None:
    """Make ``path`` a live history again, doing its due removals first."""
    # At most history + 1 rows: a live path never holds more, and a gone one gains none.
    if rules.history_expired(deleted, trim, now, store.limits.deleted_history_days):
        tx.db.run(store.q.forget_path, {"p": path})
    elif trim is not None and trim <= now:
        tx.db.run(store.q.prune, {"p": path, "keep": 0})
    tx.db.run(store.q.revive, {"p": path})


def sweep(store: SqlStore, tx: Tx, now: int) -> None:
    """Remove up to :data:`SWEEP_ROWS` rows that the retention rules already hide."""
    if not tx.sweep_due(now):
        return
    days = store.limits.deleted_history_days
    budget = SWEEP_ROWS
    for path, deleted, trim, count in tx.db.all(store.q.due, {"now": now, "n": budget}):
        expired = rules.history_expired(int(deleted), trim, now, days)
        keep = 0 if expired else 1  # never the newest row of a path that only needs trimming
        removable = max(int(count) - keep, 0)
        removed = min(removable, budget)
        if removed:
            tx.db.run(store.q.sweep, {"p": path, "n": budget, "keep": keep})
        if removable < budget:  # nothing left to remove here for now
            if expired:
                tx.db.run(store.q.revive, {"p": path})
            else:
                # Trimmed; next due when deleted_history_days runs out. Readers judge
                # expiry by the option in force, so a changed option is still obeyed.
                expiry = int(deleted) + days * DAY_NS
                tx.db.run(store.q.trimmed, {"due": max(expiry, now + 1), "p": path})
        budget -= max(removed, 1)
        if budget <= 0:
            return
    tx.due = None  # everything due by now is done
