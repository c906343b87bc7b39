"""Landing a change whose base may have moved: compare-and-set, then rebase or keep both.

A change made away from the store (the mount's buffered writes, the mirror's edit of a
file in DIR, a dead daemon's journal) knows the revision it was built on. :func:`land`
writes it with ``expected_rev`` set to that revision; when another writer (another
mount, host or door, a restore, an undo, an import) committed in between, the change is
brought onto the newer content by the rules below, and never written over it blindly:

- **append** (:attr:`Shape.APPEND`: every byte it changed lies past the base's end, as
  O_APPEND writes do): its tail goes after the newer content, so both writers' lines
  survive, as two O_APPEND writers' do on one local disk;
- **whole** (:attr:`Shape.WHOLE`: the file was created, or truncated to nothing and
  written, or a file renamed over it; a save of the whole file, as editors and agents
  make): merged three ways (:func:`memfs.store.merge.merge3`: base, ours, theirs) with
  what changed since the revision its writer read, so a line another writer added
  meanwhile survives the save. A file created here has the empty file as its base: two
  writers that create one name (``>>``, a logger, an editor's first save) keep both
  contents, theirs first, as appends do. When the two changed the same lines, the save
  still lands (last writer wins) and the content it replaced is kept whole as a
  *conflict copy* beside the file, named after its writer (outcome ``displaced``).
  Binary content, and a base no longer known, stay last writer wins (``replaced``: the
  content it replaced stays a revision). Over a history command (``memfs restore``,
  ``undo``, ``import``) a change that predates the command must not revert it: ours is
  kept as a conflict copy instead;
- **edit** (:attr:`Shape.EDIT`: bytes of the base changed in place): :func:`merge3` of
  the base, ours and theirs when the two changed different lines; when they changed the
  same ones it is a conflict: theirs stays current, ours is kept as a *conflict copy*
  beside the file (:func:`conflict_name`), a new file that passes the path gate and
  never replaces anything, so it is a revision like any other;
- the file deleted meanwhile: ours is written again (an edit beats a delete, as in the
  mirror: deleting is the one outcome that could lose the only copy of someone's work).

Every rule is written once, over the :class:`~memfs.store.base.Store` interface, so both
backends keep the same promises (``tests/store_contract/rebase.py``).
"""

from __future__ import annotations

import contextlib
import enum
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memfs.actors import by_history_command
from memfs.errors import AlreadyExists, Conflict, NotFound
from memfs.store.base import Entry, Store
from memfs.store.merge import is_text
from memfs.store.merge import merge3 as merge3  # re-exported: the one merge of contents
from memfs.store.rules import sha256_of

# Each failed compare-and-set means another writer committed: progress for them. Past
# this many in a row the change is kept as a conflict copy rather than retried forever.
MAX_TRIES = 100

Outcome = Literal["written", "rebased", "merged", "replaced", "conflict", "displaced", "recreated"]


class Shape(enum.Enum):
    """How a change relates to its base (see the module docstring)."""

    APPEND = "append"
    WHOLE = "whole"
    EDIT = "edit"


@dataclass(frozen=True, slots=True)
class Landing:
    """What became of a change. ``entry`` is what is at the path now: ours (``written``,
    ``recreated``, ``replaced``; ``displaced``, theirs then being at ``copy``), the merge
    (``rebased`` for an append or edit, ``merged`` for a whole save) or theirs
    (``conflict``, ours then being at ``copy``). ``over`` is the newer revision the
    change met, if any. ``content``: the bytes at ``entry`` when they are not the
    change's own and the landing has them (rebased, merged, recreated): what a caller
    holding later changes builds on, without reading a revision that another writer's
    history may have pruned by then (None: the change's own bytes, or not kept)."""

    entry: Entry
    outcome: Outcome
    copy: str | None = None
    over: int | None = None
    content: bytes | None = None


_SIDE = re.compile(r"[^A-Za-z0-9_-]+")
_COPY = re.compile(r"\.conflict-\d{8}-\d{6}-[A-Za-z0-9_-]+(\.|$)")


def is_conflict_copy(path: str) -> bool:
    """Whether ``path`` names a conflict copy (:func:`conflict_name`'s pattern): what
    history, notices and status call out, whoever made it and through whichever door."""
    return _COPY.search(path.rpartition("/")[2]) is not None


