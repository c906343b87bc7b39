"""The store behind a memory directory, for the model's doors (``memfs tool``, ``memfs
agent``, the MCP server): a memfs mount's store, found from its state record, or the
one a ``--store URL`` names.

The handler works on the directory either way; with the store it also refuses writes
past the store's tree caps with the numbers and records the model's file views as use
(:mod:`memfs.handler.keeping`). A plain directory has no store: ``None``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memfs.store.base import Store


@dataclass(frozen=True, slots=True)
class Backing:
    """An open store (the caller closes it) and the directory's place in it."""

    store: Store
    prefix: str

    def close(self) -> None:
        self.store.close()


def store_behind(root: str | os.PathLike[str], store_url: str | None = None) -> Backing | None:
    """Open the store ``root`` shows: ``store_url``'s if given (``root`` is then its
    root, unless ``root`` lies in a mount, whose place in the tree is kept), else the
    mount's that serves ``root``; None for a plain directory. Raises the store's
    errors (StoreUnavailable) when the store cannot be opened."""
    from memfs.mount import state
    from memfs.store import open_store

    record = state.lookup(root)
    prefix = ""
    if record is not None:
        inside = state.normalize(root).relative_to(record.mountpoint)
        prefix = "" if inside == Path(".") else inside.as_posix()
        store_url = store_url or record.store_url
    if store_url is None:
        return None
    return Backing(open_store(store_url), prefix)
