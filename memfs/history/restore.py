"""Putting earlier content back: one file from one revision, or a whole tree (or
subtree) returned to a point of the feed.

Both are ordinary mutations, so the restored state is a new revision of each file,
the old ones stay in history, and live mounts and mirrors follow at once. A tree
restore is planned and applied inside one :meth:`~memfs.store.base.Store.batch`: it
happens entirely or not at all, and nothing written meanwhile is overwritten unseen
(every write and delete names the revision it expects).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memfs.errors import Conflict, IsADirectory, NotFound, StoreError
from memfs.history.timeline import Node, Tree, then_and_now
from memfs.store.base import Entry, Store


class RestoreError(StoreError):
    """A restore that cannot be done as asked; nothing was changed."""


def restore_file(
    store: Store, path: str, rev: int, *, author: str, data: bytes | None = None
) -> Entry:
    """Write revision ``rev`` of ``path`` back as its newest revision (creating the
    file, and its parents, if it was deleted or renamed away). ``data``: what to write
    instead of the revision's bytes (the model's restore writes them with credentials
    redacted, as any write of the model's)."""
    if data is None:
        data = store.read_revision(path, rev)
    try:
        current = store.stat(path)
    except NotFound:
        return store.write(path, data, author=author, expected_rev=0, parents=True)
    if current.is_dir:
        raise IsADirectory(f"'{path}' is a directory now; move it aside to restore the file")
    if current.kind == "symlink":
        raise RestoreError(f"'{path}' is a symlink now; remove it to restore the file")
    return store.write(path, data, author=author, expected_rev=current.rev)


@dataclass(slots=True)
class Plan:
    """What a tree restore does (or did): paths written back (created or changed),
    deleted, directories made and removed, and files it cannot bring back."""

    write: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    mkdir: list[str] = field(default_factory=list)
    rmdir: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)  # content no longer retained
    symlinks: list[str] = field(default_factory=list)  # targets the feed does not hold

    @property
    def changes(self) -> int:
        return len(self.write) + len(self.delete) + len(self.mkdir) + len(self.rmdir)


def _plan(then: Tree, now: Tree, top: str) -> tuple[Plan, dict[str, Node]]:
    plan = Plan()
    writes: dict[str, Node] = {}
    for path in sorted(set(now) - set(then), reverse=True):  # children first
        if path == top:
            continue
        (plan.rmdir if now[path].kind == "dir" else plan.delete).append(path)
    for path in sorted(then):
        old, cur = then[path], now.get(path)
        if old.kind == "dir":
            if cur is None:
                plan.mkdir.append(path)
            elif cur.kind != "dir":
                plan.delete.append(path)
                plan.mkdir.append(path)
        elif old.kind == "symlink":
            if cur is None or cur.kind != "symlink":
                plan.symlinks.append(path)
        elif old.sha256 is None:
            if cur is None or cur.sha256 is None or cur.kind != "file":
                plan.unavailable.append(path)
        elif cur is None or cur.kind != "file" or cur.sha256 != old.sha256:
            if cur is not None and cur.kind == "dir":
                plan.rmdir.append(path)  # only empty if everything below it goes too
            elif cur is not None and cur.kind == "symlink":
                plan.delete.append(path)
            plan.write.append(path)
            writes[path] = old
    return plan, writes


def restore_tree(
    store: Store,
    seq: int,
    top: str = "",
    *,
    author: str,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Plan:
    """Return the tree at and below ``top`` to how it was after change ``seq``: files
    put back, files made since deleted (they stay in history), directories made or
    removed to match. Files whose content is no longer retained stay as they are and
    are listed in ``Plan.unavailable``; symlinks in ``Plan.symlinks``. A write that
    raced the restore (a server store) undoes it whole: RestoreError."""
    try:
        return _restore_tree(store, seq, top, author=author, dry_run=dry_run, progress=progress)
    except Conflict as e:
        raise RestoreError(
            f"the tree changed while restoring ({e}); nothing was changed, run it again"
        ) from e


def _planned(
    store: Store, seq: int, top: str, progress: Callable[[int], None] | None
) -> tuple[Plan, dict[str, Node]]:
    if top:
        store.stat(top)  # NotFound for a subtree that is gone: restore it by path
    then, now = then_and_now(store, seq, top, progress=progress)
    return _plan(then, now, top)


def _restore_tree(
    store: Store,
    seq: int,
    top: str,
    *,
    author: str,
    dry_run: bool,
    progress: Callable[[int], None] | None,
) -> Plan:
    if dry_run:
        # Read only, so a read-only store can be asked: the feed up to its last number
        # is the same whoever writes meanwhile, and the plan is what that feed says.
        return _planned(store, seq, top, progress)[0]
    with store.batch():
        plan, writes = _planned(store, seq, top, progress)
        contents = {}
        for path, node in writes.items():
            assert node.sha256 is not None
            try:
                contents[path] = store.read_blob(node.sha256)
            except NotFound:
                plan.write.remove(path)
                plan.unavailable.append(path)
        for path in plan.delete:
            try:
                entry = store.stat(path)
            except NotFound:
                continue  # under a directory already removed with its children
            store.delete(path, author=author, expected_rev=entry.rev)
        for path in plan.rmdir:
            store.delete(path, author=author)  # DirectoryNotEmpty would be a bug: all goes
        for path in plan.mkdir:
            store.mkdir(path, author=author, parents=True, exist_ok=True)
        for path in plan.write:
            try:
                entry = store.stat(path)
            except NotFound:
                store.write(path, contents[path], author=author, expected_rev=0, parents=True)
            else:
                store.write(path, contents[path], author=author, expected_rev=entry.rev)
        return plan
