"""The store's housekeeping, for every backend: caps, last use, checkpoints, redaction
and the check of every retained revision's bytes (invariants 7 and 8).

Caps compare against the tree's counters, read inside the mutation's transaction (which
holds the store's write lock), so two writers can never both pass a cap. Last use is the
newest revision's time or ``entries.used_ns`` (a model read), whichever is later.
Redaction removes a content blob for good and keeps the revisions' records, marked; the
backend erases what its database still holds of it (:meth:`Backend.purged`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memfs.errors import AlreadyExists, Conflict, NotFound, StoreError
from memfs.store import deltas, retention, rules
from memfs.store.base import Checkpoint, Revision
from memfs.store.deltas import Bases
from memfs.store.rules import REDACTED, USE_GRAIN_NS
from memfs.store.sql import Cursor, Pending

if TYPE_CHECKING:
    from memfs.store.engine import SqlStore

# Paths per last-use query (databases bound how many parameters one statement takes).
_CHUNK = 500


def check_caps(store: SqlStore, usage: Pending | None, path: str, grow: int, new: int) -> None:
    """Refuse a mutation adding ``grow`` bytes and ``new`` files past a cap; ``usage``
    is the tree's totals as the mutation asked for them (None: no cap is set)."""
    if usage is None:
        return
    row = usage.one()
    files, total = (0, 0) if row is None else (int(row[0]), int(row[2]))
    rules.check_caps(
        path,
        grow=grow,
        new_files=new,
        total_bytes=total,
        files=files,
        max_tree_bytes=store.limits.max_tree_bytes,
        max_files=store.limits.max_files,
    )


def mark_used(store: SqlStore, paths: list[str]) -> None:
    """Record a model read of ``paths`` now (housekeeping: no change record)."""
    store._writable()
    now = store._now()
    fresh = now - USE_GRAIN_NS
    wanted = list(dict.fromkeys(paths))
    stale: list[str] = []
    with store._reading() as db:
        for at in range(0, len(wanted), _CHUNK):
            chunk = wanted[at : at + _CHUNK]
            names = {f"p{i}": path for i, path in enumerate(chunk)}
            rows = db.all(store.q.last_use_of(len(chunk)), names)
            stale += [str(path) for path, used in rows if int(used) < fresh]
    if stale:
        with store._tx() as tx:
            tx.db.many(store.q.mark_used, [{"now": now, "p": path} for path in stale])


def set_checkpoint(store: SqlStore, name: str, author: str, seq: int | None) -> Checkpoint:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise StoreError("a checkpoint name must be 1 to 200 characters of text")
    with store._tx() as tx:
        taken = tx.db.ask(store.q.has_checkpoint, {"name": name})
        last = tx.seq
        point = last if seq is None else seq
        if point < 0 or point > last:
            raise NotFound(f"there is no change {point} (the last is {last})")
        if taken.one() is not None:
            raise AlreadyExists(f"a checkpoint named '{name}' already exists")
        checkpoint = Checkpoint(name, point, store._now(), author)
        tx.db.run(
            store.q.add_checkpoint,
            {"name": name, "seq": point, "now": checkpoint.time_ns, "author": author},
        )
        return checkpoint


def redact(store: SqlStore, path: str, rev: int, author: str) -> list[Revision]:
    """:meth:`memfs.store.base.Store.redact`."""
    now = store._now()
    alone = store._tx_now() is None  # a batch's caller commits later
    with store._tx() as tx, store.backend.purging(tx.db):
        rows = tx.db.all(store.q.history, {"p": path})
        found = next((r for r in retention.visible(store, path, rows) if r[3] == rev), None)
        if found is None:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        sha = str(found[7])
        if sha.startswith(REDACTED):
            return _with_sha(store, tx.db, sha)
        live = tx.db.one(store.q.live_with, {"sha": sha})
        if live is not None:
            raise Conflict(
                f"revision {rev} of '{path}' is the current content of '{live[0]}';"
                " change or delete that file first, then redact",
                path=str(live[0]),
            )
        # Renaming the hash in the rows detaches them from the content, so the same
        # bytes written again later are stored afresh.
        tx.db.run(
            store.q.redact, {"stored": REDACTED + sha, "author": author, "now": now, "sha": sha}
        )
        # What continues this content keeps its bytes whole first (memfs.store.deltas).
        for (continuing,) in tx.db.all(store.q.continuing, {"sha": sha}):
            row = tx.db.one(store.q.blob, {"sha": continuing})
            data = None if row is None else deltas.content_of(store.d.unpack, row, 0, Bases(0, 0))
            if data is not None and rules.sha256_of(data) == continuing:
                store.d.make_whole(tx.db, str(continuing), data)
        store.d.drop_blob(tx.db, sha)
        redacted = _with_sha(store, tx.db, REDACTED + sha)
    if alone:
        store.backend.purged()
    return redacted


def _with_sha(store: SqlStore, db: Cursor, stored: str) -> list[Revision]:
    rows = db.all(store.q.with_sha, {"sha": stored})
    return [retention.revision(str(row[0]), row[1:]) for row in rows]


def verify(store: SqlStore, progress: Callable[[int, int], None] | None) -> list[Revision]:
    """Every retained revision whose bytes no longer match their SHA-256 (or are gone),
    by path and revision; ``progress(done, total)`` as revisions are checked."""
    with store._reading() as db:
        rows = db.all(store.q.all_revisions)
    by_sha: dict[str, list[Revision]] = {}
    for revision in retention.retained(store, rows):
        if revision.redacted_by is None:  # a redacted one has no bytes left to check
            by_sha.setdefault(revision.sha256, []).append(revision)
    total = sum(len(revisions) for revisions in by_sha.values())
    done = 0
    damaged: list[Revision] = []
    for sha, revisions in by_sha.items():
        with store._reading() as db:
            row = db.one(store.q.blob, {"sha": sha})
        # Base and tail read afresh (no cache): the check is of what is stored.
        data = None if row is None else deltas.content_of(store.d.unpack, row, 0, Bases(0, 0))
        sound = data is not None and rules.sha256_of(data) == sha
        if not sound:
            damaged += revisions
        done += len(revisions)
        if progress is not None:
            progress(done, total)
    return sorted(damaged, key=lambda r: (r.path, r.rev))
