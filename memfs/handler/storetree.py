"""The commands' backend on the store a memfs mount shows: every command a transaction.

Through a mount, a file system call cannot say "replace this file only if it is still
the revision I read", and a lock taken on one mount means nothing to another mount or
host: two agents on two mounts would lose each other's edits. So on a directory backed
by a store (:mod:`memfs.backing`) the handler reads and writes the store itself:

- ``str_replace`` and ``insert`` read the content with its revision and write with
  ``expected_rev`` set to it; a moved base (another mount, host or door) means a fresh
  read and another try, so no edit is ever lost, and a file that exists is never
  answered ESTALE;
- ``create`` is ``expected_rev=0`` (exactly one of two racing creates wins); a
  ``create`` over a file the model viewed is a save of the whole file built on the
  revision it viewed: merged with what changed since (:func:`memfs.store.rebase.land`),
  so another writer's line added meanwhile stays;
  ``delete`` removes only the revision it saw; ``rename`` never replaces anything;
- edits of one file by threads of one process take turns (a lock per path), so they do
  not overtake one another: only other writers count against :data:`EDIT_TRIES`.

The mount sees these changes on the store's change feed like any other writer's. What
the handler needs of a mount around each command (commit a person's pending writes
first, show the result at once) is the caller's :class:`Neighbours`.

Every change is authored by the handler's ``actor``, and the feed sequence numbers of
the changes this backend made are kept in :attr:`StoreTree.own_seqs`, so the agent can leave
its own changes out of what it tells the model.
"""

from __future__ import annotations

import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol, TypeVar

from memfs.errors import AlreadyExists, Conflict, IsADirectory, NotADirectory, NotFound
from memfs.handler.backend import (
    DIR_MODE,
    EDIT_TRIES,
    FILE_MODE,
    READ_LIMIT,
    Node,
    NodeKind,
    SymlinkRefused,
    TooBigToRead,
)
from memfs.paths import MemPath
from memfs.store.base import Act, Entry, Store
from memfs.store.rebase import Shape, land

T = TypeVar("T")

# Feed sequence numbers of this backend's own changes that are remembered.
OWN_KEPT = 10_000
# Files whose viewed revision is remembered (the bases of creates over them).
SEEN_KEPT = 4096


class Neighbours(Protocol):
    """What a command on the store owes the mount that shows the same tree."""

    def settle(self, paths: list[str]) -> None:
        """Before reading: commit what the mount holds pending at or below these store
        paths, so the command works on everything people wrote."""
        ...

    def show(self, seq: int) -> None:
        """After a change: make the mount show the store up to feed record ``seq``."""
        ...


class _NoNeighbours:
    def settle(self, paths: list[str]) -> None:
        return None

    def show(self, seq: int) -> None:
        return None


def _node(entry: Entry) -> Node:
    kind: NodeKind = entry.kind
    return Node(kind, entry.size)


