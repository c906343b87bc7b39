"""Export a memory tree to a directory or an archive, and import one back.

:func:`export_tree` writes the tree (or a subtree) as plain files any tool reads, in one
of the forms of :mod:`memfs.history.formats`; with ``history=True`` it also carries a
memfs SQLite store holding every retained revision, as ``.memfs-history.db`` at the top
(a name the path gate reserves for memfs, so it never collides with a memory).

:func:`import_tree` reads such an export, any directory or archive, or the folder of the
SDK's ``BetaLocalFilesystemMemoryTool`` (its base path, whose only entry is
``memories/``, or that ``memories/`` directory itself) into a store, as one
:meth:`~memfs.store.base.Store.batch`: everything or nothing. Before it would keep a
single file it has judged the whole source, and it refuses the whole import
(:class:`~memfs.errors.ImportRefused`, listing every problem) when any entry is one
memfs would refuse: a name the gate refuses, a link or special file (never followed), a
name that climbs out (``..``, absolute), a duplicate, or a conflict with the store (a
different file already there, without ``overwrite``). All or nothing because a partial
import looks like a complete one: a round trip that silently drops a file is worse than
one that asks for a rename first. A file already there with the same bytes is no
conflict (importing an export twice changes nothing). A cap the import would pass
raises :class:`~memfs.errors.CapExceeded` and leaves the store as it was.

With ``history=True`` the carried store is copied whole into ``store``, which must be
empty (no change in its feed yet), by :func:`memfs.history.copy.copy_store` (branch
``pg``'s), inside one batch of ``store``.

Sources are untrusted, so an import is bounded (:class:`Limits`): a file's size (the
store's ``max_file_bytes``), the whole tree's bytes and its number of entries are
checked from what the headers declare before a byte of content is read, and again while
reading (a header may lie); a compressed source that expands more than ``max_ratio``
times is refused as it is read (:mod:`memfs.history.formats`). A source over a limit is
one line and nothing is imported; a truncated or damaged archive is one line naming it.
"""

from __future__ import annotations

import contextlib
import lzma
import os
import re
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from memfs.errors import Bomb, ImportRefused, NotFound, OverLimit, TransferError
from memfs.history.author import author_for
from memfs.history.formats import (
    DEFAULT_MAX_RATIO,
    WRITTEN,
    Format,
    Member,
    format_of,
    open_writer,
    read_source,
    source_format,
    unknown_archive,
    zip_entries,
)
from memfs.paths import MAX_DEPTH, name_problem, parent_of, parse_rel, shown
from memfs.store.base import DEFAULT_DIR_MODE, DEFAULT_FILE_MODE, Store, WriteItem

