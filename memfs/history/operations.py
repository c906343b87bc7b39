"""Operations: what one actor did in one go, the unit of history people read and undo.

Every change belongs to exactly one operation, recorded by the store in the same
transaction as the change (:meth:`memfs.store.base.Store.acting`): one memory command
from any door, one ``memfs`` command that changes the tree, or one process's burst of
changes through a mount (consecutive changes by one process with no pause longer than
:data:`memfs.mount.bursts.BURST_GAP_S`). This module reads them as people see them: a
summary from the operation's net steps (:mod:`memfs.history.steps`: temporary files
folded away), and takes one back whole (:func:`undo_operation`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from memfs.errors import Conflict, NotFound, Redacted, StoreError
from memfs.history.steps import UNKNOWN, State, Step, after_of, fold, prior_of
from memfs.store.base import Act, Change, Store
from memfs.store.base import Operation as StoredOperation
from memfs.store.rebase import is_conflict_copy

# An operation of more records than this is summed up from its first ones only
# (a log page must not read a 5,000-file delete whole to say what it was).
SUMMARY_RECORDS = 20_000
# An operation of at most this many steps names each; a larger one is counted.
NAMED_STEPS = 3

_VERBS = {
    "create": "created",
    "modify": "edited",
    "delete": "deleted",
    "rename": "renamed",
    "mkdir": "made directory",
    "rmdir": "removed directory",
    "attr": "changed the mode of",
    "symlink": "made link",
}
_NOUNS = {
    "create": ("created", "file", "files"),
    "modify": ("edited", "file", "files"),
    "delete": ("deleted", "file", "files"),
    "rename": ("moved", "entry", "entries"),
    "mkdir": ("made", "directory", "directories"),
    "rmdir": ("removed", "directory", "directories"),
    "attr": ("changed the mode of", "entry", "entries"),
    "symlink": ("made", "link", "links"),
}


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation as people read it."""

    id: int
    actor: str  # "agent:planner", "root (rm)", "memfs restore (user alice)"
    detail: str  # shown small: "pid 812", "undo of operation 41" ("" if none)
    start_ns: int
    end_ns: int
    summary: str  # "rm: deleted 5,000 files in many/", "agent: edited notes/a.md"
    counts: dict[str, int] = field(hash=False)  # step action -> how many
    top: str  # the deepest directory holding every path it touched ("" the root)
    label: str = ""  # the program or command ("rm", "memfs restore")
    command: str = ""  # which of memfs's own commands made it ("restore"); "" for a door

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "actor": self.actor,
            "detail": self.detail,
            "label": self.label,
            "command": self.command,
            "time": self.start_ns / 1e9,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "summary": self.summary,
            "counts": dict(self.counts),
            "top": self.top,
        }


def _top(steps: Iterable[Step]) -> str:
    common: list[str] | None = None
    for step in steps:
        for path in (step.path, step.old_path):
            if path is None:
                continue
            parts = path.split("/")
            # A path names an entry; what holds it is its directory (a directory made or
            # removed holds what is below it, so it is its own top).
            dirs = parts if step.action in ("mkdir", "rmdir") and path == step.path else parts[:-1]
            if common is None:
                common = dirs
                continue
            n = 0
            while n < min(len(common), len(dirs)) and common[n] == dirs[n]:
                n += 1
            common = common[:n]
    return "/".join(common or [])


def describe(steps: list[Step], who: str) -> tuple[str, dict[str, int], str]:
    """The summary, counts and top of an operation's steps, ``who`` leading it."""
    counts: dict[str, int] = {}
    for step in steps:
        counts[step.action] = counts.get(step.action, 0) + 1
    top = _top(steps)
    if not steps:
        return f"{who}: changed nothing for good", counts, top
    if len(steps) <= NAMED_STEPS:
        named = []
        for step in steps:
            what = step.path if step.old_path is None else f"{step.old_path} -> {step.path}"
            verb = _VERBS[step.action]
            if step.action == "create" and is_conflict_copy(step.path):
                # Two writers changed the same lines: one version is kept whole here.
                verb = "kept a conflict copy"
            named.append(f"{verb} {what or '/'}")
        return f"{who}: {', '.join(named)}", counts, top
    parts = []
    for action, n in counts.items():
        verb, one, many = _NOUNS[action]
        parts.append(f"{verb} {n:,} {one if n == 1 else many}")
    copies = sum(s.action == "create" and is_conflict_copy(s.path) for s in steps)
    if copies:
        parts.append(f"kept {copies:,} conflict {'copy' if copies == 1 else 'copies'}")
    where = f" in {top}/" if top else ""
    return f"{who}: {', '.join(parts)}{where}", counts, top


def _who(stored: StoredOperation) -> str:
    return stored.label or stored.actor