class StoreTree:
    """The backend on ``store`` at ``prefix`` (the directory's place in it); handles are
    store paths of directories."""

    def __init__(
        self,
        store: Store,
        prefix: str = "",
        *,
        actor: str,
        neighbours: Neighbours | None = None,
    ) -> None:
        self.store = store
        self.prefix = prefix.strip("/")
        self.actor = actor
        self.neighbours = neighbours or _NoNeighbours()
        self.own_seqs: deque[int] = deque(maxlen=OWN_KEPT)
        self._locks: weakref.WeakValueDictionary[str, threading.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._locks_lock = threading.Lock()
        # The revision of each file the model last viewed or wrote here: the base of its
        # create over that file (a save of the whole file).
        self._seen: dict[str, int] = {}

    # --- paths ---------------------------------------------------------------------
    def _at(self, path: MemPath) -> str:
        if not self.prefix:
            return path.rel
        return f"{self.prefix}/{path.rel}" if path.rel else self.prefix

    @staticmethod
    def _join(directory: str, name: str) -> str:
        return f"{directory}/{name}" if directory else name

    def _stat(self, path: str) -> Entry | None:
        try:
            return self.store.stat(path)
        except NotFound:
            return None

    def _blocked(self, path: MemPath) -> Exception:
        """The error for a directory path that is not one: the first component in the
        way, named by its model path, as a walk through the tree would meet it."""
        for i in range(1, len(path.parts) + 1):
            here = MemPath(path.parts[:i])
            entry = self._stat(self._at(here))
            if entry is None:
                return NotFound(here.model, path=here.model)
            if entry.kind == "symlink":
                return SymlinkRefused(here.model, path=here.model)
            if entry.kind != "dir":
                return NotADirectory(here.model, path=here.model)
        return NotFound(path.model, path=path.model)

    def settle(self, *paths: MemPath) -> None:
        """Have the mount commit what it holds pending for these paths (and below)."""
        self.neighbours.settle([self._at(p) for p in paths])

    def command(self, name: str) -> AbstractContextManager[None]:
        """Around one memory command: every change it makes is one operation."""
        return self.store.acting(Act(self.actor, detail=f"memory {name}"))

    # --- the Backend protocol ---------------------------------------------------------
    @contextmanager
    def directory(self, path: MemPath, *, create: bool = False) -> Iterator[str]:
        where = self._at(path)
        entry = self._stat(where)
        if entry is not None and entry.kind == "dir":
            yield where
            return
        if entry is None and create:
            try:
                self._mutate(
                    lambda: self.store.mkdir(
                        where, author=self.actor, mode=DIR_MODE, parents=True, exist_ok=True
                    )
                )
            except (NotADirectory, NotFound, AlreadyExists):
                raise self._blocked(path) from None
            yield where
            return
        raise self._blocked(path)

    def own(self, directory: str) -> Node:
        entry = self._stat(directory)
        return Node("dir", 0) if entry is None else _node(entry)

    def entry(self, directory: str, path: MemPath) -> Node | None:
        entry = self._stat(self._join(directory, path.name))
        if entry is None:
            return None
        if entry.kind == "symlink":
            raise SymlinkRefused(path.model, path=path.model)
        return _node(entry)

    def exists(self, directory: str, name: str) -> bool:
        return self._stat(self._join(directory, name)) is not None

    def listdir(self, directory: str) -> list[tuple[str, Node]]:
        try:
            return [(e.name, _node(e)) for e in self.store.listdir(directory)]
        except (NotFound, NotADirectory):
            return []  # removed while listing

    @contextmanager
    def subdir(self, directory: str, name: str) -> Iterator[str | None]:
        path = self._join(directory, name)
        entry = self._stat(path)
        yield path if entry is not None and entry.kind == "dir" else None

    def read(self, directory: str, path: MemPath) -> bytes:
        where = self._join(directory, path.name)
        data, entry = self._read(where, path)
        self._saw(where, entry.rev)
        return data

    def _saw(self, where: str, rev: int) -> None:
        if len(self._seen) >= SEEN_KEPT and where not in self._seen:
            self._seen.clear()  # forgetting makes a later create last writer wins
        self._seen[where] = rev

    def _read(self, where: str, path: MemPath) -> tuple[bytes, Entry]:
        entry = self._stat(where)
        if entry is None:
            raise NotFound(path.model, path=path.model)
        if entry.kind == "symlink":
            raise SymlinkRefused(path.model, path=path.model)
        if entry.kind == "dir":
            raise IsADirectory(path.model, path=path.model)
        if entry.size > READ_LIMIT:
            raise TooBigToRead(path.model, path=path.model, size=entry.size)
        try:
            return self.store.read(where)
        except NotFound:  # removed since the stat
            raise NotFound(path.model, path=path.model) from None

    def create(self, directory: str, path: MemPath, data: bytes) -> None:
        where = self._join(directory, path.name)
        self._mutate(
            lambda: self.store.write(where, data, author=self.actor, expected_rev=0, mode=FILE_MODE)
        )

    def edit(
        self,
        directory: str,
        path: MemPath,
        change: Callable[[bytes], bytes],
        *,
        read_old: bool = True,
    ) -> None:
        where = self._join(directory, path.name)
        with self._turn(where):
            seen = self._seen.get(where)
            if not read_old and seen is not None:
                data = change(b"")
                landing = self._mutate(
                    lambda: land(
                        self.store,
                        where,
                        data,
                        base_rev=seen,
                        shape=Shape.WHOLE,
                        author=self.actor,
                    )
                )
                self._saw(where, landing.entry.rev)
                return
            for attempt in range(EDIT_TRIES):
                old, entry = self._read(where, path)
                new = change(old if read_old else b"")
                try:
                    self._saw(where, self._write(where, new, entry.rev).rev)
                    return
                except Conflict:
                    # Another writer committed in between: read again. The pause keeps
                    # two busy writers from trading conflicts in lock step.
                    time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise Conflict(path.model, path=path.model)

    def remove(self, directory: str, path: MemPath) -> None:
        where = self._join(directory, path.name)
        with self._turn(where):
            for _ in range(EDIT_TRIES):
                entry = self._stat(where)
                if entry is None:
                    raise NotFound(path.model, path=path.model)
                if entry.kind == "symlink":
                    raise SymlinkRefused(path.model, path=path.model)
                try:
                    # A file goes only as the revision seen: a write after the look wins.
                    self._delete(where, entry.rev if entry.is_file else None)
                    return
                except NotFound:
                    raise NotFound(path.model, path=path.model) from None
                except Conflict:
                    continue
        raise Conflict(path.model, path=path.model)

    def rename(self, source: str, old: MemPath, target: str, new: MemPath) -> None:
        src, dst = self._join(source, old.name), self._join(target, new.name)
        try:
            self._mutate(lambda: self.store.rename(src, dst, author=self.actor))
        except NotFound as exc:
            if exc.path == src:
                raise NotFound(old.model, path=old.model) from None
            raise

    # --- helpers -------------------------------------------------------------------------
    def _write(self, where: str, data: bytes, expected: int) -> Entry:
        return self._mutate(
            lambda: self.store.write(where, data, author=self.actor, expected_rev=expected)
        )

    def _delete(self, where: str, expected: int | None) -> None:
        self._mutate(
            lambda: self.store.delete(
                where, author=self.actor, recursive=True, expected_rev=expected
            )
        )

    def _mutate(self, mutation: Callable[[], T]) -> T:
        """Run one store mutation, remember the feed records it made, and have the
        mount show them."""
        result = mutation()
        mine = self.store.appended()
        self.own_seqs.extend(mine)
        if mine:
            self.neighbours.show(mine[-1])
        return result

    @contextmanager
    def _turn(self, path: str) -> Iterator[None]:
        with self._locks_lock:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = threading.Lock()
        with lock:
            yield
