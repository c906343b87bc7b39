"""An operation's changes as a person sees them: what each path held before and after.

The feed records every system call's effect (what followers need), so one editor's
save is several records: a temporary file created, written, renamed over the file.
People think in the net effect: the file was edited. :func:`fold` turns one operation's
records into :class:`Step` values, one per path the operation changed for good:

- a file created and renamed over a path in the operation is one ``modify`` of that
  path (``create`` if nothing was there), whatever temporary name it had (editors,
  ``sed -i``, rsync, the handler's own atomic write);
- a file created and removed in the operation leaves nothing, and so does a path that
  ends as it began (a rewrite with the same bytes and mode);
- a move stays a ``rename`` (a directory's carries everything below it);
- JetBrains' and vim's save dances (the file renamed aside, a new one written, the
  aside copy deleted) are one ``modify``.

Every change record carries what was at its path just before it (``prior_*``), so what
each path held before the operation is known from the operation's own records, without
replaying the feed: :mod:`memfs.history.ops` shows that and undoes it. Records written
before the store kept priors say ``before`` is :data:`UNKNOWN`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memfs.store.base import Change

StepAction = Literal["create", "modify", "delete", "mkdir", "rmdir", "rename", "symlink", "attr"]


@dataclass(frozen=True, slots=True)
class State:
    """What a path held: a file (its content's hash and size), a directory or a symlink
    (its target), with its mode when known."""

    kind: str
    sha256: str | None = None
    size: int | None = None
    mode: int | None = None
    target: str | None = None

    def same(self, other: State | None) -> bool:
        """The same content and kind (and mode, where both know it)."""
        if other is None or other.kind != self.kind:
            return False
        if self.kind == "file" and self.sha256 != other.sha256:
            return False
        if self.kind == "symlink" and self.target != other.target:
            return False
        return self.mode is None or other.mode is None or self.mode == other.mode


# What a record from before the operation log says a path held: nobody knows.
UNKNOWN = State("unknown")


@dataclass(frozen=True, slots=True)
class Step:
    """One path's net change in an operation. ``before`` is what the path (``old_path``
    for a rename) held before the operation, ``after`` what the operation left at
    ``path`` (None: nothing); ``replaced`` what a rename's destination held before."""

    action: StepAction
    path: str
    before: State | None
    after: State | None
    old_path: str | None = None
    replaced: State | None = None
    rev: int | None = None


def after_of(change: Change) -> State | None:
    """What a record left at its path (None for a removal)."""
    kind = change.kind
    if kind in ("delete", "rmdir"):
        return None
    if kind == "mkdir":
        return State("dir", mode=change.mode)
    if kind == "symlink":
        return State("symlink", mode=change.mode, target=change.target)
    if kind == "attr":
        prior = prior_of(change) or UNKNOWN
        return State(prior.kind, prior.sha256, prior.size, change.mode, prior.target)
    if kind == "rename" and change.sha256 is None:
        # A directory or a symlink moved; a file's rename carries its content's hash.
        if change.target is not None:
            return State("symlink", mode=change.mode, target=change.target)
        return State("dir", mode=change.mode)
    return State("file", change.sha256, change.size, change.mode)


def prior_of(change: Change) -> State | None:
    """What was at the record's path just before it (None: nothing there)."""
    if change.op is None or change.prior_kind == "?":
        return UNKNOWN  # written before the store kept priors
    if change.prior_kind is None:
        return None
    return State(
        change.prior_kind,
        change.prior_sha256,
        change.prior_size,
        change.prior_mode,
        change.prior_target,
    )


@dataclass(slots=True, eq=False)
class _Track:
    """One thing the operation touched: where it was before the operation (``origin``,
    None if the operation made it) and what it was then, and what it is now."""

    origin: str | None
    before: State | None
    after: State | None
    rev: int | None = None
    removed_by: str = ""  # the record kind that removed it (delete or rmdir)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _moved(path: str, src: str, dst: str) -> str:
    return dst + path[len(src) :]


