"""The three-way decision table of the mirror, and the merge of two edits. Pure: no I/O,
no clock, no store.

For every path the mirror knows three versions: the *base* (what both sides held at the
last sync, from the sync state), the *local* one (the file in DIR now) and the *remote*
one (the store's entry now). A side "changed" when its content key differs from the
base's; the table below is the whole policy:

===========  =============  ===========================================================
local        remote         outcome
===========  =============  ===========================================================
unchanged    unchanged      nothing
same as the other side      record (both sides already agree; only the base moves)
changed      unchanged      push: write/delete in the store, ``expected_rev`` = base rev
unchanged    changed        pull: write/delete in DIR
deleted      edited         pull: keep the edit, re-create it in DIR
edited       deleted        push: keep the edit, re-create it in the store
edited       edited         merge: both edits in one file (:func:`merge_files`), in DIR
                            and in the store; where they cannot be merged, a conflict
new          new            conflict: the store's version keeps the name, the local one
                            is kept beside it under a conflict name on both sides
===========  =============  ===========================================================

"Deleted" with no base means "never existed", so a first run (empty base) merges with
nothing deleted: files on one side are copied to the other, identical files are just
recorded and different ones become conflicts (there is no base to merge against),
never a blind overwrite. A file on one side where the other has a directory is a
conflict too.

Edits merge by the rules every writer of a store follows (:mod:`memfs.store.rebase`):
appends on both sides keep both tails, the store's first (it was committed first);
edits of different lines are applied together; two edits touching one line, or a
missing base, are a real conflict.

:func:`is_wipe` is the guard against mass deletion, also pure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from memfs.store.rebase import merge3

SideKind = Literal["file", "dir"]

# A batch of local deletions that removes at least this many files and more than half of
# the tree is a wipe, not an intention: see is_wipe.
WIPE_MIN_FILES = 3


@dataclass(frozen=True, slots=True)
class Version:
    """One side's content of a path: a file with its SHA-256, or a directory."""

    kind: SideKind
    sha256: str | None = None  # files only

    @staticmethod
    def file(sha256: str) -> Version:
        return Version("file", sha256)

    @staticmethod
    def dir() -> Version:
        return Version("dir")


class Action(enum.Enum):
    NOTHING = "nothing"
    RECORD = "record"  # both sides agree; advance the base only
    FORGET = "forget"  # gone on both sides; drop the base record
    PUSH = "push"  # local version to the store (create, overwrite or re-create)
    PULL = "pull"  # store version to DIR (create, overwrite or re-create)
    DELETE_REMOTE = "delete-remote"  # person deleted it; delete in the store
    DELETE_LOCAL = "delete-local"  # store deleted it; delete in DIR
    MERGE = "merge"  # both edited a file they shared; merge, or keep both if they clash
    CONFLICT = "conflict"  # both changed differently with nothing to merge; keep both


def _key(version: Version | None) -> tuple[str, str | None] | None:
    return None if version is None else (version.kind, version.sha256)


def decide(base: Version | None, local: Version | None, remote: Version | None) -> Action:
    """What to do with one path, given its three versions. See the module table."""
    b, lo, re_ = _key(base), _key(local), _key(remote)
    local_changed = lo != b
    remote_changed = re_ != b
    if not local_changed and not remote_changed:
        return Action.NOTHING
    if lo == re_:
        return Action.FORGET if lo is None else Action.RECORD
    if not remote_changed:
        return Action.DELETE_REMOTE if lo is None else Action.PUSH
    if not local_changed:
        return Action.DELETE_LOCAL if re_ is None else Action.PULL
    # Both changed, differently. An edit always beats a delete: deleting is the one
    # outcome that could lose the only copy of someone's work.
    if lo is None:
        return Action.PULL
    if re_ is None:
        return Action.PUSH
    if b is not None and b[0] == lo[0] == re_[0] == "file":
        return Action.MERGE
    return Action.CONFLICT


def merge_files(base: bytes | None, local: bytes, remote: bytes) -> bytes | None:
    """The person's (``local``) and the store's (``remote``) edits of ``base`` in one
    content, the store's first where both added at one place
    (:func:`memfs.store.rebase.merge3`, the mount's rule too); None for a real conflict:
    both changed the same lines, or there is no base to merge against."""
    if base is None:
        return None
    return merge3(base, local, remote)


def is_wipe(deleted_files: int, tree_files: int) -> bool:
    """True if deleting ``deleted_files`` of the ``tree_files`` synced files at once looks
    like a wiped or swapped folder rather than a person's intention.

    Rule: at least :data:`WIPE_MIN_FILES` files and more than half of the tree vanish
    together. So ``rm -rf DIR/*`` or an emptied checkout is restored from the store, while
    ``rm -r notes/old`` of a subdirectory holding less than half the files (or deleting
    one or two files of a tiny tree) is a real delete.
    """
    return deleted_files >= WIPE_MIN_FILES and deleted_files * 2 > tree_files
