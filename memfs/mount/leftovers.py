"""Files written into a mountpoint while nothing was mounted there, saved to the store.

A dead daemon leaves a mount that fails every access (no ``auto_unmount``), but the
directory under it can still take writes once someone unmounts it by hand, or after a
reboot: a program that kept writing then wrote into the bare directory. Those writes
were acknowledged, so ``memfs mount`` neither refuses the directory nor mounts over it
(hiding them): :func:`save` puts them into the store as the local user's one operation
(``memfs mount (user NAME)``, undoable whole), each file landed like any whole save of
a file (:func:`memfs.store.rebase.land`: a file the store has with other content is
merged, or keeps the store's version as a conflict copy), and only then moves them
aside into the recovery directory, so the mount goes on an empty directory.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from memfs.errors import MemfsError, MountError
from memfs.history.author import act_for, author_for
from memfs.paths import parse_rel
from memfs.store import open_store
from memfs.store.base import Store
from memfs.store.rebase import Shape, land
from memfs.store.subtree import SubtreeStore


@dataclass(frozen=True, slots=True)
class Leftovers:
    """What lies in a bare mountpoint: directories and regular files, store-relative."""

    dirs: list[str]
    files: list[str]


def find(mountpoint: Path) -> Leftovers:
    """Everything in ``mountpoint`` (empty lists for an empty or missing directory);
    MountError for an entry the store cannot hold (a symlink, a device, a bad name)."""
    dirs: list[str] = []
    files: list[str] = []
    if not mountpoint.is_dir() or os.path.ismount(mountpoint):
        return Leftovers(dirs, files)
    for top, subdirs, names in os.walk(mountpoint):
        subdirs.sort()
        for name in sorted(subdirs) + sorted(names):
            full = Path(top) / name
            rel = full.relative_to(mountpoint).as_posix()
            st = full.lstat()
            kind = dirs if stat.S_ISDIR(st.st_mode) else files
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise MountError(
                    f"{full} is neither a file nor a directory, so memfs cannot save it; "
                    f"move it out of {mountpoint} and mount again."
                )
            try:
                parse_rel(rel)
            except MemfsError as exc:
                raise MountError(
                    f"{full} cannot be saved to the store ({exc}); "
                    f"move it out of {mountpoint} and mount again."
                ) from None
            kind.append(rel)
    return Leftovers(dirs, files)


def save(mountpoint: Path, store_url: str, subtree: str, recovery_dir: Path) -> Path | None:
    """Save what :func:`find` finds in ``mountpoint`` into the store (served from
    ``subtree``), then move it into a new directory under ``recovery_dir``, returned;
    None if there was nothing. MountError, everything left in place, if the store
    refuses any of it."""
    found = find(mountpoint)
    if not found.files and not found.dirs:
        return None
    author = author_for("mount")
    act = act_for("mount", detail=f"files written into {mountpoint} while it was not mounted")
    try:
        with open_store(store_url) as base:
            store: Store = SubtreeStore(base, subtree) if subtree else base
            with store.acting(act):
                for rel in found.dirs:
                    store.mkdir(rel, author=author, parents=True, exist_ok=True)
                for rel in found.files:
                    full = mountpoint / rel
                    # base=b"": nothing is known of what the writer started from, so a
                    # different file in the store is merged as all new, or kept as a copy.
                    land(
                        store,
                        rel,
                        full.read_bytes(),
                        base_rev=0,
                        base=b"",
                        shape=Shape.WHOLE,
                        author=author,
                        mode=stat.S_IMODE(full.stat().st_mode),
                        side="unmounted",
                    )
    except (MemfsError, OSError) as exc:
        raise MountError(
            f"{mountpoint} holds files written while it was not mounted, and saving them "
            f"to the store failed: {exc}; they stay where they are."
        ) from exc
    recovery_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = Path(
        tempfile.mkdtemp(prefix=f"{mountpoint.name}-unmounted-{stamp}-", dir=recovery_dir)
    )
    for entry in sorted(os.listdir(mountpoint)):
        shutil.move(mountpoint / entry, target / entry)
    return target
