"""What one step of an operation did to content, as the operation's page shows it.

An operation's records fold into net steps per path (:func:`memfs.history.steps.fold`:
an editor's temporary file and its rename over the original are one edit of the
original). Each step says what its path held before and after by content hash, so the
page reads both sides with :meth:`~memfs.store.base.Store.read_blob` and diffs them:
text line by line, binary by size and hash. Content no longer retained (pruned,
redacted) or damaged is said so, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from memfs.errors import Damaged, NotFound
from memfs.history.bounded import Budget
from memfs.history.steps import State, Step
from memfs.store.base import Store
from memfs.web.render import Diff, as_text, diff

_TITLES = {
    "create": "created",
    "modify": "edited",
    "delete": "deleted",
    "mkdir": "made directory",
    "rmdir": "removed directory",
    "attr": "changed the mode of",
    "symlink": "made link",
}


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a step: what kind of entry, its size, hash and mode; ``gone`` says a
    file's content can no longer be read (not retained, redacted or damaged)."""

    kind: str
    size: int | None = None
    sha256: str | None = None
    mode: int | None = None
    target: str | None = None
    gone: str = ""  # why the content cannot be shown ("" when it can)


@dataclass(frozen=True, slots=True)
class StepView:
    step: Step
    title: str
    before: Side | None
    after: Side | None
    diff: Diff | None  # None: nothing to compare (a directory, a mode, gone content)
    notes: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return self.step.path


def _mode(mode: int | None) -> str:
    return "?" if mode is None else f"{mode:o}"


def _read(store: Store, state: State | None) -> tuple[Side | None, bytes | None]:
    if state is None:
        return None, None
    side = Side(state.kind, state.size, state.sha256, state.mode, state.target)
    if state.kind != "file":
        return side, None
    if state.sha256 is None:
        return Side(state.kind, state.size, None, state.mode, gone="not recorded"), None
    try:
        return side, store.read_blob(state.sha256)
    except Damaged:
        return Side(state.kind, state.size, state.sha256, state.mode, gone="damaged"), None
    except NotFound:
        gone = "no longer retained"
        return Side(state.kind, state.size, state.sha256, state.mode, gone=gone), None


def view(store: Store, step: Step, limit: int, budget: Budget | None = None) -> StepView:
    """What ``step`` did, with the diff of its content (at most ``limit`` rows, a
    summary past its share of ``budget``)."""
    path = step.path
    if step.action == "rename":
        title = f"renamed {step.old_path} → {path}"
    else:
        title = f"{_TITLES[step.action]} {path}"
    before, old = _read(store, step.before)
    after, new = _read(store, step.after)
    notes: list[str] = []
    if step.replaced is not None:
        replaced = step.replaced
        what = "a directory" if replaced.kind == "dir" else f"a {replaced.kind}"
        notes.append(f"it replaced {what} at {path}")
    modes = (before.mode if before else None, after.mode if after else None)
    if None not in modes and modes[0] != modes[1]:
        notes.append(f"mode {_mode(modes[0])} → {_mode(modes[1])}")
    if step.before is not None and step.before.kind == "unknown":
        notes.append("what was here before was not recorded (a change from an older memfs)")
    files = [s for s in (before, after) if s is not None and s.kind == "file"]
    if not files or step.action == "attr":
        return StepView(step, title, before, after, None, tuple(notes))
    gone = [s.gone for s in files if s.gone]
    if gone:
        return StepView(step, title, before, after, None, (*notes, f"content {gone[0]}"))
    if step.action == "rename" and old == new:
        return StepView(step, title, before, after, None, (*notes, "content unchanged"))
    if any(d is not None and as_text(d) is None for d in (old, new)):
        return StepView(step, title, before, after, Diff([], 0, binary=True), tuple(notes))
    old_name = f"a/{step.old_path or path}" if old is not None else "a"
    new_name = f"b/{path}" if new is not None else "b"
    shown = diff(old, new, old_name, new_name, limit, budget.part() if budget else None)
    return StepView(step, title, before, after, shown, tuple(notes))


def views(
    store: Store, steps: list[Step], start: int, count: int, limit: int, budget: Budget | None
) -> list[StepView]:
    """Views of ``steps[start:start+count]``, each diff at most ``limit`` rows, all of
    them within ``budget``."""
    return [view(store, step, limit, budget) for step in steps[start : start + count]]