HISTORY_NAME = ".memfs-history.db"
SDK_DIR = "memories"
# What the SDK's atomic write leaves when it dies between its temp file and the rename.
_SDK_TEMP = re.compile(
    r"(^|/)\.tmp-\d+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)


DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024  # for a store with no per-file cap of its own
DEFAULT_MAX_TREE_BYTES = 4 * 1024**3
DEFAULT_MAX_ENTRIES = 1_000_000
_CHUNK = 1 << 20
# New files go to the store this many at a time (or this many bytes): one savepoint and
# one statement of change records for them all, and memory bounded whatever the source.
_FLUSH_FILES = 5000
_FLUSH_BYTES = 32 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """What one import may bring in: the largest file, all files' bytes together, the
    number of entries (files and directories), and how far a compressed source may
    expand (output over input, judged past 16 MiB of output)."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_tree_bytes: int = DEFAULT_MAX_TREE_BYTES
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_ratio: int = DEFAULT_MAX_RATIO

    @classmethod
    def for_store(cls, store: Store) -> Limits:
        """The defaults, with the store's own per-file cap when it has one."""
        return cls(max_file_bytes=store.max_file_bytes or DEFAULT_MAX_FILE_BYTES)


def size_text(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n:,} bytes"


# What a damaged or truncated archive raises from the standard library's readers.
_DAMAGE = (
    OSError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    struct.error,
    tarfile.TarError,
    zipfile.BadZipFile,
    NotImplementedError,  # zip: a compression method the standard library lacks
    RuntimeError,  # zip: an encrypted member
    ValueError,
    UnicodeDecodeError,
)


def _damaged(src: Path, fmt: Format, exc: BaseException) -> TransferError:
    if fmt == "directory":
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return TransferError(f"cannot import {src}: {why}")
    what = {"tar": "tar", "tar.gz": "tar", "zip": "zip"}[fmt]
    why = str(exc) or type(exc).__name__
    return TransferError(
        f"cannot import {src}: it is truncated, damaged or not a {what} archive ({why})"
    )


class Progress(Protocol):
    """Told how much is done; the CLI draws a bar with it, the library draws nothing."""

    def start(self, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...


def _reporter(progress: Progress) -> Callable[[int, int], None]:
    """copy_store's ``(done, total)`` reports as :class:`Progress` calls."""
    state = {"done": -1}

    def report(done: int, total: int) -> None:
        if state["done"] < 0:
            progress.start(total)
            state["done"] = 0
        progress.advance(done - state["done"])
        state["done"] = done

    return report


class _Silent:
    def start(self, total: int | None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class ExportResult:
    format: Format
    files: int = 0
    dirs: int = 0
    bytes: int = 0
    symlinks_skipped: int = 0
    history: bool = False
    changed_during: int = 0  # changes others committed while the export read the tree


@dataclass
class ImportResult:
    source: str  # "directory", "tar", "zip", "SDK memory folder"
    files: int = 0
    dirs: int = 0
    bytes: int = 0
    replaced: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)  # SDK temp leftovers
    revisions: int = 0  # --history: changes copied


# --- export ------------------------------------------------------------------------------


def export_tree(
    store: Store,
    dest: Path,
    *,
    prefix: str = "",
    history: bool = False,
    progress: Progress | None = None,
) -> ExportResult:
    """Write the tree below ``prefix`` to ``dest`` (see the module docstring)."""
    progress = progress or _Silent()
    fmt = format_of(dest)
    _check_destination(dest, fmt)
    prefix = parse_rel(prefix).rel
    try:
        return _export(store, dest, fmt, prefix, history, progress)
    except OSError as exc:
        # A read-only or full destination: nothing is left there (writers clean up).
        why = exc.strerror or str(exc)
        raise TransferError(f"cannot export to {dest}: {why}") from exc


def _export(
    store: Store, dest: Path, fmt: Format, prefix: str, history: bool, progress: Progress
) -> ExportResult:
    if not history:
        return _export_from(store, dest, fmt, prefix, progress, None)
    with tempfile.TemporaryDirectory(prefix="memfs-export-") as tmp:
        db = Path(tmp) / "history.db"
        _copy_history(store, db, progress)
        from memfs.store import open_store

        # The tree comes from the copy, so it is exactly the tree the history ends in.
        with open_store(db) as copy:
            result = _export_from(copy, dest, fmt, prefix, progress, db)
        result.changed_during = 0
        return result


def _check_destination(dest: Path, fmt: Format) -> None:
    other = unknown_archive(dest)
    if other is not None:
        raise TransferError(
            f"cannot export to {dest}: memfs writes a {WRITTEN} archive or a directory, not {other}"
        )
    if not dest.parent.is_dir():
        raise TransferError(f"cannot export to {dest}: {dest.parent} is not a directory")
    if fmt == "directory":
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            raise TransferError(f"cannot export to {dest}: it exists and is not a directory")
        if dest.is_dir() and any(dest.iterdir()):
            raise TransferError(f"cannot export to {dest}: the directory is not empty")
    elif dest.exists() or dest.is_symlink():
        raise TransferError(f"cannot export to {dest}: it exists (memfs never overwrites one)")


def _export_from(
    store: Store, dest: Path, fmt: Format, prefix: str, progress: Progress, db: Path | None
) -> ExportResult:
    result = ExportResult(fmt, history=db is not None)
    seq = store.last_seq()
    entries = list(store.walk(prefix))
    progress.start(len(entries))
    cut = len(prefix) + 1 if prefix else 0
    writer = open_writer(dest, fmt)
    try:
        for entry in entries:
            name = entry.path[cut:]
            if entry.is_dir:
                writer.add_dir(name, entry.mode, entry.mtime_ns)
                result.dirs += 1
            elif entry.is_file:
                try:
                    data, now = store.read(entry.path)
                except NotFound:
                    continue  # deleted since the listing: the export is of the tree after
                writer.add_file(name, data, now.mode, now.mtime_ns)
                result.files += 1
                result.bytes += len(data)
            else:
                result.symlinks_skipped += 1
            progress.advance()
        if db is not None:
            store.close()  # the copy's last connection: SQLite folds its WAL into the file
            writer.add_path(HISTORY_NAME, db)
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    result.changed_during = store.last_seq() - seq if db is None else 0
    return result


def _copy_history(src: Store, db: Path, progress: Progress) -> None:
    from memfs.history.copy import copy_store
    from memfs.store import open_store

    with open_store(db) as dst:
        copy_store(src, dst, progress=_reporter(progress))


# --- import ------------------------------------------------------------------------------


def import_tree(
    store: Store,
    src: Path,
    *,
    prefix: str = "",
    overwrite: bool = False,
    history: bool = False,
    user: str | None = None,
    progress: Progress | None = None,
    limits: Limits | None = None,
) -> ImportResult:
    """Read ``src`` into ``store`` below ``prefix`` (see the module docstring)."""
    progress = progress or _Silent()
    limits = limits or Limits.for_store(store)
    if not src.exists():
        raise TransferError(f"cannot import {src}: there is nothing there")
    try:
        fmt = source_format(src)
    except OSError as exc:
        raise TransferError(f"cannot import {src}: {exc.strerror or exc}") from exc
    if fmt is None:
        raise TransferError(
            f"cannot import {src}: it is neither a directory nor a .tar, .tar.gz, .tgz or .zip"
        )
    if fmt == "zip":
        _check_zip_entries(src, limits)
    if history:
        return _import_history(store, src, fmt, progress, limits)
    root, kind = src, str(fmt)
    if fmt == "directory":
        root, sdk = _sdk_root(src)
        kind = "SDK memory folder" if sdk else "directory"
    prefix = parse_rel(prefix).rel
    importer = _Importer(store, prefix, overwrite, author_for("import", user), progress, limits)
    return importer.run(root, fmt, kind)


def _check_zip_entries(src: Path, limits: Limits) -> None:
    try:
        count = zip_entries(src)
    except OSError as exc:
        raise TransferError(f"cannot import {src}: {exc.strerror or exc}") from exc
    if count is not None and count > limits.max_entries:
        raise OverLimit(
            f"import refused, nothing was imported: {src} holds {count:,} entries, over"
            f" the limit of {limits.max_entries:,} an import takes"
        )


def _sdk_root(src: Path) -> tuple[Path, bool]:
    """The directory to read and whether it is the SDK tool's folder."""
    names = [n for n in os.listdir(src)]
    if names == [SDK_DIR] and (src / SDK_DIR).is_dir() and not (src / SDK_DIR).is_symlink():
        return src / SDK_DIR, True
    return src, src.name == SDK_DIR


class _Importer:
    def __init__(
        self,
        store: Store,
        prefix: str,
        overwrite: bool,
        author: str,
        progress: Progress,
        limits: Limits,
    ) -> None:
        self.store, self.prefix, self.overwrite = store, prefix, overwrite
        self.author, self.progress, self.limits = author, progress, limits
        self.entries = 0
        self.declared = 0  # bytes the source's files declare so far
        self.source: tuple[Path, Format] | None = None  # what run() reads, for messages
        self.problems: list[str] = []
        self.seen: set[str] = set()
        # Directory path -> whether this import made it (only those get the source's
        # mode and mtime; a directory already in the store keeps its own).
        self.dirs: dict[str, bool] = {}
        self.dir_attrs: list[tuple[str, int | None, int | None]] = []
        self.pending: list[WriteItem] = []  # new files not yet handed to the store
        self.pending_bytes = 0

    def run(self, root: Path, fmt: Format, kind: str) -> ImportResult:
        self.source = (root, fmt)
        result = ImportResult(kind)
        self.progress.start(None)
        with self.store.batch():
            if self.prefix:
                self._ensure_dir(self.prefix)
            for member in _members(root, fmt, self.limits.max_ratio):
                self._count(member)
                try:
                    self._one(member, result, sdk=kind == "SDK memory folder")
                except Bomb as exc:
                    raise OverLimit(f"import refused, nothing was imported: {exc}") from exc
            self._flush()
            if self.problems:
                n = len(self.problems)
                raise ImportRefused(
                    f"import refused, nothing was imported: {n} entr{'y' if n == 1 else 'ies'}"
                    " memfs would refuse",
                    problems=self.problems,
                )
            # Deepest first: a child's arrival would move its directory's mtime again.
            self.dir_attrs.sort(key=lambda item: item[0].count("/"), reverse=True)
            for path, mode, mtime_ns in self.dir_attrs:
                self.store.set_attrs(path, author=self.author, mode=mode, mtime_ns=mtime_ns)
        result.dirs = sum(self.dirs.values())
        return result

    def _count(self, member: Member) -> None:
        """Refuse the source at the first entry that takes it past a limit."""
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise OverLimit(
                "import refused, nothing was imported: the source holds more than"
                f" {self.limits.max_entries:,} entries, the limit an import takes"
            )
        if member.kind != "file" or member.size is None:
            return
        self._check_file_size(member.name, member.size)
        self.declared += member.size
        if self.declared > self.limits.max_tree_bytes:
            raise OverLimit(
                "import refused, nothing was imported: the source's files hold more than"
                f" {size_text(self.limits.max_tree_bytes)}, the limit an import takes"
            )

    def _check_file_size(self, name: str, size: int) -> None:
        if size > self.limits.max_file_bytes:
            raise OverLimit(
                f"import refused, nothing was imported: {shown(name)} holds"
                f" {size_text(size)}, over the limit of"
                f" {size_text(self.limits.max_file_bytes)} a file"
            )

    def _content(self, member: Member) -> bytes:
        """The member's bytes, read in chunks up to the per-file limit (a header that
        declared less than the data holds is caught here)."""
        if member.open is None:
            return b""
        limit = self.limits.max_file_bytes
        parts: list[bytes] = []
        got = 0
        try:
            with member.open() as f:
                while chunk := f.read(min(_CHUNK, limit + 1 - got)):
                    parts.append(chunk)
                    got += len(chunk)
                    if got > limit:
                        self._check_file_size(member.name, got)
        except TransferError:
            raise  # a limit, or a file swapped during the import: said as it is
        except _DAMAGE as exc:
            # Only the source's reading is judged here: a store's own failure (a full
            # disk) is its own typed error, not a damaged archive.
            assert self.source is not None
            raise _damaged(*self.source, exc) from exc
        return b"".join(parts)

    def _refuse(self, name: str, why: str) -> None:
        self.problems.append(f"{shown(name)}: {why}")

    def _one(self, member: Member, result: ImportResult, *, sdk: bool) -> None:
        rel = self._judge(member)
        if rel is None:
            return
        if sdk and member.kind == "file" and _SDK_TEMP.search(rel):
            result.skipped.append(rel)
            return
        target = f"{self.prefix}/{rel}" if self.prefix else rel
        if member.kind == "dir":
            if self._ensure_dir(target, member.mode) and self.dirs[target]:
                # Made by this import: the source's mode and mtime go on at the end.
                self.dir_attrs.append((target, member.mode, member.mtime_ns))
            return
        parent = parent_of(target)
        if parent and not self._ensure_dir(parent):
            return
        existing = None
        if not self.dirs.get(parent, False):
            # Under a directory this import made, only this import put names, and each
            # name comes once (_judge): nothing to ask the store.
            with contextlib.suppress(NotFound):
                existing = self.store.stat(target)
        if existing is not None and not existing.is_file:
            self._refuse(rel, f"the store has a {existing.kind} at {target!r}")
            return
        if self.problems:
            return  # refused already: only the names are judged from here on
        data = self._content(member)
        if existing is not None:
            current, _ = self.store.read(target)
            if current == data:
                result.unchanged += 1
                return
            if not self.overwrite:
                self._refuse(rel, f"{target!r} exists with other content (--overwrite replaces)")
                return
            result.replaced += 1
        mode = member.mode if member.mode is not None else DEFAULT_FILE_MODE
        if existing is None:
            self._queue(WriteItem(target, data, mode, member.mtime_ns))
        else:
            self.store.write(target, data, author=self.author, mode=mode)
            self.store.set_attrs(target, author=self.author, mode=mode, mtime_ns=member.mtime_ns)
        result.files += 1
        result.bytes += len(data)
        self.progress.advance()

    def _queue(self, item: WriteItem) -> None:
        self.pending.append(item)
        self.pending_bytes += len(item.data)
        if len(self.pending) >= _FLUSH_FILES or self.pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        """Hand the queued new files to the store (dropped once the import is refused:
        nothing of it is kept)."""
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        if pending and not self.problems:
            self.store.write_many(pending, author=self.author)

    def _judge(self, member: Member) -> str | None:
        """The member's path in the tree, or None after recording why it is refused."""
        name = member.name
        if name.startswith("/"):
            self._refuse(name, "an absolute name (an archive must name paths inside it)")
            return None
        parts = [p for p in name.rstrip("/").split("/")]
        while parts and parts[0] == ".":
            parts.pop(0)
        if not parts:
            return None  # the archive's own top directory
        if ".." in parts:
            self._refuse(name, "a '..' segment would climb out of the tree")
            return None
        rel = "/".join(parts)
        if rel == HISTORY_NAME:
            return None  # the history an export carries: --history imports it
        if member.kind == "link":
            self._refuse(rel, "a link (import never follows links)")
            return None
        if member.kind == "special":
            self._refuse(rel, "not a regular file or directory")
            return None
        if rel in self.seen:
            self._refuse(rel, "the archive holds it twice")
            return None
        self.seen.add(rel)
        for part in parts:
            problem = name_problem(part)
            if problem is not None:
                self._refuse(rel, f"the path gate refuses it: {problem}")
                return None
        full = f"{self.prefix}/{rel}" if self.prefix else rel
        if len(full.split("/")) > MAX_DEPTH or _gate(full) is not None:
            self._refuse(rel, f"the path gate refuses it: {_gate(full) or 'too deep'}")
            return None
        return rel

    def _ensure_dir(self, path: str, mode: int | None = None) -> bool:
        """Make directory ``path`` (and its parents) unless there; False if a non-directory
        is in the way (recorded as a problem)."""
        known = self.dirs.get(path)
        if known is not None:
            return True
        # A queued file may stand where this directory goes: the store must see it.
        self._flush()
        try:
            entry = self.store.stat(path)
        except NotFound:
            entry = None
        if entry is not None and not entry.is_dir:
            self._refuse(path, f"the store has a {entry.kind} where a directory goes")
            return False
        if entry is None:
            parent = parent_of(path)
            if parent and not self._ensure_dir(parent):
                return False
            self.store.mkdir(path, author=self.author, mode=mode or DEFAULT_DIR_MODE)
        self.dirs[path] = entry is None
        return True


def _gate(rel: str) -> str | None:
    try:
        parse_rel(rel)
    except Exception as exc:  # PathError: the message says why
        return str(exc)
    return None


def _members(root: Path, fmt: Format, max_ratio: int) -> Iterator[Member]:
    try:
        yield from read_source(root, fmt, max_ratio)
    except Bomb as exc:
        raise OverLimit(f"import refused, nothing was imported: {exc}") from exc
    except TransferError:
        raise
    except _DAMAGE as exc:
        raise _damaged(root, fmt, exc) from exc


# --- history -----------------------------------------------------------------------------


def _import_history(
    store: Store, src: Path, fmt: Format, progress: Progress, limits: Limits
) -> ImportResult:
    from memfs.history.copy import copy_store
    from memfs.store import open_store

    if store.last_seq() != 0:
        raise TransferError(
            f"--history imports into an empty store only; {store.url} already has"
            f" {store.last_seq()} change{'s' if store.last_seq() != 1 else ''} (use a new store,"
            " or import without --history)"
        )
    with tempfile.TemporaryDirectory(prefix="memfs-import-") as tmp:
        db = _history_file(src, fmt, Path(tmp), limits)
        with open_store(db) as carried:
            # Retention is judged by the reader's clock: read the carried store as of its
            # last change, so what it held then is not trimmed for the time since.
            last = carried.changes(0, 1, newest_first=True)
            if last:
                stamp = last[0].time_ns
                carried.clock = lambda: stamp
            # copy_store commits in batches; the outer one makes the import all or nothing.
            with store.batch():
                copy_store(carried, store, progress=_reporter(progress))
            result = ImportResult(f"{fmt} with history", revisions=store.last_seq())
            usage = store.usage()
            result.files, result.dirs, result.bytes = usage.files, usage.dirs, usage.bytes
    return result


def _history_file(src: Path, fmt: Format, tmp: Path, limits: Limits) -> Path:
    """A copy of the history store ``src`` carries, in ``tmp`` (never opened in place:
    opening a store may write to it), streamed to disk within the tree's byte limit."""
    out = tmp / "history.db"
    if fmt == "directory":
        inside = src / HISTORY_NAME
        if inside.is_file() and not inside.is_symlink():

            def open_inside() -> IO[bytes]:
                return inside.open("rb")

            _copy_bounded(open_inside, out, limits)
            return out
    else:
        try:
            for member in _members(src, fmt, limits.max_ratio):
                if member.name.removeprefix("./") == HISTORY_NAME and member.open is not None:
                    _copy_bounded(member.open, out, limits)
                    return out
        except _DAMAGE as exc:
            raise _damaged(src, fmt, exc) from exc
    raise TransferError(f"cannot import {src} with --history: it carries no {HISTORY_NAME}")


def _copy_bounded(open_source: Callable[[], IO[bytes]], out: Path, limits: Limits) -> None:
    copied = 0
    with open_source() as f, out.open("wb") as dst:
        while chunk := f.read(_CHUNK):
            copied += len(chunk)
            if copied > limits.max_tree_bytes:
                raise OverLimit(
                    f"import refused, nothing was imported: its {HISTORY_NAME} holds more"
                    f" than {size_text(limits.max_tree_bytes)}, the limit an import takes"
                )
            dst.write(chunk)
