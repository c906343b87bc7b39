"""Reverting chosen changes, and only those, newest first.

Each change is reverted against what the feed says was there just before it and just
after it: a change is undone only while the paths it touched are still as it left them
(same kind, same content). Otherwise someone changed them since, and the change is left
alone and reported as a conflict: an undo never overwrites a later edit. Changes chosen
together are undone newest first, so undoing an agent's whole afternoon walks its edits
of one file back in order. The whole undo is one batch: all of it or nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memfs.errors import AlreadyExists, Conflict, DirectoryNotEmpty, NotFound
from memfs.history.timeline import Node, Replay, feed
from memfs.store.base import Change, Store


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one chosen change: ``done`` (reverted, or would be with
    dry_run), ``conflict`` (changed since), ``skipped`` (nothing to revert, e.g. an
    attribute change) or ``unavailable`` (the earlier content is no longer retained)."""

    change: Change
    result: str
    why: str = ""


@dataclass(slots=True)
class UndoReport:
    outcomes: list[Outcome] = field(default_factory=list)
    made: int = 0  # changes the undo itself appended to the feed

    def count(self, result: str) -> int:
        return sum(1 for o in self.outcomes if o.result == result)


def select(
    store: Store,
    *,
    author: str | None = None,
    last: int | None = None,
    since_seq: int | None = None,
) -> list[Change]:
    """The changes to undo, newest first: by default the last operation of all (or of
    the matching author); ``last`` takes that many operations, ``since_seq`` every
    change after it. An operation is one mutation's records (same author and time: a
    recursive delete leaves one per entry); ``author`` matches any part of the name."""
    want = 1 if last is None and since_seq is None else last
    chosen: list[Change] = []
    operations = 0
    previous: tuple[str, int] | None = None
    until: int | None = None
    while True:
        page = store.changes(since_seq or 0, 1000, until=until, newest_first=True)
        for change in page:
            if author is not None and author not in change.author:
                continue
            key = (change.author, change.time_ns)
            if key != previous:
                if want is not None and operations >= want:
                    return chosen
                operations += 1
                previous = key
            chosen.append(change)
        if len(page) < 1000:
            return chosen
        until = page[-1].seq - 1


Nodes = dict[str, Node | None]  # path -> what was there (None: nothing)


def _around(store: Store, chosen: Sequence[Change]) -> dict[int, tuple[Nodes, Nodes]]:
    """For each chosen change, the nodes of the paths it touched just before it and
    just after it, from one replay of the feed."""
    wanted = {c.seq for c in chosen}
    states: dict[int, tuple[Nodes, Nodes]] = {}
    replay = Replay()
    for change in feed(store, max(wanted)):
        if change.seq not in wanted:
            replay.apply(change)
            continue
        touched = _touched(change)
        before = {p: replay.nodes.get(p) for p in touched}
        replay.apply(change)
        states[change.seq] = (before, {p: replay.nodes.get(p) for p in touched})
    return states


def _touched(change: Change) -> list[str]:
    return [change.path] if change.old_path is None else [change.old_path, change.path]


def _now(store: Store, path: str) -> tuple[Node | None, int]:
    """The node at ``path`` now (with its content hash) and its revision."""
    try:
        entry = store.stat(path)
    except NotFound:
        return None, 0
    if not entry.is_file:
        return Node(entry.kind), entry.rev
    newest = store.history(path, limit=1)[0]
    return Node("file", newest.sha256, entry.size), entry.rev


def _same(a: Node | None, b: Node | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.kind == b.kind and (a.kind != "file" or a.sha256 == b.sha256)


def undo(
    store: Store,
    chosen: Sequence[Change],
    *,
    author: str,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> UndoReport:
    report = UndoReport()
    if not chosen:
        return report
    with store.batch():
        start = store.last_seq()
        states = _around(store, chosen)
        for change in sorted(chosen, key=lambda c: c.seq, reverse=True):
            try:
                outcome = _revert(store, change, states[change.seq], author, dry_run)
            except (Conflict, DirectoryNotEmpty, AlreadyExists) as e:
                # Changed between the check and the revert (a directory filled since):
                # that mutation left nothing, and the change stays as it is.
                outcome = Outcome(change, "conflict", str(e))
            report.outcomes.append(outcome)
            if progress is not None:
                progress(1)
        report.made = store.last_seq() - start
    return report


def _revert(
    store: Store, change: Change, state: tuple[Nodes, Nodes], author: str, dry_run: bool
) -> Outcome:
    if change.kind == "attr":
        return Outcome(change, "skipped", "attribute changes are not undone")
    befores, afters = state
    for path, after in afters.items():
        if after is not None and after.kind == "file" and after.sha256 is None:
            return Outcome(change, "unavailable", f"the content it wrote to '{path}' is gone")
        now, _ = _now(store, path)
        if not _same(now, after):
            return Outcome(change, "conflict", f"'{path}' was changed since")
    for path, node in befores.items():
        if node is not None and node.kind == "file" and node.sha256 is None:
            return Outcome(change, "unavailable", f"the earlier content of '{path}' is gone")
    if dry_run:
        return Outcome(change, "done")
    if change.kind == "rename" and change.old_path is not None:
        store.rename(change.path, change.old_path, author=author)
        replaced = befores[change.path]
        if replaced is not None:
            _put(store, change.path, replaced, author)
        return Outcome(change, "done")
    node = befores[change.path]
    _, rev = _now(store, change.path)
    if node is None:
        store.delete(change.path, author=author, expected_rev=rev, recursive=False)
    else:
        _put(store, change.path, node, author)
    return Outcome(change, "done")


def _put(store: Store, path: str, node: Node, author: str) -> None:
    """Make ``path`` hold ``node`` (a file's content, a directory)."""
    current, rev = _now(store, path)
    if node.kind == "dir":
        if current is None:
            store.mkdir(path, author=author, parents=True)
        return
    if node.kind == "symlink":
        return  # the feed has no target to bring back
    assert node.sha256 is not None
    data = store.read_blob(node.sha256)
    store.write(path, data, author=author, expected_rev=rev, parents=True)
