"""The tree's log: its changes, newest first, filtered by path, point and author.

One record per change of the feed. ``op`` is the change's kind, except that a change
made by a history command says so (``restore``, ``undo``, ``expire``, ``import``), since
that is what a person looking for "what put this back" wants to see; ``kind`` keeps the
feed's own word.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from memfs.store.base import Change, Store
from memfs.store.rebase import is_conflict_copy

# Authors the history commands give their changes (memfs.history.author).
_COMMAND_OPS = ("restore", "undo", "expire", "import", "redact")


@dataclass(frozen=True, slots=True)
class LogEntry:
    seq: int
    rev: int | None
    time_ns: int
    author: str
    op: str
    kind: str
    path: str
    old_path: str | None
    size: int | None
    sha256: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "rev": self.rev,
            "time": self.time_ns / 1e9,
            "time_ns": self.time_ns,
            "author": self.author,
            "op": self.op,
            "kind": self.kind,
            "path": self.path,
            "old_path": self.old_path,
            "size": self.size,
            "sha256": self.sha256,
        }


def op_of(change: Change) -> str:
    if change.kind == "create" and is_conflict_copy(change.path):
        return "conflict"  # a version two writers' changes could not merge into
    for command in _COMMAND_OPS:
        if change.author.startswith(f"memfs {command} ") and change.kind != "mkdir":
            return command
    return change.kind


def _touches(change: Change, top: str) -> bool:
    if top == "":
        return True
    return any(
        p is not None and (p == top or p.startswith(top + "/"))
        for p in (change.path, change.old_path)
    )


def log(
    store: Store,
    top: str = "",
    *,
    since_seq: int = 0,
    author: str | None = None,
    limit: int | None = None,
) -> Iterator[LogEntry]:
    """Changes touching ``top`` (a path or the whole tree), newest first: after change
    ``since_seq``, by an author containing ``author``."""
    shown = 0
    until: int | None = None
    while limit is None or shown < limit:
        page = store.changes(since_seq, 1000, until=until, newest_first=True)
        for change in page:
            if not _touches(change, top) or (author is not None and author not in change.author):
                continue
            yield LogEntry(
                change.seq,
                change.rev,
                change.time_ns,
                change.author,
                op_of(change),
                change.kind,
                change.path,
                change.old_path,
                change.size,
                change.sha256,
            )
            shown += 1
            if limit is not None and shown >= limit:
                return
        if len(page) < 1000:
            return
        until = page[-1].seq - 1
