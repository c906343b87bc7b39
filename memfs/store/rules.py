"""Every rule and constant the store keeps, in one place: what it refuses and how it
words it (the root as a target, caps, moves, symlink targets, stale revisions), how
long history is kept, how a symlink target and a revision's bytes are checked, the
options every backend takes, and the one time a batch records (invariants 3, 6, 7 and
``batch`` of :mod:`memfs.store.base`).

The algorithm (:mod:`memfs.store.engine`) decides with these from what it read inside
its transaction, so no backend can word a refusal or judge retention differently.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from memfs.errors import (
    AlreadyExists,
    CapExceeded,
    Conflict,
    Damaged,
    DirectoryNotEmpty,
    InvalidMove,
    IsADirectory,
    NotADirectory,
    NotFound,
    PathTooLong,
    StoreError,
    StoreUnavailable,
    TooLarge,
)
from memfs.paths import MAX_DEPTH, MAX_PATH_BYTES, fits, parse_rel

# --- what history keeps (invariant 6) ------------------------------------------------
# A renamed-away path keeps all its revisions this long: atomic saves move a file aside
# and bring a new one to its name within milliseconds (JetBrains, emacs and vim backups).
MOVED_GRACE_NS = 10 * 60 * 10**9
# Rows a mutation's sweep removes at most, so no write pays for a large backlog at once.
SWEEP_ROWS = 100
# A model read within this long of the recorded last use writes nothing: expiry works
# in days, and a view must not pay for a write transaction each time.
USE_GRAIN_NS = 3600 * 10**9
# A redacted revision's stored hash carries this prefix: it no longer names content.
REDACTED = "redacted:"

# --- the options every backend takes ---------------------------------------------------
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_HISTORY = 50
DEFAULT_DELETED_HISTORY_DAYS = 30
LIMIT_OPTIONS = (
    "max_file_bytes",
    "history",
    "deleted_history_days",
    "max_tree_bytes",
    "max_files",
    "readonly",
)


@dataclass(frozen=True, slots=True)
class Limits:
    """What every backend's options say about size, history and access."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    history: int = DEFAULT_HISTORY
    deleted_history_days: int = DEFAULT_DELETED_HISTORY_DAYS
    max_tree_bytes: int | None = None
    max_files: int | None = None
    readonly: bool = False


def parse_limits(options: Mapping[str, object]) -> Limits:
    """The :class:`Limits` in ``options`` (URL text or typed keywords); other names are
    left to the backend."""

    def number(name: str, minimum: int, default: int) -> int:
        return whole_option(name, options[name], minimum) if name in options else default

    def cap(name: str) -> int | None:
        value = options.get(name)
        return None if value in (None, "", "none") else whole_option(name, value, 1)

    return Limits(
        max_file_bytes=number("max_file_bytes", 1, DEFAULT_MAX_FILE_BYTES),
        history=number("history", 0, DEFAULT_HISTORY),
        deleted_history_days=number("deleted_history_days", 0, DEFAULT_DELETED_HISTORY_DAYS),
        max_tree_bytes=cap("max_tree_bytes"),
        max_files=cap("max_files"),
        readonly=flag_option("readonly", options["readonly"]) if "readonly" in options else False,
    )


def flag_option(name: str, value: object) -> bool:
    """A yes/no option: a bool, or ``true``/``false``/``1``/``0`` from a URL."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "0", "false", "no"):
        return value.strip().lower() in ("1", "true", "yes")
    raise StoreUnavailable(f"option {name}={value!r}: must be true or false")


# --- paths and kinds --------------------------------------------------------------------
def parent_of(path: str) -> str:
    return path.rpartition("/")[0]


def need_file(path: str, kind: str) -> None:
    """Refuse a directory or symlink where file content is needed."""
    if kind == "dir":
        raise IsADirectory(f"'{path}' is a directory", path=path)
    if kind == "symlink":
        raise NotFound(f"'{path}' is a symlink; memfs never follows symlinks", path=path)


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


def conflict(path: str, expected: int, current: int | None) -> Conflict:
    """The refusal of a write or delete decided on revision ``expected``."""
    if current is None:
        return Conflict(
            f"'{path}' changed: expected revision {expected}, but it no longer exists",
            path=path,
        )
    return Conflict(
        f"'{path}' changed: expected revision {expected}, current is {current}", path=path
    )


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


# --- symlink targets and content -------------------------------------------------------
MAX_TARGET_BYTES = 4096
# A target that is not valid UTF-8 (a surrogateescape str from os.fsdecode) is stored as
# this mark and its bytes in base64, since neither database's text holds such bytes; a
# target that itself starts with the mark is stored the same way, so none is mistaken.
_TARGET_MARK = "\uffff"


def target_size(path: str, target: str) -> int:
    """The size in bytes of a valid symlink target (its encoding with surrogateescape,
    as the file system gave it); StoreError or TooLarge for one memfs refuses."""
    if not isinstance(target, str) or not target or "\x00" in target:
        raise StoreError("a symlink target must be non-empty text without NUL", path=path)
    try:
        size = len(target.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise StoreError(
            "a symlink target must be text a file system can hold", path=path
        ) from None
    if size > MAX_TARGET_BYTES:
        raise TooLarge(
            f"the symlink target for '{path}' is longer than {MAX_TARGET_BYTES} bytes", path=path
        )
    return size


def pack_target(target: str) -> str:
    """``target`` as text both databases store exactly (see :data:`_TARGET_MARK`)."""
    try:
        target.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        if not target.startswith(_TARGET_MARK):
            return target
    raw = target.encode("utf-8", "surrogateescape")
    return _TARGET_MARK + base64.b64encode(raw).decode("ascii")


def unpack_target(stored: str | None) -> str | None:
    if stored is None or not stored.startswith(_TARGET_MARK):
        return stored
    try:
        raw = base64.b64decode(stored[len(_TARGET_MARK) :], validate=True)
    except ValueError:
        return stored  # written as is by code that did not pack it
    return raw.decode("utf-8", "surrogateescape")


def sha256_of(data: bytes | bytearray) -> str:
    return hashlib.sha256(data).hexdigest()


def checked(data: bytes, sha256: str, path: str, rev: int) -> bytes:
    """``data`` if it still has the SHA-256 recorded for it, else Damaged naming the
    revision: a store never hands out bytes other than those written."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise damaged(path, rev, sha256)
    return data


def damaged(path: str, rev: int, sha256: str) -> Damaged:
    return Damaged(
        f"revision {rev} of '{path}' is damaged: its stored bytes no longer match their"
        f" SHA-256 {sha256[:12]} (memfs check lists every damaged revision)",
        path=path,
        rev=rev,
        sha256=sha256,
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
