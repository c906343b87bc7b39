"""What every part of the store contract shares: the author name and a tree snapshot."""

from __future__ import annotations

from collections.abc import Callable

from memfs.store.base import Store

MakeStore = Callable[..., Store]
A = "tester"


def tree(store: Store) -> dict[str, tuple[str, bytes | str | None]]:
    """A snapshot of the whole tree: path -> (kind, content or target)."""
    snapshot: dict[str, tuple[str, bytes | str | None]] = {}
    for entry in store.walk():
        if entry.is_file:
            snapshot[entry.path] = ("file", store.read(entry.path)[0])
        elif entry.kind == "symlink":
            snapshot[entry.path] = ("symlink", entry.target)
        else:
            snapshot[entry.path] = ("dir", None)
    return snapshot
