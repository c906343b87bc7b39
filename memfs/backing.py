"""The store behind a memory directory, for the model's doors (``memfs tool``, ``memfs
agent``, the MCP server): a memfs mount's store, found from its state record, or the
one a ``--store URL`` names.

On a mount the handler runs the model's commands on the store itself, each edit a
compare-and-set (:mod:`memfs.handler.storetree`), and asks the mount, over its control
socket (:mod:`memfs.mount.control`), to commit what people wrote before a command reads
it and to show the command's change at once. A plain directory has no store: ``None``;
given a ``--store`` it gets a Backing that is not ``mounted``: the store names caps only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memfs.errors import MountError
from memfs.store import shown_url
from memfs.store.base import Store

if TYPE_CHECKING:
    from memfs.mount.control import MountLink


@dataclass(frozen=True, slots=True)
class Backing:
    """An open store (the caller closes it, with :meth:`close`) and the directory's place
    in it. ``mounted``: the directory is a memfs mount of it (or lies in one), so the
    model's commands run on the store itself, with ``link`` to that mount."""

    store: Store
    prefix: str
    mounted: bool = True
    link: MountLink | None = None

    @property
    def commands_store(self) -> Store | None:
        """The store the handler's commands run on, if any."""
        return self.store if self.mounted else None

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
        self.store.close()


def same_store(a: str, b: str) -> bool:
    """Whether two store URLs name one store: SQLite files by their real path (however
    the URL spells it), other stores by their URL without a password."""

    def key(url: str) -> str:
        lowered = url.lower()
        if "://" not in url or lowered.startswith("sqlite://"):
            path = url[len("sqlite://") :] if lowered.startswith("sqlite://") else url
            return "sqlite:" + os.path.realpath(os.path.expanduser(path.partition("?")[0]))
        return shown_url(url)

    return key(a) == key(b)


def store_behind(root: str | os.PathLike[str], store_url: str | None = None) -> Backing | None:
    """Open the store ``root`` shows: ``store_url``'s if given (``root`` is then its
    root, unless ``root`` lies in a mount, whose place in the tree is kept), else the
    mount's that serves ``root``; None for a plain directory. Raises the store's
    errors (StoreUnavailable) when the store cannot be opened, and MountError when
    ``root`` lies in a mount of a store other than ``store_url``'s."""
    from memfs.mount import state
    from memfs.mount.control import MountLink
    from memfs.store import open_store

    record = state.lookup(root)
    prefix = ""
    if record is not None:
        inside = state.normalize(root).relative_to(record.mountpoint)
        prefix = "" if inside == Path(".") else inside.as_posix()
        if store_url is not None and not same_store(store_url, record.store_url):
            # The commands would go to one store while the files shown are another's.
            raise MountError(
                f"{root} is a mount of {shown_url(record.store_url)}, not of "
                f"{shown_url(store_url)}; leave out --store to work on the mount's store, "
                "or mount the other store and give its mountpoint"
            )
        store_url = store_url or record.store_url
    if store_url is None:
        return None
    store = open_store(store_url)
    if record is None:
        return Backing(store, prefix, mounted=False)
    return Backing(
        store, prefix, mounted=True, link=MountLink(state.control_path(record.mountpoint))
    )
