"""Expiry: delete the files nobody has used for a while.

A file's last use is its newest revision's time or the model's last read of it through
the memory tool (:meth:`Store.mark_used`), whichever is later (store invariant 8). Reads
by people or tools through the mount do not count: a ``grep -r`` would keep everything
alive forever, and the warm read path never reaches the daemon to be counted.

:func:`expire` deletes every file unused for ``unused_for_ns`` as an ordinary delete
authored ``memfs expire (user NAME)``, so the deletes show in the log, reach live
mounts and mirrors, and ``memfs restore`` brings a file back from its retained history.
Each delete names the revision it judged (``expected_rev``): a file written after it
was found unused is left alone and reported as skipped. Directories the deletes leave
empty are removed too (only those: an empty directory someone made stays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memfs.errors import Conflict, DirectoryNotEmpty, NotADirectory, NotFound
from memfs.history.author import author_for
from memfs.paths import parent_of
from memfs.store.base import Store


@dataclass(frozen=True, slots=True)
class ExpiredFile:
    path: str
    rev: int
    size: int
    mtime_ns: int


@dataclass(slots=True)
class ExpireReport:
    """What one expiry did (or, with ``dry_run``, would do)."""

    cutoff_ns: int  # files last used before this moment were expired
    dry_run: bool
    deleted: list[ExpiredFile] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # directories left empty, removed
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


def expire(
    store: Store,
    unused_for_ns: int,
    *,
    author: str | None = None,
    dry_run: bool = False,
    keep: Callable[[str], bool] | None = None,
) -> ExpireReport:
    """Delete the files of ``store`` unused for ``unused_for_ns`` (see the module).

    ``author`` defaults to ``memfs expire (user NAME)``; ``keep(path)`` true spares a
    file (the mount daemon spares files with writes it has not committed yet).
    """
    if unused_for_ns <= 0:
        raise ValueError(f"unused_for_ns must be positive, got {unused_for_ns}")
    who = author or author_for("expire")
    report = ExpireReport(store.clock() - unused_for_ns, dry_run)
    for entry in store.unused(report.cutoff_ns):
        if keep is not None and keep(entry.path):
            report.skipped.append((entry.path, "has writes not saved yet"))
            continue
        if not dry_run:
            try:
                store.delete(entry.path, author=who, expected_rev=entry.rev)
            except Conflict:
                report.skipped.append((entry.path, "changed since it was found unused"))
                continue
            except NotFound:
                report.skipped.append((entry.path, "gone already"))
                continue
        report.deleted.append(ExpiredFile(entry.path, entry.rev, entry.size, entry.mtime_ns))
    gone = {f.path for f in report.deleted}
    report.dirs = _emptied(store, gone, who, dry_run)
    return report


def _emptied(store: Store, gone: set[str], author: str, dry_run: bool) -> list[str]:
    """Remove (or, dry, name) the directories that held only what ``gone`` names,
    deepest first."""
    parents: set[str] = set()
    for path in gone:
        while "/" in path:
            path = parent_of(path)
            parents.add(path)
    removed: list[str] = []
    for directory in sorted(parents, key=lambda p: (-p.count("/"), p)):
        try:
            entry = store.stat(directory)
            children = store.listdir(directory)
        except (NotFound, NotADirectory):
            continue  # removed or replaced by a file meanwhile
        if not entry.is_dir or any(c.path not in gone for c in children):
            continue
        if not dry_run:
            try:
                store.delete(directory, author=author, expected_rev=entry.rev)
            except (DirectoryNotEmpty, Conflict, NotFound):
                continue  # something arrived meanwhile: it stays
        gone.add(directory)
        removed.append(directory)
    return removed
