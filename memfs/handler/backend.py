"""What the six commands need from the tree they work on, in one protocol.

The commands (:mod:`memfs.handler.commands`) are written once, over :class:`Backend`.
Two trees implement it:

- :class:`memfs.handler.tree.DirTree`, a real directory (a plain one, or a FUSE mount
  the handler knows nothing about), walked through directory fds without following a
  link, each write an atomic replace;
- :class:`memfs.handler.storetree.StoreTree`, the store a memfs mount shows, read and
  written directly: every edit is a compare-and-set on the revision it read, so two
  agents on two mounts (or hosts) never lose one another's edit.

A backend hands out opaque *directory handles* (a dir fd, a store path) from
:meth:`Backend.directory`, and every other call names one entry inside one. Errors are
the typed ones of :mod:`memfs.errors` plus the handler's own below; the commands turn
them into the contract's strings.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Generic, Literal, NamedTuple, Protocol, TypeVar

from memfs.errors import StoreError, TooLarge
from memfs.paths import MemPath

FILE_MODE = 0o600
DIR_MODE = 0o700
# An edit overtaken this many times by writers that changed the file in between gives up
# (the model hears "kept changing"); waiting for another memfs edit is not counted.
EDIT_TRIES = 20
# view and edit read whole files; a file a person made can be any size, so stop early.
READ_LIMIT = 64 * 1024 * 1024

NodeKind = Literal["file", "dir", "symlink", "other"]

H = TypeVar("H")


class Node(NamedTuple):
    """What the commands need to know of one entry: its kind and size."""

    kind: NodeKind
    size: int


class SymlinkRefused(StoreError):
    """A component of the path is a symbolic link; ``path`` is the link's model path."""


class NotRegular(StoreError):
    """The entry is a FIFO, socket or device: memfs handles files and directories only."""


class HardLinked(StoreError):
    """The file has other hard links: its content may live outside the root too."""


class TooBigToRead(TooLarge):
    """The file is larger than memfs reads (READ_LIMIT)."""

    def __init__(self, message: str, *, path: str = "", size: int = 0) -> None:
        super().__init__(message, path=path)
        self.size = size


class Backend(Protocol, Generic[H]):
    """The tree under the commands. ``path`` arguments are gate-checked model paths; an
    entry's ``path`` is looked up by its last name inside the handle given with it."""

    def directory(self, path: MemPath, *, create: bool = False) -> AbstractContextManager[H]:
        """A handle of the directory at ``path``; with ``create``, missing directories
        are made (mode 0700). NotFound, NotADirectory or SymlinkRefused name the first
        component in the way."""
        ...

    def own(self, directory: H) -> Node:
        """The directory itself."""
        ...

    def entry(self, directory: H, path: MemPath) -> Node | None:
        """The entry named ``path.name``, None if there is none; SymlinkRefused for a
        link."""
        ...

    def exists(self, directory: H, name: str) -> bool:
        """Whether anything (a link too) is named ``name``."""
        ...

    def listdir(self, directory: H) -> list[tuple[str, Node]]:
        """Every entry's name and node, links included (the caller decides)."""
        ...

    def subdir(self, directory: H, name: str) -> AbstractContextManager[H | None]:
        """The child directory ``name``, or None if it is not one (any more)."""
        ...

    def read(self, directory: H, path: MemPath) -> bytes:
        """The whole file (NotFound, IsADirectory, SymlinkRefused, NotRegular,
        HardLinked, TooBigToRead)."""
        ...

    def create(self, directory: H, path: MemPath, data: bytes) -> None:
        """A new file; AlreadyExists if anything is there already."""
        ...

    def edit(
        self,
        directory: H,
        path: MemPath,
        change: Callable[[bytes], bytes],
        *,
        read_old: bool = True,
    ) -> None:
        """Replace the file with ``change(old_content)`` without losing a concurrent
        write: an edit overtaken by another writer is recomputed on the fresh content, up
        to EDIT_TRIES times, then Conflict. ``change`` may raise to write nothing.
        ``read_old=False`` (an overwriting create) passes ``b""``."""
        ...

    def remove(self, directory: H, path: MemPath) -> None:
        """Delete the file, or the directory with everything below it."""
        ...

    def rename(self, source: H, old: MemPath, target: H, new: MemPath) -> None:
        """Move ``old`` to ``new``, never replacing anything (AlreadyExists)."""
        ...
