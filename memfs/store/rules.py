"""What every backend refuses, and how, in one place: the root as a target, the per-file
cap, the tree caps, malformed numeric options, and the one time a batch records
(invariants 3, 7 and ``batch``).

A backend keeps its own SQL; these decide from numbers it read inside its transaction,
so both backends word a refusal alike and cannot drift apart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memfs.errors import (
    AlreadyExists,
    CapExceeded,
    DirectoryNotEmpty,
    InvalidMove,
    IsADirectory,
    NotADirectory,
    NotFound,
    PathTooLong,
    StoreUnavailable,
    TooLarge,
)
from memfs.paths import MAX_DEPTH, MAX_PATH_BYTES, fits, parse_rel


def target(path: str, *, what: str = "path") -> str:
    """The canonical store path of ``path``, refusing the root as a mutation's target."""
    rel = parse_rel(path).rel
    if rel == "":
        raise InvalidMove(f"the root of the store cannot be the {what} of this operation")
    return rel


def whole_option(name: str, value: object, minimum: int) -> int:
    """A store option that is a whole number (typed, or text from a URL query)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value)
    else:
        raise StoreUnavailable(f"option {name}={value!r}: must be a whole number")
    if number < minimum:
        raise StoreUnavailable(f"option {name}={value!r}: must be at least {minimum}")
    return number


def check_move(src: str, dst: str) -> None:
    """A directory is never moved into itself (invariant 3)."""
    if dst.startswith(src + "/"):
        raise InvalidMove(f"cannot move '{src}' into itself ('{dst}')", path=src)


def check_reach(src: str, dst: str, extent: tuple[int, int]) -> None:
    """Refuse moving a directory whose descendants, ``extent`` (segments, bytes) below
    it, would pass the path gate's depth or length limit at ``dst``: the whole rename,
    not one file later."""
    depth, nbytes = extent
    dst_depth = dst.count("/") + 1
    dst_bytes = len(dst.encode("utf-8", "surrogateescape"))
    if not fits(dst_depth + depth, dst_bytes + nbytes):
        raise PathTooLong(
            f"moving '{src}' to '{dst}' would put an entry more than {MAX_DEPTH} levels"
            f" deep or past {MAX_PATH_BYTES} bytes",
            path=dst,
        )


def check_replace(src_kind: str, dst: str, dst_kind: str, *, overwrite: bool, entries: int) -> None:
    """Whether a rename may replace ``dst`` (``entries``: it and what is below it):
    only with ``overwrite``, file over file or directory over an empty directory."""
    if not overwrite:
        raise AlreadyExists(f"the destination '{dst}' already exists", path=dst)
    if src_kind == "dir" and dst_kind != "dir":
        raise NotADirectory(f"cannot replace the non-directory '{dst}' with a directory")
    if src_kind != "dir" and dst_kind == "dir":
        raise IsADirectory(f"cannot replace the directory '{dst}' with a file", path=dst)
    if entries > 1:
        raise DirectoryNotEmpty(f"the directory '{dst}' is not empty", path=dst)


def check_size(path: str, size: int, limit: int) -> None:
    """TooLarge for content of ``size`` bytes past the per-file cap ``limit``."""
    if size > limit:
        raise TooLarge(
            f"'{path}' would be {size} bytes; this store's limit is {limit} bytes per file",
            path=path,
        )


def check_caps(
    path: str,
    *,
    grow: int,
    new_files: int,
    total_bytes: int,
    files: int,
    max_tree_bytes: int | None,
    max_files: int | None,
) -> None:
    """CapExceeded for a mutation adding ``grow`` bytes and ``new_files`` files to a tree
    now holding ``total_bytes`` in ``files`` files; a mutation that does not grow a
    measure passes its cap even over it (a cap lowered below what is there)."""
    if max_tree_bytes is not None and grow > 0 and total_bytes + grow > max_tree_bytes:
        raise CapExceeded(
            f"writing '{path}' would make the memory {total_bytes + grow} bytes; this store's"
            f" limit is {max_tree_bytes} bytes in all",
            path=path,
            cap="max_tree_bytes",
            limit=max_tree_bytes,
            would=total_bytes + grow,
        )
    if max_files is not None and new_files > 0 and files + new_files > max_files:
        raise CapExceeded(
            f"creating '{path}' would make {files + new_files} files; this store's limit is"
            f" {max_files} files",
            path=path,
            cap="max_files",
            limit=max_files,
            would=files + new_files,
        )


DAY_NS = 86_400 * 10**9


def history_expired(deleted_ns: int, trim_ns: int | None, now: int, days: int) -> bool:
    """Whether a gone path's history has expired (invariant 6): deleted more than
    ``days`` ago, and past a moved-away path's grace (``trim_ns``), which outlasts even
    ``days=0``: the save that moved it aside has not brought its name back yet."""
    return deleted_ns < now - days * DAY_NS and (trim_ns or 0) <= now


def gone_visible(gone: tuple[int, int | None] | None, now: int, days: int) -> int:
    """How many of a gone path's newest revisions a reader sees: -1 (all, in a moved
    path's grace) or 1 (its last); NotFound when nothing is retained."""
    if gone is None or history_expired(gone[0], gone[1], now, days):
        raise NotFound("no retained history")
    trimmed = gone[1] is None or gone[1] <= now
    return 1 if trimmed else -1


class BatchTime:
    """The time a batch's changes record: the clock's when the outermost batch began,
    until the clock is replaced inside the batch (a copy keeping original times)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def during(self, clock: Callable[[], int]) -> Iterator[None]:
        """Around one (possibly nested) batch of this thread."""
        depth: int = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.frozen = (clock, clock())
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                self._local.frozen = None

    def now(self, clock: Callable[[], int]) -> int:
        frozen = getattr(self._local, "frozen", None)
        if frozen is not None and frozen[0] is clock:
            return int(frozen[1])
        return clock()
