"""What a person must hear about a mount's write path (``memfs status``): files not in
the store yet, conflict copies made, unexpected errors, the store away or gone; and the
log lines that say what a landing did."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memfs.errors import CapExceeded, MemfsError
from memfs.store.rebase import Landing

log = logging.getLogger("memfs.mount.writes")

# Conflict copies named in `memfs status` (the newest; each is also in the log).
CONFLICTS_SHOWN = 20


@dataclass(frozen=True, slots=True)
class Health:
    """What a person must hear about: files not in the store yet, and unexpected errors."""

    unsaved: tuple[str, ...] = ()
    errors: int = 0
    recovery_dir: str = ""
    # The store cannot be reached (a server away): why, and since when (epoch seconds).
    store_problem: str = ""
    store_down_since: float = 0.0
    # Writes that met another writer's change to the same lines: "PATH -> COPY", newest
    # last (the copy holds the version that did not keep PATH: this mount's for an edit,
    # the other writer's for a save of the whole file).
    conflicts: tuple[str, ...] = ()
    # The store's storage went away under the mount (its file deleted, replaced, moved;
    # a tree dropped): what happened and where memfs saved what it held. Writes answer
    # EIO from then on.
    lost: str = ""


def remedy(exc: BaseException) -> str:
    """What a person can do about a refused commit, for the log line."""
    if isinstance(exc, CapExceeded):
        return (
            f" (once there is room: the store is at its {exc.cap} cap of {exc.limit};"
            f" delete files or raise the cap with ?{exc.cap}=N in the store URL)"
        )
    return ""


class HealthBoard:
    """The health as it changes; each change that shows is handed to ``on_health``."""

    def __init__(
        self, recovery_dir: str, on_health: Callable[[Health], None] | None = None
    ) -> None:
        self._lock = threading.RLock()
        self._recovery_dir = recovery_dir
        self._on_health = on_health
        self.errors = 0
        self.unsaved: set[str] = set()
        self._conflicts: list[str] = []
        self._store_problem: tuple[str, float] = ("", 0.0)
        self.lost = ""
        self._health = Health()

    @property
    def health(self) -> Health:
        return self._health

    @property
    def store_away(self) -> bool:
        return bool(self._store_problem[0])

    def count_error(self) -> None:
        with self._lock:
            self.errors += 1
            self.publish()

    def store_reachable(self, problem: str | None) -> None:
        with self._lock:
            if problem is None:
                self._store_problem = ("", 0.0)
            elif not self._store_problem[0]:
                self._store_problem = (problem, time.time())
            self.publish()

    def conflicted(self, path: str, copy: str) -> None:
        with self._lock:
            self._conflicts.append(f"{path} -> {copy}")
            del self._conflicts[:-CONFLICTS_SHOWN]

    def failed(self, path: str, exc: BaseException, copy: object | None, first: bool) -> None:
        """A commit of ``path`` failed (``first``: for the first time; ``copy``: where
        its data is kept, if anywhere)."""
        with self._lock:
            self.unsaved.add(path)
            if not isinstance(exc, MemfsError):
                # Not a refusal the store explained: a bug or an environment problem. The
                # traceback goes to the log and the count to `memfs status`.
                self.errors += 1
                log.error("memfs: unexpected error saving %s", path, exc_info=exc)
            if first:
                log.error(
                    "memfs: could not save %s (%s): the data is kept%s and will be retried%s",
                    path,
                    exc,
                    f" in {copy}" if copy else "",
                    remedy(exc),
                )
            self.publish()

    def landed(
        self, path: str, author: str, landing: Landing, on_stale: Callable[[str], None]
    ) -> None:
        """Say what a commit that met another writer's change did, and let the kernel
        know the content it holds for the path is not what was committed."""
        if landing.outcome == "written":
            return
        on_stale(path)
        if landing.copy is not None and landing.outcome in ("conflict", "displaced"):
            on_stale(landing.copy)
            self.conflicted(path, landing.copy)
        if landing.outcome == "conflict" and landing.copy is not None:
            log.warning(
                "memfs: conflict: %s changed the same bytes of %s as another writer"
                " (revision %s); theirs stays, %s's version is kept as %s",
                author,
                path,
                landing.over,
                author,
                landing.copy,
            )
        elif landing.outcome == "displaced" and landing.copy is not None:
            log.warning(
                "memfs: conflict: %s's save of %s changed the lines another writer changed"
                " since it read the file; the save stands, and the revision %s it replaced"
                " is kept as %s",
                author,
                path,
                landing.over,
                landing.copy,
            )
        elif landing.outcome == "merged":
            log.info(
                "memfs: %s's save of %s was merged with revision %s by another writer",
                author,
                path,
                landing.over,
            )
        elif landing.outcome == "replaced":
            log.warning(
                "memfs: %s's save of %s replaced revision %s by another writer, which"
                " stays in the history",
                author,
                path,
                landing.over,
            )
        elif landing.outcome == "recreated":
            log.warning(
                "memfs: %s was deleted by another writer while %s was writing it; its"
                " writes are saved as the file again",
                path,
                author,
            )
        else:
            log.info(
                "memfs: %s's change to %s was rebased onto revision %s",
                author,
                path,
                landing.over,
            )

    def publish(self) -> None:
        with self._lock:
            problem, down_since = self._store_problem
            health = Health(
                unsaved=tuple(sorted(self.unsaved)),
                errors=self.errors,
                recovery_dir=self._recovery_dir,
                store_problem=problem,
                store_down_since=down_since,
                conflicts=tuple(self._conflicts),
                lost=self.lost,
            )
            if health == self._health:
                return
            self._health = health
            if self._on_health is not None:
                try:
                    self._on_health(health)
                except Exception:
                    log.exception("memfs: could not report the mount's health")
