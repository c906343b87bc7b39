"""One directory of a store seen as a whole store: ``memfs mount --subtree PATH``.

:class:`SubtreeStore` wraps a store and answers every call of the
:class:`~memfs.store.base.Store` interface with paths relative to one directory of it
(the *subtree*): ``""`` is that directory, ``"a.md"`` is ``SUBTREE/a.md`` in the store.
Whatever takes a Store (the mount's operations, its write path and journal, the rebase
rules) then works on the directory unchanged, and nothing outside it can be named:

- every path given is structural store-relative text (no empty, ``.`` or ``..``
  segment, no leading ``/``), else PathError: ``..`` cannot climb out. The wrapped
  store still puts every mutation's *full* path through the gate (memfs.paths), so a
  name made through the view is one the model can address in the whole tree too;
- what comes back (entries, revisions, search hits, the change feed) is mapped back and
  whatever lies outside is left out. A rename across the subtree's edge is shown as
  what it is from inside: an arrival (a ``rename`` with no ``old_path``) or a
  ``delete``. When a page of the feed ends with changes that are all outside, a
  ``attr`` record of the root at the last one's number stands for them, so a follower's
  cursor moves past them (it would otherwise read them again on every poll);
- the operation log, checkpoints, caps and usage are the whole store's: one store, one
  history (``memfs log`` and ``undo`` work on the store, outside the view).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

from memfs.errors import InvalidMove, PathError
from memfs.store.base import (
    DEFAULT_DIR_MODE,
    Act,
    Change,
    Checkpoint,
    Entry,
    Operation,
    Revision,
    SearchHit,
    Step,
    Store,
    Usage,
    WriteItem,
)
from memfs.store.ranges import RevisionReader

V = TypeVar("V")

# Raw feed records read per page while filtering (the caller's limit counts kept ones).
_PAGE = 1000


def subtree_path(text: str) -> str:
    """``text`` as a canonical store-relative directory path (``"a/b"``), surrounding
    slashes dropped; PathError for an empty, ``.`` or ``..`` segment or the root."""
    rel = text.strip().strip("/")
    if not rel:
        raise PathError("the subtree must name a directory below the root, not the root")
    if any(p in ("", ".", "..") for p in rel.split("/")):
        raise PathError(
            f"the subtree {text!r} is not a directory of the store: name it from the root,"
            " with no empty, '.' or '..' part (e.g. claude-code/REPO)",
            path=text,
        )
    return rel


def _check(rel: str) -> None:
    if rel.startswith("/") or any(p in ("", ".", "..") for p in rel.split("/")):
        raise PathError(f"{rel!r} is not a path inside the subtree", path=rel)


class SubtreeStore(Store):
    """``base`` seen from its directory ``prefix`` (see the module docstring)."""

    def __init__(self, base: Store, prefix: str) -> None:
        self.base = base
        self.prefix = subtree_path(prefix)
        self.url = base.url
        self.pushes_changes = base.pushes_changes
        # Caps are the whole store's, fixed when it was opened.
        self.max_file_bytes = base.max_file_bytes
        self.max_tree_bytes = base.max_tree_bytes
        self.max_files = base.max_files

    # --- mapping -----------------------------------------------------------------------
    def full(self, rel: str) -> str:
        """The store path of ``rel`` (a path of the view)."""
        if rel == "":
            return self.prefix
        _check(rel)
        return f"{self.prefix}/{rel}"

    def inner(self, path: str) -> str | None:
        """The view's path for store path ``path``, None when it is outside."""
        if path == self.prefix:
            return ""
        if path.startswith(self.prefix + "/"):
            return path[len(self.prefix) + 1 :]
        return None

    def view_paths(self, paths: list[str]) -> list[str]:
        """Store paths as the view's: those inside mapped, one at or above the subtree
        (a door settling a whole directory holding it) as the view's root, the rest
        left out."""
        out = []
        for path in paths:
            rel = self.inner(path)
            if rel is None and (path == "" or self.prefix.startswith(path + "/")):
                rel = ""
            if rel is not None and rel not in out:
                out.append(rel)
        return out

    @property
    def journal_key(self) -> str:
        """What the mount's journal directory is named for: not the store's URL alone,
        since the journal holds the view's paths, which a mount of the whole store (or
        of another subtree) must never replay as its own."""
        return f"{self.url}#subtree={self.prefix}"

    def _entry(self, entry: Entry) -> Entry:
        rel = self.inner(entry.path)
        return entry if rel is None else dataclasses.replace(entry, path=rel)

    def _revision(self, revision: Revision) -> Revision:
        rel = self.inner(revision.path)
        return revision if rel is None else dataclasses.replace(revision, path=rel)

    def _change(self, change: Change) -> Change | None:
        new = self.inner(change.path)
        old = None if change.old_path is None else self.inner(change.old_path)
        if change.kind == "rename" and change.old_path is not None:
            if new is not None:
                return dataclasses.replace(change, path=new, old_path=old)
            if old is not None:
                return dataclasses.replace(change, kind="delete", path=old, old_path=None)
            return None
        if new is None:
            return None
        return dataclasses.replace(change, path=new, old_path=old)

    # --- the store's own attributes ------------------------------------------------------
    @property
    def clock(self) -> Callable[[], int]:
        return self.base.clock

    @clock.setter
    def clock(self, value: Callable[[], int]) -> None:
        self.base.clock = value

    # --- reading -----------------------------------------------------------------------
    def stat(self, path: str) -> Entry:
        return self._entry(self.base.stat(self.full(path)))

    def listdir(self, path: str) -> list[Entry]:
        return [self._entry(e) for e in self.base.listdir(self.full(path))]

    def read(self, path: str) -> tuple[bytes, Entry]:
        data, entry = self.base.read(self.full(path))
        return data, self._entry(entry)

    def subtree_extent(self, path: str) -> tuple[int, int]:
        return self.base.subtree_extent(self.full(path))

    def search(
        self, query: str, path: str = "", *, regex: bool = False, limit: int = 20
    ) -> list[SearchHit]:
        hits = self.base.search(query, self.full(path), regex=regex, limit=limit)
        out = []
        for hit in hits:
            rel = self.inner(hit.path)
            if rel is not None:
                out.append(dataclasses.replace(hit, path=rel))
        return out

    def search_index_pending(self) -> int:
        return self.base.search_index_pending()

    def build_search_index(self, progress: Callable[[int], None] | None = None) -> None:
        self.base.build_search_index(progress)

    # --- writing -----------------------------------------------------------------------
    def write(
        self,
        path: str,
        data: bytes | bytearray,
        *,
        author: str,
        expected_rev: int | None = None,
        mode: int | None = None,
        parents: bool = False,
        replace: bool = False,
        mtime_ns: int | None = None,
        sha256: str | None = None,
    ) -> Entry:
        entry = self.base.write(
            self.full(path),
            data,
            author=author,
            expected_rev=expected_rev,
            mode=mode,
            parents=parents,
            replace=replace,
            mtime_ns=mtime_ns,
            sha256=sha256,
        )
        return self._entry(entry)

    def write_many(self, items: Iterable[WriteItem], *, author: str) -> list[Entry]:
        inside = [dataclasses.replace(i, path=self.full(i.path)) for i in items]
        return [self._entry(e) for e in self.base.write_many(inside, author=author)]

    def write_series(
        self,
        path: str,
        data: bytes | bytearray,
        steps: Sequence[Step],
        *,
        expected_rev: int,
        mtime_ns: int | None = None,
    ) -> Entry:
        entry = self.base.write_series(
            self.full(path), data, steps, expected_rev=expected_rev, mtime_ns=mtime_ns
        )
        return self._entry(entry)

    def mkdir(
        self,
        path: str,
        *,
        author: str,
        mode: int = DEFAULT_DIR_MODE,
        parents: bool = False,
        exist_ok: bool = False,
    ) -> Entry:
        entry = self.base.mkdir(
            self.full(path), author=author, mode=mode, parents=parents, exist_ok=exist_ok
        )
        return self._entry(entry)

    def symlink(self, path: str, target: str, *, author: str) -> Entry:
        return self._entry(self.base.symlink(self.full(path), target, author=author))

    def delete(
        self,
        path: str,
        *,
        author: str,
        recursive: bool = False,
        expected_rev: int | None = None,
    ) -> None:
        if path == "":
            # The view's root is the subtree itself: as undeletable as a store's root.
            raise InvalidMove("the root of the mount cannot be deleted")
        self.base.delete(
            self.full(path), author=author, recursive=recursive, expected_rev=expected_rev
        )

    def rename(self, src: str, dst: str, *, author: str, overwrite: bool = False) -> None:
        if "" in (src, dst):
            raise InvalidMove("the root of the mount cannot be renamed or replaced")
        self.base.rename(self.full(src), self.full(dst), author=author, overwrite=overwrite)

    def set_attrs(
        self,
        path: str,
        *,
        author: str,
        mode: int | None = None,
        uid: int | None = None,
        gid: int | None = None,
        mtime_ns: int | None = None,
        record: bool = True,
    ) -> Entry:
        entry = self.base.set_attrs(
            self.full(path),
            author=author,
            mode=mode,
            uid=uid,
            gid=gid,
            mtime_ns=mtime_ns,
            record=record,
        )
        return self._entry(entry)

    def truncate(self, path: str, size: int, *, author: str) -> Entry:
        return self._entry(self.base.truncate(self.full(path), size, author=author))

    # --- history and change feed ---------------------------------------------------------
    def history(self, path: str, limit: int | None = None) -> list[Revision]:
        return [self._revision(r) for r in self.base.history(self.full(path), limit)]

    def read_revision(self, path: str, rev: int) -> bytes:
        return self.base.read_revision(self.full(path), rev)

    def open_revision(self, path: str, rev: int) -> RevisionReader:
        return self.base.open_revision(self.full(path), rev)

    def changes(
        self,
        since: int = 0,
        limit: int | None = None,
        *,
        until: int | None = None,
        newest_first: bool = False,
        op: int | None = None,
    ) -> list[Change]:
        if op is not None:
            records = [self._change(c) for c in self.base.changes(op=op, limit=limit)]
            return [c for c in records if c is not None]
        if newest_first:
            return self._newest_first(since, limit, until)
        out: list[Change] = []
        cursor = since
        while limit is None or len(out) < limit:
            page = self.base.changes(cursor, _PAGE, until=until)
            if not page:
                break
            for change in page:
                cursor = change.seq
                mapped = self._change(change)
                if mapped is not None:
                    out.append(mapped)
                    if limit is not None and len(out) >= limit:
                        return out
            if len(page) < _PAGE:
                break
        if cursor > (out[-1].seq if out else since):
            # Only changes outside since the last one kept: stand for them (see above).
            out.append(self._passed(cursor))
        return out

    def _passed(self, seq: int) -> Change:
        return Change(seq=seq, kind="attr", path="", author="", time_ns=0)

    def _newest_first(self, since: int, limit: int | None, until: int | None) -> list[Change]:
        out: list[Change] = []
        top = until
        while limit is None or len(out) < limit:
            page = self.base.changes(since, _PAGE, until=top, newest_first=True)
            for change in page:
                mapped = self._change(change)
                if mapped is not None:
                    out.append(mapped)
                    if limit is not None and len(out) >= limit:
                        return out
            if len(page) < _PAGE:
                break
            top = page[-1].seq - 1
        return out

    # --- the operation log: the whole store's ----------------------------------------------
    def acting(self, act: Act) -> AbstractContextManager[None]:
        return self.base.acting(act)

    def operations(
        self,
        *,
        before: int | None = None,
        limit: int | None = 20,
        actor: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        path: str | None = None,
    ) -> list[Operation]:
        return self.base.operations(
            before=before,
            limit=limit,
            actor=actor,
            since_ns=since_ns,
            until_ns=until_ns,
            path=self.full(path if path is not None else ""),
        )

    def operation(self, op_id: int) -> Operation:
        return self.base.operation(op_id)

    def commands_since(self, path: str, rev: int) -> set[str]:
        return self.base.commands_since(self.full(path), rev)

    def last_seq(self) -> int:
        return self.base.last_seq()

    def read_blob(self, sha256: str) -> bytes:
        return self.base.read_blob(sha256)

    def redact(self, path: str, rev: int, *, author: str) -> list[Revision]:
        return [self._revision(r) for r in self.base.redact(self.full(path), rev, author=author)]

    def set_checkpoint(self, name: str, *, author: str, seq: int | None = None) -> Checkpoint:
        return self.base.set_checkpoint(name, author=author, seq=seq)

    def checkpoints(self) -> list[Checkpoint]:
        return self.base.checkpoints()

    def delete_checkpoint(self, name: str) -> None:
        self.base.delete_checkpoint(name)

    # Doors' notes are the whole store's, as checkpoints are.
    def note(self, space: str, key: str) -> str | None:
        return self.base.note(space, key)

    def notes(self, space: str, prefix: str = "") -> dict[str, str]:
        return self.base.notes(space, prefix)

    def set_note(self, space: str, key: str, value: str, *, expires_ns: int | None = None) -> None:
        self.base.set_note(space, key, value, expires_ns=expires_ns)

    def drop_notes(self, space: str, key: str, *, below: bool = False) -> int:
        return self.base.drop_notes(space, key, below=below)

    def pushed_upto(self) -> int:
        return self.base.pushed_upto()

    def interrupt_waits(self) -> None:
        self.base.interrupt_waits()

    def wait_for_changes(self, since: int, timeout: float) -> bool:
        return self.base.wait_for_changes(since, timeout)

    # --- housekeeping ----------------------------------------------------------------------
    def usage(self) -> Usage:
        return self.base.usage()

    def mark_used(self, paths: list[str]) -> None:
        self.base.mark_used([self.full(p) for p in paths])

    def unused(self, before_ns: int) -> list[Entry]:
        return [
            self._entry(e) for e in self.base.unused(before_ns) if self.inner(e.path) is not None
        ]

    def touched(self) -> Mapping[str, int]:
        return self._inside(self.base.touched())

    def settled(self) -> Mapping[str, Entry]:
        return {p: self._entry(e) for p, e in self._inside(self.base.settled()).items()}

    def _inside(self, found: Mapping[str, V]) -> dict[str, V]:
        out = {}
        for path, value in found.items():
            rel = self.inner(path)
            if rel is not None:
                out[rel] = value
        return out

    def appended(self) -> range:
        return self.base.appended()

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Revision]:
        return [
            self._revision(r) for r in self.base.verify(progress) if self.inner(r.path) is not None
        ]

    def batch(self) -> AbstractContextManager[None]:
        return self.base.batch()

    def defer_maintenance(self) -> None:
        self.base.defer_maintenance()

    def maintain(self) -> None:
        self.base.maintain()

    def storage_problem(self) -> str | None:
        return self.base.storage_problem()

    def rescue(self, recovery_dir: Path) -> Path | None:
        return self.base.rescue(recovery_dir)

    def close(self) -> None:
        self.base.close()

    def walk(self, path: str = "") -> Iterator[Entry]:
        for entry in self.base.walk(self.full(path)):
            yield self._entry(entry)