def conflict_name(name: str, when: datetime, side: str, taken: Collection[str] = ()) -> str:
    """The name of the copy kept beside ``name`` when two writers changed the same bytes.

    ``notes.md`` becomes ``notes.conflict-20261129-184300-SIDE.md``: the extension stays
    last so editors still recognise the file, the stamp sorts chronologically, ``SIDE``
    (the writer: ``local`` for the mirror, a program for the mount) is cut to letters,
    digits, ``-`` and ``_``. A counter is added while the name is in ``taken``; the result
    stays within the path gate's 255-byte segment limit.
    """
    stem, dot, ext = name.rpartition(".")
    if not stem:  # "README", ".bashrc": no extension to keep last
        stem, dot, ext = name, "", ""
    stamp = when.strftime("%Y%m%d-%H%M%S")
    tag = _SIDE.sub("-", side).strip("-")[:40] or "copy"
    counter = 1
    while True:
        suffix = f".conflict-{stamp}-{tag}" + (f"-{counter}" if counter > 1 else "")
        room = 255 - len((suffix + dot + ext).encode("utf-8"))
        short = stem.encode("utf-8")[: max(room, 1)].decode("utf-8", errors="ignore")
        candidate = short + suffix + dot + ext
        if candidate not in taken:
            return candidate
        counter += 1


def land(
    store: Store,
    path: str,
    data: bytes | bytearray,
    *,
    base_rev: int,
    shape: Shape,
    base_size: int = 0,
    base: bytes | None = None,
    author: str,
    mode: int | None = None,
    side: str = "",
    tries: int = MAX_TRIES,
    before_write: Callable[[str, int, str], None] | None = None,
    replace: bool = False,
    mtime_ns: int | None = None,
    written_ns: int | None = None,
    sha256: str | None = None,
) -> Landing:
    """Commit ``data`` at ``path`` as the change built on revision ``base_rev`` (0: the
    file did not exist), by the module's rules.

    ``base_size``: the base's size (an append's own bytes are ``data[base_size:]``).
    ``base``: the base's content for a merge; when None it is read from the store's
    history (a base no longer retained makes a conflicting edit a copy, and a whole
    save the last writer). ``mode``:
    the file's mode if it is created. ``side`` names the writer in a conflict copy's name.
    ``before_write(target, expected_rev, sha256)`` is called before each write is
    tried with the hex SHA-256 of what is written (a journal notes it, so a replay can
    tell a landed change from one that did not); the write reuses that hash.
    ``replace``: the change is a file renamed over ``path`` (the store's
    ``write(replace=True)``). ``mtime_ns``: the mtime the change lands with (one set
    explicitly after the write; None: the time of the write). ``written_ns``: when the
    change was made; it lands with that mtime if it lands as made (written over its
    base, not rebased, merged or recreated), so a file's time does not move when a
    change made earlier is committed. ``sha256``: the hex SHA-256 of ``data``, if the
    caller has it (a queue of appends hashes each turn from the one before). The
    store's refusals
    (TooLarge, CapExceeded, NotADirectory, StoreUnavailable, ...) propagate and nothing
    is written; Conflict never does.
    """
    note = before_write or (lambda target, expected, sha: None)
    expected = base_rev
    outcome: Outcome = "written"
    over: int | None = None
    content = data
    replaced = b""  # what a displacing save replaces (compare-and-set: exactly this)
    for _ in range(tries):
        sha = sha256 if sha256 is not None and content is data else sha256_of(content)
        note(path, expected, sha)
        try:
            entry = store.write(
                path,
                content,
                author=author,
                expected_rev=expected,
                mode=mode,
                parents=True,
                replace=replace,
                mtime_ns=mtime_ns if mtime_ns is not None or outcome != "written" else written_ns,
                sha256=sha,
            )
        except (Conflict, AlreadyExists, NotFound) as e:
            if isinstance(e, NotFound) and e.path != path:
                raise  # a parent is missing or is not a directory: not a moved base
        else:
            if outcome != "displaced":
                held = None if content is data else bytes(content)
                return Landing(entry, outcome, None, over, held)
            assert over is not None
            writer = _author_of(store, path, over)
            copy = _write_copy(store, path, replaced, writer, mode, author, note)
            return Landing(entry, outcome, copy, over)
        try:
            theirs, now = store.read(path)
        except NotFound:
            # Deleted meanwhile (or never there): ours comes back whole.
            expected, content, outcome = 0, data, "recreated"
            continue
        over = now.rev
        if shape is Shape.APPEND:
            content, outcome = theirs + data[base_size:], "rebased"
        elif shape is Shape.WHOLE:
            if _protected_since(store, path, base_rev):
                return _keep_copy(store, path, data, now, author, mode, side, note)
            known = _base_of(store, path, base_rev, base)
            ours = bytes(data)  # (a mount's large buffer comes as its bytearray)
            if known is None or not is_text(known, ours, theirs):
                content, outcome = data, "replaced"
            else:
                merged = merge3(known, ours, theirs)
                if merged is None:  # ours lands; what it replaces is kept as a copy
                    content, outcome, replaced = data, "displaced", theirs
                elif merged == theirs:  # nothing of ours is missing from theirs
                    return Landing(now, "merged", None, over, theirs)
                else:
                    content, outcome = merged, "merged"
        else:
            merged = _merge_edit(store, path, base_rev, base, bytes(data), theirs)
            if merged is None:
                return _keep_copy(store, path, data, now, author, mode, side, note)
            content, outcome = merged, "rebased"
        expected = now.rev
    # Never a silent drop: a file that would not hold still keeps ours beside it.
    theirs_entry = store.stat(path)
    return _keep_copy(store, path, data, theirs_entry, author, mode, side, note)


