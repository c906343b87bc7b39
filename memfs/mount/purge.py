"""The redaction purge of a live mount (``memfs redact``, through the control socket):
what the daemon keeps on disk of content being redacted goes, and what it holds as a
file's current content is named instead, never dropped."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from memfs.mount.recovery import delete_copies


@dataclass(frozen=True, slots=True)
class Purged:
    """What :meth:`memfs.mount.writes.PendingWrites.purge` did: nothing but name the
    files whose pending content is being redacted (``pending``), or the journal it
    compacted (``dropped`` bytes of records of finished writes went) and the recovered
    copies it deleted."""

    pending: tuple[str, ...] = ()
    journal: str = ""
    dropped: int = 0
    copies: tuple[str, ...] = ()

    def fields(self) -> dict[str, object]:
        return {
            "pending": list(self.pending),
            "journal": self.journal,
            "dropped": self.dropped,
            "copies": list(self.copies),
        }


def purge(
    holding: Collection[str],
    hashes: Collection[str],
    *,
    compact: Callable[[], tuple[str, int]],
    recovery_dir: Path | None,
    check: bool = False,
) -> Purged:
    """``holding``: the paths whose pending content is one of ``hashes`` (a file's
    current content to this mount: named, and nothing is done). Else ``compact`` the
    journal to what is pending (it says the journal and the bytes that went) and delete
    the recovered copies of that content. ``check`` only names them."""
    if holding or check:
        return Purged(pending=tuple(sorted(holding)))
    journal, dropped = compact()
    copies = delete_copies(recovery_dir, set(hashes))
    return Purged(journal=journal, dropped=dropped, copies=tuple(copies))
