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
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memfs.errors import ImportRefused, NotFound, TransferError
from memfs.history.author import author_for
from memfs.history.formats import (
    Format,
    Member,
    format_of,
    open_writer,
    read_source,
    source_format,
)
from memfs.paths import MAX_DEPTH, name_problem, parse_rel, shown
from memfs.store.base import DEFAULT_DIR_MODE, DEFAULT_FILE_MODE, Store

HISTORY_NAME = ".memfs-history.db"
SDK_DIR = "memories"
# What the SDK's atomic write leaves when it dies between its temp file and the rename.
_SDK_TEMP = re.compile(
    r"(^|/)\.tmp-\d+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
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
) -> ImportResult:
    """Read ``src`` into ``store`` below ``prefix`` (see the module docstring)."""
    progress = progress or _Silent()
    if not src.exists():
        raise TransferError(f"cannot import {src}: there is nothing there")
    fmt = source_format(src)
    if fmt is None:
        raise TransferError(
            f"cannot import {src}: it is neither a directory nor a .tar, .tar.gz, .tgz or .zip"
        )
    if history:
        return _import_history(store, src, fmt, progress)
    root, kind = src, fmt
    if fmt == "directory":
        root, sdk = _sdk_root(src)
        kind = "SDK memory folder" if sdk else "directory"
    prefix = parse_rel(prefix).rel
    return _Importer(store, prefix, overwrite, author_for("import", user), progress).run(
        root, fmt, kind
    )


def _sdk_root(src: Path) -> tuple[Path, bool]:
    """The directory to read and whether it is the SDK tool's folder."""
    names = [n for n in os.listdir(src)]
    if names == [SDK_DIR] and (src / SDK_DIR).is_dir() and not (src / SDK_DIR).is_symlink():
        return src / SDK_DIR, True
    return src, src.name == SDK_DIR


class _Importer:
    def __init__(
        self, store: Store, prefix: str, overwrite: bool, author: str, progress: Progress
    ) -> None:
        self.store, self.prefix, self.overwrite = store, prefix, overwrite
        self.author, self.progress = author, progress
        self.problems: list[str] = []
        self.seen: set[str] = set()
        # Directory path -> whether this import made it (only those get the source's
        # mode and mtime; a directory already in the store keeps its own).
        self.dirs: dict[str, bool] = {}
        self.dir_attrs: list[tuple[str, int | None, int | None]] = []

    def run(self, root: Path, fmt: Format, kind: str) -> ImportResult:
        result = ImportResult(kind)
        self.progress.start(None)
        with self.store.batch():
            if self.prefix:
                self._ensure_dir(self.prefix)
            for member in _members(root, fmt):
                self._one(member, result, sdk=kind == "SDK memory folder")
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
        parent = target.rpartition("/")[0]
        if parent and not self._ensure_dir(parent):
            return
        try:
            existing = self.store.stat(target)
        except NotFound:
            existing = None
        if existing is not None and not existing.is_file:
            self._refuse(rel, f"the store has a {existing.kind} at {target!r}")
            return
        if self.problems:
            return  # refused already: only the names are judged from here on
        data = member.read() if member.read is not None else b""
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
        self.store.write(target, data, author=self.author, mode=mode)
        if member.mtime_ns is not None or existing is not None:
            self.store.set_attrs(target, author=self.author, mode=mode, mtime_ns=member.mtime_ns)
        result.files += 1
        result.bytes += len(data)
        self.progress.advance()

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
        try:
            entry = self.store.stat(path)
        except NotFound:
            entry = None
        if entry is not None and not entry.is_dir:
            self._refuse(path, f"the store has a {entry.kind} where a directory goes")
            return False
        if entry is None:
            parent = path.rpartition("/")[0]
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


def _members(root: Path, fmt: Format) -> Iterator[Member]:
    try:
        yield from read_source(root, fmt)
    except (OSError, EOFError) as exc:
        raise TransferError(f"cannot read {root}: {exc}") from exc
    except Exception as exc:
        # tarfile.TarError, zipfile.BadZipFile: a damaged archive
        if type(exc).__module__ in ("tarfile", "zipfile"):
            raise TransferError(f"cannot read {root}: {exc}") from exc
        raise


# --- history -----------------------------------------------------------------------------


def _import_history(store: Store, src: Path, fmt: Format, progress: Progress) -> ImportResult:
    from memfs.history.copy import copy_store
    from memfs.store import open_store

    if store.last_seq() != 0:
        raise TransferError(
            f"--history imports into an empty store only; {store.url} already has"
            f" {store.last_seq()} changes (use a new store, or import without --history)"
        )
    with tempfile.TemporaryDirectory(prefix="memfs-import-") as tmp:
        db = _history_file(src, fmt, Path(tmp))
        with open_store(db) as carried:
            # Retention is judged by the reader's clock: read the carried store as of its
            # last change, so what it held then is not trimmed for the time since.
            last = carried.changes(0, 1, newest_first=True)
            if last:
                carried.clock = lambda t=last[0].time_ns: t
            # copy_store commits in batches; the outer one makes the import all or nothing.
            with store.batch():
                copy_store(carried, store, progress=_reporter(progress))
            result = ImportResult(f"{fmt} with history", revisions=store.last_seq())
            usage = store.usage()
            result.files, result.dirs, result.bytes = usage.files, usage.dirs, usage.bytes
    return result


def _history_file(src: Path, fmt: Format, tmp: Path) -> Path:
    """A copy of the history store ``src`` carries, in ``tmp`` (never opened in place:
    opening a store may write to it)."""
    out = tmp / "history.db"
    if fmt == "directory":
        inside = src / HISTORY_NAME
        if inside.is_file() and not inside.is_symlink():
            shutil.copyfile(inside, out)
            return out
    else:
        for member in _members(src, fmt):
            if member.name.removeprefix("./") == HISTORY_NAME and member.read is not None:
                out.write_bytes(member.read())
                return out
    raise TransferError(f"cannot import {src} with --history: it carries no {HISTORY_NAME}")