def reconcile(
    store: Store,
    path: str,
    *,
    base_rev: int,
    author: str,
    side: str = "",
) -> Landing | None:
    """A file was just renamed over ``path`` (a save through a temporary file that
    reached the store before its rename), though its writer had read revision
    ``base_rev`` of ``path``: what another writer changed since is brought back by the
    rules of a whole save (merged, or the replaced content kept as a conflict copy). The
    replaced revision is the newest one at ``path`` before the arrival, as the store has
    it (the caller's view may lag behind another host's write). None when nothing was
    to be brought back (or the save is binary, or its base is gone)."""
    if base_rev <= 0:
        return None
    try:
        ours, now = store.read(path)
        older = [r for r in store.history(path, limit=8) if r.rev < now.rev]
        if not older or older[0].rev == base_rev or older[0].redacted_by is not None:
            return None
        replaced_rev = older[0].rev
        base = store.read_revision(path, base_rev)
        theirs = store.read_revision(path, replaced_rev)
    except NotFound:
        return None
    if not is_text(base, ours, theirs):
        return None
    merged = merge3(base, ours, theirs)
    if merged is None:
        writer = older[0].author
        copy = _write_copy(store, path, theirs, writer, None, author, lambda *_: None)
        return Landing(now, "displaced", copy, replaced_rev)
    if merged == ours:
        return None
    landing = land(
        store, path, merged, base_rev=now.rev, shape=Shape.WHOLE, base=ours, author=author,
        side=side,
    )  # fmt: skip
    outcome: Outcome = "merged" if landing.outcome == "written" else landing.outcome
    return Landing(landing.entry, outcome, landing.copy, replaced_rev)


def _base_of(store: Store, path: str, base_rev: int, base: bytes | None) -> bytes | None:
    """The content a change was built on: given, the empty file for a file created by
    its writer (``base_rev`` 0), else read from the history; None when it is no longer
    retained (or was redacted): nothing to merge against."""
    if base is not None:
        return base
    if base_rev == 0:
        return b""
    try:
        return store.read_revision(path, base_rev)
    except NotFound:
        return None


def _merge_edit(
    store: Store, path: str, base_rev: int, base: bytes | None, ours: bytes, theirs: bytes
) -> bytes | None:
    if base is None and base_rev == 0:
        return None
    known = _base_of(store, path, base_rev, base)
    if known is None:
        return None
    return merge3(known, ours, theirs, lines=is_text(known, ours, theirs))


def _protected_since(store: Store, path: str, base_rev: int) -> bool:
    """Whether a history command wrote ``path`` after revision ``base_rev``: asked of
    the operations' typed command, never of an author's text."""
    return any(by_history_command(command) for command in store.commands_since(path, base_rev))


def _author_of(store: Store, path: str, rev: int) -> str:
    """The writer of revision ``rev`` of ``path``, as a conflict copy's name gives it."""
    with contextlib.suppress(NotFound):
        for r in store.history(path, limit=4):
            if r.rev == rev:
                return r.author
    return "other"


def _keep_copy(
    store: Store,
    path: str,
    data: bytes | bytearray,
    theirs: Entry,
    author: str,
    mode: int | None,
    side: str,
    note: Callable[[str, int, str], None],
) -> Landing:
    """Write ``data`` to a new conflict copy beside ``path``; theirs stays current."""
    copy = _write_copy(store, path, data, side or author.split(" ", 1)[0], mode, author, note)
    return Landing(theirs, "conflict", copy, theirs.rev)


def _write_copy(
    store: Store,
    path: str,
    data: bytes | bytearray,
    side: str,
    mode: int | None,
    author: str,
    note: Callable[[str, int, str], None],
) -> str:
    """Write ``data`` as a new conflict copy beside ``path`` named after ``side``; its
    path. It never replaces anything (a name taken meanwhile draws the next)."""
    parent, _, name = path.rpartition("/")
    when = datetime.now()
    taken: set[str] = set()
    while True:
        with contextlib.suppress(NotFound):
            taken.update(e.name for e in store.listdir(parent))
        copy_name = conflict_name(name, when, side, taken)
        copy = f"{parent}/{copy_name}" if parent else copy_name
        sha = sha256_of(data)
        note(copy, 0, sha)
        try:
            store.write(
                copy, data, author=author, expected_rev=0, mode=mode, parents=True, sha256=sha
            )
        except AlreadyExists:
            taken.add(copy_name)  # made by someone else in between: draw the next name
            continue
        return copy