def _read(store: Store, stored: StoredOperation) -> Operation:
    records = store.changes(op=stored.id, limit=SUMMARY_RECORDS)
    summary, counts, top = describe(fold(records), _who(stored))
    if stored.changes > len(records):
        summary += f" (and {stored.changes - len(records):,} more changes)"
    return Operation(
        stored.id,
        stored.actor,
        stored.detail,
        stored.start_ns,
        stored.end_ns,
        summary,
        counts,
        top,
        stored.label,
        stored.command,
    )


def operations(
    store: Store,
    *,
    path: str = "",
    actor: str | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    before: int | None = None,
    limit: int = 20,
) -> list[Operation]:
    """Operations newest first: ids below ``before`` (paging), touching ``path`` or
    below it, by an actor whose name contains ``actor``, started within the times."""
    stored = store.operations(
        before=before,
        limit=limit,
        actor=actor,
        since_ns=since_ns,
        until_ns=until_ns,
        path=path or None,
    )
    return [_read(store, op) for op in stored]


def operation(store: Store, op_id: int) -> Operation:
    """Operation ``op_id``; NotFound if there is none."""
    return _read(store, store.operation(op_id))


def operation_changes(store: Store, op_id: int) -> list[Change]:
    """The feed records of operation ``op_id``, oldest first (NotFound if unknown).
    Records written before the store kept what each change found (``prior_kind`` "?",
    from a store the operation log migrated) get it from a replay of the feed."""
    store.operation(op_id)
    records = store.changes(op=op_id)
    if any(r.prior_kind == "?" for r in records):
        records = _replayed_priors(store, records)
    return records


def _replayed_priors(store: Store, records: list[Change]) -> list[Change]:
    """``records`` with their priors from the tree as the feed says it was before each
    (modes and symlink targets the feed never held stay unknown: the store's default
    mode is put back)."""
    from memfs.history.timeline import Replay, feed

    wanted = {r.seq: r for r in records}
    replay = Replay()
    out: list[Change] = []
    for change in feed(store, records[-1].seq):
        record = wanted.get(change.seq)
        if record is not None:
            node = replay.nodes.get(record.path)
            out.append(
                replace(
                    record,
                    prior_kind=None if node is None else node.kind,
                    prior_sha256=None if node is None else node.sha256,
                    prior_size=None if node is None else node.size,
                )
            )
        replay.apply(change)
    return out


def operation_steps(store: Store, op_id: int) -> list[Step]:
    """What operation ``op_id`` did, path by path, as people read it."""
    return fold(operation_changes(store, op_id))


# --- undo -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UndoResult:
    """What an undo did or would do: ``conflicts`` says why for each path it could not
    take back (changed since by someone else, or content no longer retained); ``done``
    whether it changed the tree, as ``made`` feed records of operation ``new_op``."""

    conflicts: list[str]
    done: bool
    made: int
    new_op: int | None
    steps: list[Step] = field(default_factory=list)  # what it takes back


def _now(store: Store, path: str) -> State | None:
    try:
        entry = store.stat(path)
    except NotFound:
        return None
    if entry.kind == "file":
        newest = store.history(path, limit=1)[0]
        return State("file", newest.sha256, entry.size, entry.mode)
    return State(entry.kind, mode=entry.mode, target=entry.target)


def _retained(store: Store, state: State | None) -> bool:
    if state is None or state.kind != "file" or state.sha256 is None:
        return True
    try:
        store.read_blob(state.sha256)
    except NotFound:
        return False
    return True


def _same(state: State | None, now: State | None) -> bool:
    if state is None:
        return now is None
    return state.same(now)


def conflicts_of(store: Store, steps: list[Step]) -> list[str]:
    """Why each step cannot be taken back now: its path no longer holds what the
    operation left there, or the earlier content is no longer retained."""
    found: list[str] = []
    for step in steps:
        if step.before is UNKNOWN:
            found.append(f"'{step.old_path or step.path}': its earlier state was not recorded")
            continue
        now = _now(store, step.path)
        if not _same(step.after, now):
            found.append(f"'{step.path}' was changed since")
            continue
        if step.action == "rename" and step.old_path is not None:
            back = _now(store, step.old_path)
            if back is not None:
                found.append(f"'{step.old_path}' holds something new since")
                continue
        for earlier in (step.before, step.replaced):
            if not _retained(store, earlier):
                found.append(f"the earlier content of '{step.old_path or step.path}' is gone")
                break
    return found


class _Refused(Exception):
    """A conflict met while undoing for real: the batch is rolled back."""


