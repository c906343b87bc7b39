"""``memfs mount --expire-unused-for SPAN``: the daemon expires unused files on a schedule.

The first run comes :data:`FIRST_RUN_S` after the mount is up, then one every
``min(SPAN / 24, 1 h)``: a file is deleted at most that long after it became due. Each
run is :func:`memfs.history.expire.expire` (authored ``memfs expire (user NAME)``), and
spares files with writes the daemon holds but has not committed. The daemon log gets a
line per run that deleted something; a run that fails is logged with its traceback and
counted in the mount's error count (``memfs status``), and the next run comes as usual:
the thread never dies quietly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memfs.history.author import act_for, author_for
from memfs.store.base import Store

log = logging.getLogger(__name__)

FIRST_RUN_S = 2.0
MAX_INTERVAL_S = 3600.0
MIN_INTERVAL_S = 1.0


def interval_s(unused_for_ns: int) -> float:
    return max(MIN_INTERVAL_S, min(unused_for_ns / 1e9 / 24, MAX_INTERVAL_S))


class Expirer:
    """The schedule's thread. ``pending(path)``: the daemon holds writes to ``path``;
    ``on_error()`` counts a failed run where ``memfs status`` shows it."""

    def __init__(
        self,
        store: Store,
        unused_for_ns: int,
        *,
        pending: Callable[[str], bool],
        on_error: Callable[[], None],
    ) -> None:
        self.store = store
        self.unused_for_ns = unused_for_ns
        self.interval = interval_s(unused_for_ns)
        self._pending = pending
        self._on_error = on_error
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0
        self.errors = 0
        self.author = author_for("expire")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="memfs-expire", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._halt.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        wait = FIRST_RUN_S
        while not self._halt.wait(wait):
            wait = self.interval
            try:
                self.run_once()
            except Exception:
                self.errors += 1
                log.exception("memfs: expiring unused files failed; trying again in %gs", wait)
                try:
                    self._on_error()
                except Exception:
                    log.exception("memfs: could not count the expiry error")

    def run_once(self) -> None:
        from memfs.history.expire import expire

        with self.store.acting(act_for("expire", detail="on the mount's schedule")):
            report = expire(self.store, self.unused_for_ns, author=self.author, keep=self._pending)
        self.runs += 1
        if report.deleted:
            names = ", ".join(f.path for f in report.deleted[:20])
            more = f" and {len(report.deleted) - 20} more" if len(report.deleted) > 20 else ""
            log.warning(
                "memfs: expired %d file(s) unused for %gs: %s%s (they stay in history)",
                len(report.deleted), self.unused_for_ns / 1e9, names, more,
            )  # fmt: skip
        for path, why in report.skipped:
            log.info("memfs: expiry left %s alone: %s", path, why)
