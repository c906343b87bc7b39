"""Which directory the MCP server's handler works on, and which store stands behind it.

``--root DIR`` is used as it is: a plain directory (no store: no history, no change
feed, edits are not attributed) or a memfs mount (its state record names the store, so
history, search and the change feed come from there). ``--store URL`` uses a running
``memfs mount`` of that store if there is one, else mounts the store privately for the
life of the server. Either way every command goes through the handler on a directory,
and an edit through a mount is attributed by the mount to the writing thread (see
:mod:`memfs.mcp.workers`); a second copy of the command logic over the store would
drift from the contract.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memfs.errors import MemfsError, PathError
from memfs.handler import MemoryHandler
from memfs.paths import MemPath, parse_rel
from memfs.secrets import DEFAULT_POLICY
from memfs.store import open_store
from memfs.store.base import Store

log = logging.getLogger(__name__)

PRIVATE_MOUNTS = "mcp"  # under the memfs state directory: mounts this server made


@dataclass
class MemoryTree:
    """The handler's directory and what is known about it."""

    root: Path
    handler: MemoryHandler
    store: Store | None = None
    subdir: str = ""  # the store path ``root`` shows ("" unless a mount's subdirectory)
    private_mount: Path | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)

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


def _handler(
    root: Path,
    overwrite: bool,
    max_file_bytes: int,
    secrets: str,
    store: Store | None = None,
    prefix: str = "",
) -> MemoryHandler:
    # With the store, the model hears the tree caps with numbers and its views count as
    # use for expiry, as through memfs tool and memfs agent.
    return MemoryHandler(
        root,
        overwrite=overwrite,
        max_file_bytes=max_file_bytes,
        secrets=secrets,
        store=store,
        store_prefix=prefix,
    )


def open_root(
    root: Path, *, overwrite: bool, max_file_bytes: int, secrets: str = DEFAULT_POLICY
) -> MemoryTree:
    """The tree at directory ``root``: a plain directory, or a memfs mount (or a
    directory inside one), whose store is then opened too."""
    from memfs.mount import state

    tree = MemoryTree(root, _handler(root, overwrite, max_file_bytes, secrets))
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
    tree.handler = _handler(root, overwrite, max_file_bytes, secrets, tree.store, tree.subdir)
    tree.closers.append(tree.store.close)
    return tree


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
        handler = _handler(mountpoint, overwrite, max_file_bytes, secrets, store)
        tree = MemoryTree(mountpoint, handler, store)
    except BaseException:
        store.close()
        raise
    tree.closers.append(store.close)
    if private is not None:
        tree.private_mount = mountpoint
        tree.closers.append(lambda: _unmount(mountpoint, on_note))
    return tree


def _unmount(mountpoint: Path, on_note: Callable[[str], None]) -> None:
    from memfs.mount import daemon

    daemon.stop(mountpoint, on_note=on_note)
    with contextlib.suppress(OSError):  # not empty or already gone: nothing of ours left
        mountpoint.rmdir()
