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
  written, or a file renamed over it): the last writer wins; the content it replaced
  stays a revision. Except over a history command (``memfs restore``, ``undo``,
  ``import``): a change that predates the command must not revert it, so it is kept as a
  conflict copy instead;
- **edit** (:attr:`Shape.EDIT`: bytes of the base changed in place): :func:`merge3` of
  the base, ours and theirs when the two changed different bytes; when they changed the
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

# Each failed compare-and-set means another writer committed: progress for them. Past
# this many in a row the change is kept as a conflict copy rather than retried forever.
MAX_TRIES = 100

Outcome = Literal["written", "rebased", "replaced", "conflict", "recreated"]


class Shape(enum.Enum):
    """How a change relates to its base (see the module docstring)."""

    APPEND = "append"
    WHOLE = "whole"
    EDIT = "edit"


@dataclass(frozen=True, slots=True)
class Landing:
    """What became of a change. ``entry`` is what is at the path now: ours (``written``,
    ``recreated``, ``replaced``), the merge (``rebased``) or theirs (``conflict``, ours
    then being at ``copy``). ``over`` is the newer revision the change met, if any."""

    entry: Entry
    outcome: Outcome
    copy: str | None = None
    over: int | None = None


def merge3(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """Both sides' changes to ``base`` in one result, or None when they overlap.

    Each side's change is the one region between its common prefix and suffix with the
    base (the prefix found first, so an append is an insertion at the end). Changes on
    different lines of the base are applied together; two changes touching one line are
    a conflict (a byte-exact merge inside a line would splice words, as diff3 refuses
    to). Two insertions at one line boundary keep theirs first (theirs was committed
    first), so two appends keep both tails in commit order.
    """
    if ours in (base, theirs):
        return theirs
    if theirs == base:
        return ours
    o_start, o_end, o_new = _region(base, ours)
    t_start, t_end, t_new = _region(base, theirs)
    mine, yours = ours[o_start:o_new], theirs[t_start:t_new]
    if _overlap(base, (o_start, o_end, mine), (t_start, t_end, yours)):
        return None
    if t_end <= o_start:  # theirs first (also both inserting at the same place)
        return base[:t_start] + yours + base[t_end:o_start] + mine + base[o_end:]
    return base[:o_start] + mine + base[o_end:t_start] + yours + base[t_end:]


def _lines(base: bytes, start: int, end: int, new: bytes) -> tuple[int, int]:
    """The whole lines of ``base`` a change of ``base[start:end]`` into ``new`` touches.
    Whole new lines inserted at a line boundary, or anything added at the end (an
    append), touch none: the change stays a point. Text put in front of a line touches
    that line (two such insertions would splice into one line)."""
    at_boundary = start == 0 or base[start - 1 : start] == b"\n"
    if start == end and (start == len(base) or (at_boundary and new.endswith(b"\n"))):
        return start, start
    first = base.rfind(b"\n", 0, start) + 1
    last = base.find(b"\n", max(end - 1, start))
    return first, len(base) if last < 0 else last + 1


def _overlap(base: bytes, a: tuple[int, int, bytes], b: tuple[int, int, bytes]) -> bool:
    (a0, a1), (b0, b1) = _lines(base, *a), _lines(base, *b)
    if a0 == a1 and b0 == b1:
        return False  # two insertions at line boundaries: both go in
    if a0 == a1:
        return b0 < a0 < b1
    if b0 == b1:
        return a0 < b0 < a1
    return max(a0, b0) < min(a1, b1)


def _region(base: bytes, other: bytes) -> tuple[int, int, int]:
    """``(start, base_end, other_end)``: ``other`` is ``base`` with ``base[start:base_end]``
    replaced by ``other[start:other_end]``, the smallest such region, prefix first."""
    start = _common_prefix(base, other)
    room = min(len(base), len(other)) - start
    tail = _common_prefix(base[::-1][:room], other[::-1][:room]) if room else 0
    return start, len(base) - tail, len(other) - tail


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, comparing large blocks first (memcmp)."""
    n = min(len(a), len(b))
    lo = 0
    step = 1 << 16
    while step:
        while lo + step <= n and a[lo : lo + step] == b[lo : lo + step]:
            lo += step
        step //= 2
    return lo


_SIDE = re.compile(r"[^A-Za-z0-9_-]+")


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
    data: bytes,
    *,
    base_rev: int,
    shape: Shape,
    base_size: int = 0,
    base: bytes | None = None,
    author: str,
    mode: int | None = None,
    side: str = "",
    tries: int = MAX_TRIES,
    before_write: Callable[[str, int, bytes], None] | None = None,
) -> Landing:
    """Commit ``data`` at ``path`` as the change built on revision ``base_rev`` (0: the
    file did not exist), by the module's rules.

    ``base_size``: the base's size (an append's own bytes are ``data[base_size:]``).
    ``base``: the base's content for an edit's merge; when None it is read from the
    store's history (a base no longer retained makes a conflicting edit a copy). ``mode``:
    the file's mode if it is created. ``side`` names the writer in a conflict copy's name.
    ``before_write(target, expected_rev, content)`` is called before each write is
    tried (a journal notes it, so a replay can tell a landed change from one that did
    not). The store's refusals (TooLarge, CapExceeded, NotADirectory, StoreUnavailable,
    ...) propagate and nothing is written; Conflict never does.
    """
    note = before_write or (lambda target, expected, content: None)
    expected = base_rev
    outcome: Outcome = "written"
    over: int | None = None
    content = data
    for _ in range(tries):
        note(path, expected, content)
        try:
            entry = store.write(
                path, content, author=author, expected_rev=expected, mode=mode, parents=True
            )
            return Landing(entry, outcome, None, over)
        except (Conflict, AlreadyExists, NotFound) as e:
            if isinstance(e, NotFound) and e.path != path:
                raise  # a parent is missing or is not a directory: not a moved base
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
            content, outcome = data, "replaced"
        else:
            merged = _merge_edit(store, path, base_rev, base, data, theirs)
            if merged is None:
                return _keep_copy(store, path, data, now, author, mode, side, note)
            content, outcome = merged, "rebased"
        expected = now.rev
    # Never a silent drop: a file that would not hold still keeps ours beside it.
    theirs_entry = store.stat(path)
    return _keep_copy(store, path, data, theirs_entry, author, mode, side, note)


def _merge_edit(
    store: Store, path: str, base_rev: int, base: bytes | None, ours: bytes, theirs: bytes
) -> bytes | None:
    if base is None:
        if base_rev == 0:
            return None
        try:
            base = store.read_revision(path, base_rev)
        except NotFound:  # no longer retained (or redacted): nothing to merge against
            return None
    return merge3(base, ours, theirs)


def _protected_since(store: Store, path: str, base_rev: int) -> bool:
    """Whether a history command wrote ``path`` after revision ``base_rev``."""
    try:
        revisions = store.history(path)
    except NotFound:
        return False
    return any(r.rev > base_rev and by_history_command(r.author) for r in revisions)


def _keep_copy(
    store: Store,
    path: str,
    data: bytes,
    theirs: Entry,
    author: str,
    mode: int | None,
    side: str,
    note: Callable[[str, int, bytes], None],
) -> Landing:
    """Write ``data`` to a new conflict copy beside ``path``; theirs stays current."""
    parent, _, name = path.rpartition("/")
    when = datetime.now()
    taken: set[str] = set()
    while True:
        with contextlib.suppress(NotFound):
            taken.update(e.name for e in store.listdir(parent))
        copy_name = conflict_name(name, when, side or author.split(" ", 1)[0], taken)
        copy = f"{parent}/{copy_name}" if parent else copy_name
        note(copy, 0, data)
        try:
            store.write(copy, data, author=author, expected_rev=0, mode=mode, parents=True)
        except AlreadyExists:
            taken.add(copy_name)  # made by someone else in between: draw the next name
            continue
        return Landing(theirs, "conflict", copy, theirs.rev)
