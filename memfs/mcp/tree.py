"""Which directory the MCP server's handler works on, and which store stands behind it.

``--root DIR`` is used as it is: a plain directory (no store: no history, no change
feed, edits are not attributed) or a memfs mount (its state record names the store, so
history, search and the change feed come from there). ``--store URL`` uses a running
``memfs mount`` of that store if there is one, else mounts the store privately for the
life of the server. On a mount every command runs on the mount's store as a
transaction (the handler's store backend, :mod:`memfs.handler.storetree`), by the actor
``mcp:`` plus the client's whole ``clientInfo.name``: one handler per client, the same
commands and the same gate as every other door.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memfs.errors import MemfsError, PathError
from memfs.handler import MemoryHandler
from memfs.handler.storetree import Neighbours
from memfs.paths import MemPath, parse_rel
from memfs.secrets import DEFAULT_POLICY
from memfs.store import open_store
from memfs.store.base import Store

log = logging.getLogger(__name__)

PRIVATE_MOUNTS = "mcp"  # under the memfs state directory: mounts this server made


@dataclass(frozen=True, slots=True)
class HandlerOptions:
    """What every client's handler is made with (memfs tool's options)."""

    overwrite: bool
    max_file_bytes: int
    secrets: str = DEFAULT_POLICY


@dataclass
class MemoryTree:
    """The handlers' directory and what is known about it."""

    root: Path
    options: HandlerOptions
    store: Store | None = None
    subdir: str = ""  # the store path ``root`` shows ("" unless a mount's subdirectory)
    private_mount: Path | None = None
    # The mount showing the store, told around each command (None: a plain directory).
    neighbours: Neighbours | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    _handlers: dict[str, MemoryHandler] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handler_for(self, actor: str) -> MemoryHandler:
        """The handler of one client (``actor``: ``mcp:NAME``), made on first use."""
        with self._lock:
            handler = self._handlers.get(actor)
            if handler is None:
                handler = self._handlers[actor] = MemoryHandler(
                    self.root,
                    overwrite=self.options.overwrite,
                    max_file_bytes=self.options.max_file_bytes,
                    secrets=self.options.secrets,
                    store=self.store if self.neighbours is not None else None,
                    store_prefix=self.subdir,
                    neighbours=self.neighbours,
                    actor=actor,
                )
            return handler

    def store_path(self, path: MemPath) -> str:
        """The store path of a model path under this tree."""
        if not self.subdir:
            return path.rel
        return self.subdir + ("/" + path.rel if path.rel else "")

    def model_path(self, store_path: str) -> MemPath | None:
        """The model path of a store path, or None when it is outside this tree or a name
        the gate refuses (no client can address it)."""
        if self.subdir:
            if store_path == self.subdir:
                store_path = ""
            elif store_path.startswith(self.subdir + "/"):
                store_path = store_path[len(self.subdir) + 1 :]
            else:
                return None
        try:
            return parse_rel(store_path)
        except PathError:
            return None

    def close(self) -> None:
        for closer in reversed(self.closers):
            try:
                closer()
            except Exception:
                log.exception("memfs mcp: closing %s failed", self.root)
        self.closers.clear()


def open_root(
    root: Path, *, overwrite: bool, max_file_bytes: int, secrets: str = DEFAULT_POLICY
) -> MemoryTree:
    """The tree at directory ``root``: a plain directory, or a memfs mount (or a
    directory inside one), whose store is then opened too."""
    from memfs.mount import state

    tree = MemoryTree(root, HandlerOptions(overwrite, max_file_bytes, secrets))
    record = state.lookup(root)
    if record is None:
        return tree
    rel = os.path.relpath(state.normalize(root), record.mountpoint)
    try:
        tree.store = open_store(record.store_url)
    except MemfsError as exc:
        # The tree still works through the mount; only history and search need the store.
        log.warning("cannot open the store %s behind %s: %s", record.store_url, root, exc)
        return tree
    tree.subdir = "" if rel == "." else rel
    tree.closers.append(tree.store.close)
    _link(tree, Path(record.mountpoint))
    return tree


def _link(tree: MemoryTree, mountpoint: Path) -> None:
    """Run the commands on the store, telling the mount at ``mountpoint``."""
    from memfs.mount import state
    from memfs.mount.control import MountLink

    link = MountLink(state.control_path(mountpoint))
    tree.neighbours = link
    tree.closers.append(link.close)


def _live_mount_of(canonical: str) -> Path | None:
    """A running mount of the store (not one another MCP server made for itself, which
    goes away with that server)."""
    from memfs.mount import state

    private = state.state_dir() / PRIVATE_MOUNTS
    for record in state.records():
        if record.store_url.split("?", 1)[0] != canonical or not record.alive:
            continue
        if Path(record.mountpoint).parent == private:
            continue
        return Path(record.mountpoint)
    return None


def open_store_tree(
    store_url: str,
    *,
    overwrite: bool,
    max_file_bytes: int,
    on_note: Callable[[str], None],
    secrets: str = DEFAULT_POLICY,
) -> MemoryTree:
    """The tree of the store at ``store_url``, through a running mount of it or a mount
    of its own (unmounted by :meth:`MemoryTree.close`)."""
    from memfs.mount import daemon, state

    store = open_store(store_url)  # a bad URL or store fails here, with its own message
    try:
        canonical = getattr(store, "url", None) or store_url
        mountpoint = _live_mount_of(canonical)
        private: Path | None = None
        if mountpoint is None:
            # One per server process: two servers of one store are two mounts of it,
            # which the store supports, and neither unmounts the other's.
            private = state.state_dir() / PRIVATE_MOUNTS / str(os.getpid())
            record = daemon.start(private, store_url, on_note=on_note)
            mountpoint = Path(record.mountpoint)
        tree = MemoryTree(mountpoint, HandlerOptions(overwrite, max_file_bytes, secrets), store)
    except BaseException:
        store.close()
        raise
    tree.closers.append(store.close)
    _link(tree, mountpoint)
    if private is not None:
        tree.private_mount = mountpoint
        tree.closers.append(lambda: _unmount(mountpoint, on_note))
    return tree


def _unmount(mountpoint: Path, on_note: Callable[[str], None]) -> None:
    from memfs.mount import daemon

    daemon.stop(mountpoint, on_note=on_note)
    with contextlib.suppress(OSError):  # not empty or already gone: nothing of ours left
        mountpoint.rmdir()
