"""Renames in DIR become store renames: one atomic move and one ``rename`` record in
the change feed (so followers see a move), content stored once, instead of creates at
the new names plus corroborated deletes of the old ones.

History belongs to paths (invariant 6 of :mod:`memfs.store.base`), so a move does not
carry a file's revisions along: the new path gets one arrival revision (on top of any
history it had), and the old path keeps its revisions for the backend's grace period,
then only its last one, like any path that went away.

watchdog reports a rename inside DIR as one moved event (plus one per child for a
directory). If the store still holds exactly what was synced under the old name and the
new name is free on both sides, the mirror renames in the store; anything else falls
back to the ordinary path-by-path reconcile (a create here, a corroborated delete there).
"""

from __future__ import annotations

import logging
import stat

from memfs.errors import MemfsError, NotFound
from memfs.paths import parent_of
from memfs.sync.disk import Oversize, Unstable
from memfs.sync.engine import Engine

log = logging.getLogger("memfs.sync")


def try_rename(engine: Engine, src: str, dst: str, is_dir: bool) -> bool:
    """Rename ``src`` to ``dst`` in the store if it is a plain move; True if it did."""
    entries = engine.state.entries
    base = entries.get(src)
    if base is None or dst in entries or engine.disk.lstat(src) is not None:
        return False
    st = engine.disk.lstat(dst)
    if st is None or stat.S_ISDIR(st.st_mode) != is_dir or (base.kind == "dir") != is_dir:
        return False
    store = engine.store
    try:
        if not is_dir and engine.disk.read(dst).sha256 != base.sha256:
            return False
        entry = store.stat(src)
        if entry.kind != base.kind or (not is_dir and entry.rev != base.rev):
            return False
        try:
            store.stat(dst)
            return False
        except NotFound:
            pass
        parent = parent_of(dst)
        if parent:
            store.mkdir(parent, author=engine.author, parents=True, exist_ok=True)
        store.rename(src, dst, author=engine.author)
    except (MemfsError, OSError, Unstable, Oversize) as e:
        log.debug("rename %s -> %s handled as delete + create: %s", src, dst, e)
        return False
    prefix = src + "/"
    for path in [src, *(p for p in entries if p.startswith(prefix))]:
        entries[dst + path[len(src) :]] = entries.pop(path)
    engine.dirty = True
    return True