class _Reverter:
    """Takes an operation's records back newest first, in one batch.

    A record is taken back only while its path holds what it left (a later record of
    the same operation may have moved it on already). What a record found may be an
    intermediate state whose content the store no longer keeps (a temporary file's
    earlier bytes, dropped once the operation renamed it away): such a state is held
    here, not written, until an earlier record takes the path further back. One left
    over at the end means the operation cannot be taken back whole."""

    def __init__(self, store: Store, author: str) -> None:
        self.store = store
        self.author = author
        self.virtual: dict[str, State] = {}

    def now(self, path: str) -> State | None:
        if path in self.virtual:
            return self.virtual[path]
        return _now(self.store, path)

    def put(self, path: str, state: State) -> None:
        """Make ``path`` hold ``state`` (a file's content by hash, a directory, a link)."""
        store, author = self.store, self.author
        self.virtual.pop(path, None)
        current = _now(store, path)
        if state.kind == "dir":
            if current is None:
                store.mkdir(path, author=author, mode=state.mode or 0o700, parents=True)
            elif state.mode is not None and current.mode != state.mode:
                store.set_attrs(path, author=author, mode=state.mode)
            return
        if state.kind == "symlink":
            if current is None and state.target is not None:
                store.symlink(path, state.target, author=author)
            return
        assert state.sha256 is not None
        if not _retained(store, state):
            if current is None:  # a name to carry the state, for a rename back
                store.write(path, b"", author=author, expected_rev=0, parents=True)
            self.virtual[path] = state
            return
        data = store.read_blob(state.sha256)
        rev = store.stat(path).rev if current is not None else 0
        store.write(path, data, author=author, expected_rev=rev, mode=state.mode, parents=True)
        if current is not None and state.mode is not None and current.mode != state.mode:
            store.set_attrs(path, author=author, mode=state.mode)

    def remove(self, path: str) -> None:
        self.virtual.pop(path, None)
        try:
            entry = self.store.stat(path)
        except NotFound:
            return
        self.store.delete(path, author=self.author, expected_rev=entry.rev)

    def rename(self, path: str, to: str) -> None:
        self.store.rename(path, to, author=self.author)
        below = path + "/"
        for held in [p for p in self.virtual if p == path or p.startswith(below)]:
            self.virtual[to + held[len(path) :]] = self.virtual.pop(held)

    def revert(self, change: Change) -> None:
        kind, path = change.kind, change.path
        after, prior = after_of(change), prior_of(change)
        now = self.now(path)
        if kind == "rename" and change.old_path is not None:
            if after is not None and after.same(now) and self.now(change.old_path) is None:
                self.rename(path, change.old_path)
                if prior is not None:
                    self.put(path, prior)
            return
        if not _same(after, now):
            return
        if prior is None:
            self.remove(path)
        else:
            self.put(path, prior)

    def finish(self) -> None:
        if self.virtual:
            gone = sorted(self.virtual)[0]
            raise _Refused(f"the earlier content of '{gone}' is gone")


def undo_operation(
    store: Store,
    op_id: int,
    *,
    actor: str,
    force: bool = False,
    dry_run: bool = False,
    label: str = "memfs undo",
) -> UndoResult:
    """Take operation ``op_id`` back whole, as one new operation by ``actor``: all or
    nothing. When a path it would change was changed since by someone else, the
    conflicts are listed and nothing changes, unless ``force`` (then what can be taken
    back is). Undoing an undo redoes. NotFound for an unknown operation."""
    records = operation_changes(store, op_id)
    return _undo(store, [records], actor=actor, force=force, dry_run=dry_run, label=label,
                 detail=f"undo of operation {op_id}")  # fmt: skip


def undo_operations(
    store: Store,
    op_ids: list[int],
    *,
    actor: str,
    force: bool = False,
    dry_run: bool = False,
    label: str = "memfs undo",
) -> UndoResult:
    """Several operations taken back newest first, as one new operation."""
    ordered = sorted(op_ids, reverse=True)
    records = [operation_changes(store, op) for op in ordered]
    shown = ", ".join(str(op) for op in ordered[:5]) + (" ..." if len(ordered) > 5 else "")
    what = "operation" if len(ordered) == 1 else "operations"
    return _undo(store, records, actor=actor, force=force, dry_run=dry_run, label=label,
                 detail=f"undo of {what} {shown}")  # fmt: skip


def _undo(
    store: Store,
    groups: list[list[Change]],
    *,
    actor: str,
    force: bool,
    dry_run: bool,
    label: str,
    detail: str,
) -> UndoResult:
    steps = [step for records in groups for step in fold(records)]
    conflicts = conflicts_of(store, steps)
    if dry_run or (conflicts and not force):
        return UndoResult(conflicts, False, 0, None, steps)
    # An undo through any door is a history command: an older pending write must not
    # revert it (memfs.store.rebase).
    act = Act(actor, detail=detail, label=label, command="undo")
    try:
        with store.acting(act), store.batch():
            start = store.last_seq()
            reverter = _Reverter(store, actor)
            for records in groups:
                for change in reversed(records):
                    try:
                        reverter.revert(change)
                    except (Conflict, StoreError) as exc:
                        if isinstance(exc, Redacted) or not force:
                            raise _Refused(str(exc)) from exc
            reverter.finish()
            made = store.last_seq() - start
    except _Refused as exc:
        return UndoResult([*conflicts, str(exc)], False, 0, None, steps)
    return UndoResult(conflicts, made > 0, made, act.id if made else None, steps)