@dataclass(slots=True)
class _Fold:
    current: dict[str, _Track] = field(default_factory=dict)  # path now -> what is there
    tracks: list[_Track] = field(default_factory=list)
    # Directory moves in order, with the directory that moved.
    moves: list[tuple[str, str, _Track]] = field(default_factory=list)

    def origin_of(self, path: str) -> str:
        """Where ``path`` was before the operation, through its directory moves."""
        for src, dst, _ in reversed(self.moves):
            if _under(path, dst):
                path = _moved(path, dst, src)
        return path

    def touch(self, path: str, prior: State | None) -> _Track | None:
        """What is at ``path`` now; on a first touch, what ``prior`` says was there."""
        track = self.current.get(path)
        if track is None and prior is not None:
            track = _Track(self.origin_of(path), prior, prior)
            self.tracks.append(track)
            self.current[path] = track
        return track

    def made(self, path: str, after: State | None, rev: int | None) -> None:
        track = _Track(None, None, after, rev)
        self.tracks.append(track)
        self.current[path] = track

    def apply(self, change: Change) -> None:
        kind, path = change.kind, change.path
        if kind == "rename" and change.old_path is not None:
            self.rename(change.old_path, path, change)
            return
        track = self.touch(path, prior_of(change))
        if kind in ("delete", "rmdir"):
            if track is not None:
                track.after, track.removed_by = None, kind
                del self.current[path]
        elif kind in ("create", "mkdir", "symlink") or track is None:
            self.made(path, after_of(change), change.rev)
        else:
            track.after, track.rev = after_of(change), change.rev

    def rename(self, src: str, dst: str, change: Change) -> None:
        after = after_of(change)
        moving = self.current.pop(src, None)
        if moving is None:
            # First touch: it was at src before the operation, as the record carries it.
            before = after if change.op is not None else UNKNOWN
            moving = _Track(self.origin_of(src), before, after)
            self.tracks.append(moving)
        replaced = self.current.pop(dst, None)
        if replaced is not None:
            replaced.after = None
        else:
            prior = prior_of(change)
            if prior is not None:
                self.tracks.append(_Track(self.origin_of(dst), prior, None))
        if after is not None and after.kind == "dir":
            self.moves.append((src, dst, moving))
            for path in [p for p in self.current if _under(p, src)]:
                self.current[_moved(path, src, dst)] = self.current.pop(path)
        moving.after, moving.rev = after, change.rev
        self.current[dst] = moving

    def steps(self) -> list[Step]:
        now = self.current
        where = {id(t): p for p, t in now.items()}  # where each thing still there is
        was = {t.origin: t for t in self.tracks if t.origin is not None}
        # Directories that were there before, moved, and are still there: what was below
        # one before the operation is now below where it went (deepest first).
        moved_dirs = sorted(
            (
                (origin, where[id(t)])
                for origin, t in was.items()
                if t.before is not None and t.before.kind == "dir"
                and id(t) in where and where[id(t)] != origin
            ),
            key=lambda m: -len(m[0]),
        )  # fmt: skip

        def placed(origin: str) -> str:
            """Where ``origin``'s place is once its moved ancestors have moved."""
            for old, new in moved_dirs:
                if origin.startswith(old + "/"):
                    return new + origin[len(old) :]
            return origin

        # What the operation removed or replaced, by where its place is now.
        lost = {placed(o): t for o, t in was.items() if id(t) not in where and t.before}
        renames: list[Step] = []
        changes: list[Step] = []
        for path, track in sorted(now.items()):
            if track.origin is not None and placed(track.origin) != path:
                old = lost.pop(path, None)
                renames.append(
                    Step(
                        "rename", path, track.before, track.after, placed(track.origin),
                        None if old is None else old.before, track.rev,
                    )
                )  # fmt: skip
                continue
            if track.origin is not None:
                before = track.before
            else:
                old = lost.pop(path, None)
                before = None if old is None else old.before
            step = _net(path, before, track)
            if step is not None:
                changes.append(step)
        removals = [
            Step(
                "rmdir" if t.before.kind == "dir" or t.removed_by == "rmdir" else "delete",
                path, t.before, None,
            )
            for path, t in sorted(lost.items(), reverse=True)
            if t.before is not None
        ]  # fmt: skip
        # Outer directories move first: an inner rename's old path is where it is then.
        renames.sort(key=lambda s: (s.old_path or "").count("/"))
        return renames + changes + removals


def _net(path: str, before: State | None, track: _Track) -> Step | None:
    """The step that took ``path`` from ``before`` to what ``track`` left there."""
    after = track.after
    if after is None or after.same(before):
        return None
    if before is None:
        return Step(_making(after), path, None, after, rev=track.rev)
    if before.kind == after.kind and (
        before.kind == "dir" or (before.kind == "file" and before.sha256 == after.sha256)
    ):
        return Step("attr", path, before, after, rev=track.rev)
    action: StepAction = "modify" if after.kind == "file" else _making(after)
    return Step(action, path, before, after, rev=track.rev)


def _making(state: State) -> StepAction:
    if state.kind == "dir":
        return "mkdir"
    if state.kind == "symlink":
        return "symlink"
    return "create"


def fold(changes: list[Change]) -> list[Step]:
    """The net steps of one operation's records (given oldest first): renames first,
    outer directories before what moved inside them (each step's ``old_path`` is where
    the thing is once the renames before it are done), then what was made or changed,
    by path, then removals, deepest first."""
    folder = _Fold()
    for change in changes:
        folder.apply(change)
    return folder.steps()
