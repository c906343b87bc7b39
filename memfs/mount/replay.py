"""Journal replay: what stopped daemons' journals hold pending for a store, read back
so a mount (or ``memfs redact``, ``memfs status``) can commit it before it serves.

The records themselves are :mod:`memfs.mount.journal`'s; this module decides, for each
pending buffer, the base it was built on and whether the store holds it already."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

from memfs.mount import journal as jr
from memfs.store.base import Act, Store
from memfs.store.rebase import Shape

log = logging.getLogger("memfs.mount.writes")


def base_of(store: Store, path: str, rev: int) -> bytes:
    """The content revision ``rev`` of ``path`` had, for a journaled edit made on it
    (its current content, logged, when that revision is gone)."""
    with contextlib.suppress(Exception):
        data, entry = store.read(path)
        if entry.rev == rev:
            return data
    with contextlib.suppress(Exception):
        return store.read_revision(path, rev)
    log.warning("memfs: revision %d of %s is gone; replaying onto its current content", rev, path)
    with contextlib.suppress(Exception):
        return store.read(path)[0]
    return b""


def landed_before(store: Store, rec: jr.Recovered) -> bool:
    """Whether the store already holds what ``rec`` would commit: its content is the
    file's, or its last landing attempt (journaled before the write) made a revision
    (a killed daemon commits and dies before it notes the commit as done) and held
    every byte of it."""
    return unlanded(store, rec) is None


def unlanded(store: Store, rec: jr.Recovered) -> jr.Recovered | None:
    """What of ``rec`` the store does not hold: None when it holds it all, ``rec``
    itself when its last landing attempt made no revision, and, when that attempt
    made one but writes had come past its bytes while it was in flight (the daemon
    died before it journaled them anew), those bytes, as appends on the revision it
    made."""
    with contextlib.suppress(Exception):
        data, _ = store.read(rec.path)
        if data == rec.data:
            return None
    if rec.landing is None:
        return rec
    target, expected, sha = rec.landing
    try:
        history = store.history(target)
    except Exception:
        return rec
    made = next((r for r in history if r.rev > expected and bytes.fromhex(r.sha256) == sha), None)
    if made is None:
        return rec
    upto = rec.landing_upto
    if upto is None or upto >= len(rec.data) or target != rec.path:
        return None
    landed = base_of(store, target, made.rev)
    moved = len(landed) - upto
    return dataclasses.replace(
        rec,
        data=bytearray(landed) + rec.data[upto:],
        base_rev=made.rev,
        base_size=len(landed),
        created=False,
        whole=False,
        shape=Shape.APPEND,
        landing=None,
        landing_upto=None,
        turns=[(end + moved, author) for end, author in rec.turns if end > upto],
    )


def adopt_orphans(
    store: Store,
    journal_dir: Path,
    adopt: Callable[[jr.Recovered, Act, bool], bool],
    *,
    before_delete: Callable[[], None],
    shred: bool = False,
) -> tuple[list[str], int]:
    """Hand each buffer stopped daemons' journals in ``journal_dir`` hold pending (and
    the store has not got) to ``adopt`` (True: taken), then delete each journal
    (``before_delete`` first makes what was adopted durable; ``shred`` overwrites the
    journal before it goes). A journal that cannot be replayed is set aside, logged.
    ``adopt``'s third argument says whether the buffer replaces one adopted before for
    the same file: yes from the same daemon's journals (a later journal holds all an
    earlier one did), no from another daemon's (two mounts' changes, each to land).
    Returns the paths adopted and the number of journals deleted."""
    found: list[str] = []
    replayed = 0
    daemon_of: dict[str, str] = {}  # file -> the daemon (pid) whose change was adopted
    for path, _fd in jr.orphans(journal_dir):
        daemon = path.name.split("-", 1)[0]
        try:
            pending = jr.replay(path, lambda p, rev: base_of(store, p, rev))
        except Exception:
            kept = jr.quarantine(path)
            log.exception("memfs: cannot replay the journal %s; kept as %s", path, kept)
            continue
        # What one stopped daemon held for one writer is one operation.
        acts: dict[str, Act] = {}
        for held in pending:
            rec = unlanded(store, held)
            if rec is None:
                continue  # committed before the daemon could note it
            act = acts.setdefault(
                rec.author,
                Act(rec.author, detail="saved from the journal of a stopped daemon"),
            )
            replaces = daemon_of.get(rec.path, daemon) == daemon
            if adopt(rec, act, replaces):
                found.append(rec.path)
                daemon_of[rec.path] = daemon
        if shred:
            before_delete()
            jr.shred_file(path)
        path.unlink()
        replayed += 1
    return found, replayed
