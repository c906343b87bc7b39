"""What the write path keeps outside the store when the store will not take a change:
person-readable copies under the recovery directory, whole stores rescued there, and
the pending writes of stopped daemons' journals (found by content, for ``memfs
redact``)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from memfs.mount import journal as jr
from memfs.mount.replay import base_of, landed_before
from memfs.store.base import Store

log = logging.getLogger("memfs.mount.writes")


@dataclass(frozen=True, slots=True)
class Saved:
    """What :func:`memfs.mount.writes.save_orphans` committed from stopped daemons'
    journals, and the journal that still holds what it could not (``""``: none)."""

    saved: tuple[str, ...] = ()
    unsaved: tuple[str, ...] = ()
    kept: str = ""
    journals: int = 0  # stopped daemons' journals replayed and deleted


def keep_copy(directory: Path | None, path: str, data: bytes | bytearray) -> Path | None:
    """A person-readable copy of a file the store refused, under ``directory``."""
    if directory is None:
        return None
    target = directory / path
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = target.with_name(f".{target.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as e:
        log.error("memfs: could not keep a copy of %s in %s: %s", path, target, e)
        return None
    return target


def forget_copy(directory: Path | None, path: str) -> None:
    """The copy of ``path`` is not needed any more: the store has the file."""
    if directory is not None:
        with contextlib.suppress(OSError):
            (directory / path).unlink()


def delete_copies(directory: Path | None, hashes: Collection[str]) -> list[str]:
    """Shred and delete the recovered copies under ``directory`` whose content's SHA-256
    (hex) is one of ``hashes``; the paths deleted. Whole stores rescued there
    (:func:`rescued`) are not copies of one file and are left alone."""
    if directory is None or not directory.is_dir() or not hashes:
        return []
    rescues = set(rescued(directory))
    gone: list[str] = []
    for path in sorted(directory.rglob("*")):
        if path in rescues or path.is_symlink() or not path.is_file():
            continue
        try:
            with path.open("rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            continue
        if digest not in hashes:
            continue
        jr.shred_file(path)
        path.unlink()
        gone.append(str(path))
        for parent in path.parents:  # the directories its store path made, if now empty
            if parent == directory or directory not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break
    return gone


def rescued(directory: Path | None) -> list[Path]:
    """Whole stores saved under ``directory`` when their storage went away under a mount
    (:meth:`memfs.store.base.Store.rescue`): a person's to keep or delete."""
    if directory is None or not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.rescued-*") if p.is_file())


def orphans_holding(
    store: Store, journal_dir: Path, hashes: Collection[str]
) -> list[tuple[str, str]]:
    """``(journal, path)`` for each write a stopped daemon's journal holds pending (to be
    committed by the next mount) whose content's SHA-256 is one of ``hashes``."""
    found: list[tuple[str, str]] = []
    for journal, _fd in jr.orphans(journal_dir):
        try:
            pending = jr.replay(journal, lambda p, rev: base_of(store, p, rev))
        except Exception:
            continue  # unreadable: the next mount sets it aside, and says so
        for rec in pending:
            if hashlib.sha256(rec.data).hexdigest() in hashes and not landed_before(store, rec):
                found.append((str(journal), rec.path))
    return found
