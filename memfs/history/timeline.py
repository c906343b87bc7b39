"""The tree at any point of the store's feed, rebuilt by replaying the feed.

The feed (:meth:`memfs.store.base.Store.changes`) is complete: every mutation ever made
left its records, and a change that made a file revision carries its content hash while
that revision is retained. Replaying the records from the first one up to change ``seq``
therefore gives every path that existed after that change, with its kind and (for files)
the hash of its content; the content itself is read by hash
(:meth:`~memfs.store.base.Store.read_blob`), whatever path it was made at, so a file
that was renamed since still has its bytes.

What replay cannot know, it says: a file whose revision is no longer retained has
``sha256`` None, and a symlink's target is not in the feed (``target`` None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memfs.store.base import Change, Store

PAGE = 10_000


@dataclass(frozen=True, slots=True)
class Node:
    """What was at a path: ``kind`` and, for a file, its content's hash and size (None
    when no longer retained)."""

    kind: str
    sha256: str | None = None
    size: int | None = None


Tree = dict[str, Node]


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


class Replay:
    """A tree state moved forward one change at a time (``apply``); ``nodes`` holds it."""

    def __init__(self) -> None:
        self.nodes: Tree = {}
        self.seq = 0

    def apply(self, change: Change) -> None:
        nodes = self.nodes
        kind = change.kind
        if kind in ("create", "modify"):
            nodes[change.path] = Node("file", change.sha256, change.size)
        elif kind == "mkdir":
            nodes[change.path] = Node("dir")
        elif kind == "symlink":
            nodes[change.path] = Node("symlink")
        elif kind in ("delete", "rmdir"):
            nodes.pop(change.path, None)
        elif kind == "rename" and change.old_path is not None:
            self._move(change.old_path, change.path)
        self.seq = change.seq

    def _move(self, src: str, dst: str) -> None:
        nodes = self.nodes
        moved = (
            {p: n for p, n in nodes.items() if _under(p, src)}
            if nodes.get(src, Node("file")).kind == "dir"
            else ({src: nodes[src]} if src in nodes else {})
        )
        # The destination (a file, or an empty directory) is replaced.
        for path in [p for p in nodes if _under(p, dst)]:
            del nodes[path]
        for path in moved:
            nodes.pop(path, None)
        for path, node in moved.items():
            nodes[dst + path[len(src) :]] = node

    def subtree(self, top: str) -> Tree:
        """The nodes at and below ``top`` ("" for the whole tree)."""
        if top == "":
            return dict(self.nodes)
        return {p: n for p, n in self.nodes.items() if _under(p, top)}


def feed(
    store: Store, until: int, *, since: int = 0, progress: Callable[[int], None] | None = None
) -> Iterable[Change]:
    """The store's changes with ``since < seq <= until``, oldest first, read in pages."""
    after = since
    while after < until:
        page = store.changes(after, PAGE, until=until)
        if not page:
            return
        yield from page
        if progress is not None:
            progress(len(page))
        after = page[-1].seq


def then_and_now(
    store: Store, seq: int, top: str = "", *, progress: Callable[[int], None] | None = None
) -> tuple[Tree, Tree]:
    """The subtree at ``top`` after change ``seq`` and as the feed has it now, from one
    pass over the feed. Exact for the present too: every change of content carries the
    hash of its (always retained) newest revision, and a move keeps content as it is."""
    replay = Replay()
    then: Tree | None = None
    for change in feed(store, store.last_seq(), progress=progress):
        if then is None and change.seq > seq:
            then = replay.subtree(top)
        replay.apply(change)
    return (replay.subtree(top) if then is None else then), replay.subtree(top)
