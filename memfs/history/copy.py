"""Copy a whole store into an empty one, history included, through the Store API alone.

:func:`copy_store` replays the source's change feed in order on the destination, each
mutation with the source's author and, through ``dst.clock``, its original time, in
batches of :data:`BATCH` changes (one transaction each). So the destination gets:

- every retained revision, with its author and time, at the path it was made at (a
  content change whose content is no longer retained is replayed as the nearest content
  still known, so the renames and deletes that follow it still apply);
- renames (with their arrival revisions), deletions and the tombstoned histories they
  leave, timed as they were, so retention goes on from the same dates;
- the change log, one record per source record as far as its content is retained
  (revision numbers are the destination's own);
- checkpoints, at the destination's point matching the source's.

A last pass makes the tree exactly the source's now (content, symlink targets, modes,
owners, mtimes), whatever the replay could not know (an ``attr`` change records no
values). Not copied: redaction marks (redacted content is gone, so those revisions are
replayed as the nearest known content) and last-use times. The destination must be
empty: copying never merges.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from memfs.errors import NotFound, StoreError
from memfs.store.base import Act, Change, Entry, Store

BATCH = 200
Progress = Callable[[int, int], None]  # (changes done, changes in all)
_PLACEHOLDER_TARGET = ".memfs-copy-unknown-target"


class CopyError(StoreError):
    """The destination is not empty, or the copy could not go on."""


def copy_store(src: Store, dst: Store, *, progress: Progress | None = None) -> int:
    """Replay ``src`` into the empty ``dst``; returns how many changes were replayed."""
    if dst.last_seq() > 0 or any(True for _ in dst.walk()):
        raise CopyError(f"the destination {dst.url} is not empty; copy into a new store")
    total = src.last_seq()
    marks = {c.seq: c for c in src.checkpoints()}
    report = progress or (lambda done, all_: None)
    report(0, total)
    done = 0
    original_clock = dst.clock
    # Each operation of the source is one of the destination, by the same actor.
    acts: dict[int, Act] = {}
    try:
        for chunk in _chunks(src, stops=set(marks)):
            with dst.batch():
                for change in chunk:
                    dst.clock = _at(change.time_ns)
                    with dst.acting(_act(src, change, acts)):
                        _replay(src, dst, change)
            done = chunk[-1].seq
            for checkpoint in [marks[s] for s in marks if s <= done]:
                dst.clock = _at(checkpoint.time_ns)
                dst.set_checkpoint(checkpoint.name, author=checkpoint.author)
                del marks[checkpoint.seq]
            report(done, total)
        for checkpoint in marks.values():  # named before any change (seq 0)
            dst.clock = _at(checkpoint.time_ns)
            dst.set_checkpoint(checkpoint.name, author=checkpoint.author, seq=0)
        last = src.changes(newest_first=True, limit=1)
        dst.clock = _at(last[0].time_ns) if last else original_clock
        with dst.batch():
            _settle(src, dst)
    finally:
        dst.clock = original_clock
    report(total, total)
    return done


def _act(src: Store, change: Change, acts: dict[int, Act]) -> Act:
    if change.op is None:
        return Act(change.author)
    act = acts.get(change.op)
    if act is None:
        try:
            op = src.operation(change.op)
            act = Act(op.actor, detail=op.detail, label=op.label, command=op.command)
        except NotFound:
            act = Act(change.author)
        acts[change.op] = act
    return act


def _at(time_ns: int) -> Callable[[], int]:
    return lambda: time_ns


def _chunks(src: Store, stops: set[int]) -> Iterator[list[Change]]:
    """The feed in batches, each ending at a checkpoint's seq when one falls inside."""
    since = 0
    while True:
        changes = src.changes(since, limit=BATCH)
        if not changes:
            return
        cut = next((i for i, c in enumerate(changes) if c.seq in stops), None)
        if cut is not None:
            changes = changes[: cut + 1]
        yield changes
        since = changes[-1].seq


def _content(src: Store, change: Change) -> bytes | None:
    """The content that change made, if the source still retains it."""
    if change.sha256 is not None:
        with contextlib.suppress(NotFound):
            return src.read_blob(change.sha256)
    return None


def _replay(src: Store, dst: Store, change: Change) -> None:
    author = change.author
    # A mutation the destination refuses (it diverged where the source's content was
    # not retained) leaves nothing inside the batch; the last pass puts things right.
    with contextlib.suppress(StoreError):
        if change.kind in ("create", "modify"):
            data = _content(src, change)
            if data is None:
                if _exists(dst, change.path):
                    return  # not retained: the next known content follows
                data = b""
            dst.write(change.path, data, author=author, parents=True)
        elif change.kind == "mkdir":
            dst.mkdir(change.path, author=author, parents=True, exist_ok=True)
        elif change.kind == "symlink":
            dst.symlink(change.path, _target(src, change.path), author=author)
        elif change.kind in ("delete", "rmdir"):
            if _exists(dst, change.path):
                dst.delete(change.path, author=author, recursive=True)
        elif change.kind == "rename" and change.old_path is not None:
            dst.rename(change.old_path, change.path, author=author, overwrite=True)
        elif change.kind == "attr" and _exists(dst, change.path):
            entry = _entry(src, change.path)
            if entry is not None:
                # The record holds no values: the source's present ones stand in (later
                # writes move mtime on as they did in the source).
                dst.set_attrs(
                    change.path,
                    author=author,
                    mode=entry.mode,
                    uid=entry.uid,
                    gid=entry.gid,
                    mtime_ns=entry.mtime_ns,
                )


def _exists(store: Store, path: str) -> bool:
    return _entry(store, path) is not None


def _entry(store: Store, path: str) -> Entry | None:
    try:
        return store.stat(path)
    except NotFound:
        return None


def _target(src: Store, path: str) -> str:
    entry = _entry(src, path)
    return entry.target if entry is not None and entry.target else _PLACEHOLDER_TARGET


def _settle(src: Store, dst: Store) -> None:
    """Make ``dst``'s tree exactly ``src``'s now."""
    wanted = {e.path: e for e in src.walk()}
    for entry in sorted(dst.walk(), key=lambda e: e.path, reverse=True):
        there = wanted.get(entry.path)
        if there is None or there.kind != entry.kind or there.target != entry.target:
            with contextlib.suppress(NotFound):
                dst.delete(entry.path, author="memfs copy", recursive=True)
    for path, entry in wanted.items():  # parents first
        have = _entry(dst, path)
        if entry.is_dir and have is None:
            dst.mkdir(path, author="memfs copy", mode=entry.mode, parents=True)
        elif entry.kind == "symlink" and have is None:
            dst.symlink(path, entry.target or _PLACEHOLDER_TARGET, author="memfs copy")
        elif entry.is_file:
            data = src.read(path)[0]
            if have is None or dst.read(path)[0] != data:
                author = src.history(path, limit=1)[0].author
                dst.write(path, data, author=author, parents=True)
        now = dst.stat(path)
        if (now.mode, now.uid, now.gid, now.mtime_ns) != (
            entry.mode,
            entry.uid,
            entry.gid,
            entry.mtime_ns,
        ):
            # The source's attributes put back, not a change of anyone's: recorded, they
            # made up an operation ("changed the mode of 5,164 entries") that a plain
            # `memfs undo` would then take back.
            dst.set_attrs(
                path,
                author="memfs copy",
                mode=entry.mode,
                uid=entry.uid,
                gid=entry.gid,
                mtime_ns=entry.mtime_ns,
                record=False,
            )
