"""Who changes the tree through the mount, and which of their changes are one operation.

A person through the mount is their user and program: ``root (rm)``, with the process
id kept as the operation's detail (``pid 29402``), never in the name. One process's
consecutive changes with no pause longer than :data:`BURST_GAP_S` are one operation, so
``cp -r``, ``rm -rf``, ``tar x``, ``rsync -a`` and ``git checkout`` are one each (and so
is a shell loop of ``echo >>``, the shell being one process). Two processes are never
one operation: a process is told by its id and its start time, so a later process that
is given the same id starts an operation of its own, as does the same process after a
pause.
"""

from __future__ import annotations

import pwd
import threading
import time
from dataclasses import dataclass

from memfs.store.base import Act

# Documented in the README: the longest pause inside one process's operation.
BURST_GAP_S = 2.0
# Processes remembered at once; an older one ends its operation when it is forgotten.
KEPT = 4096
# /proc is read once per process for this long (a pid's program can change by exec).
_TTL_S = 2.0


@dataclass(frozen=True, slots=True)
class Writer:
    """A process that changes the tree: its thread-group id, start time and name."""

    pid: int
    started: int  # clock ticks after boot (/proc/PID/stat), 0 if unknown
    program: str
    user: str

    @property
    def actor(self) -> str:
        return f"{self.user} ({self.program})"


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _read(pid: int, uid: int) -> Writer:
    """The process ``pid`` (a thread's id is mapped to its process)."""
    program, tgid, started = "unknown", pid, 0
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Tgid:"):
                    tgid = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        # The process's name, not the calling thread's (threads may name themselves).
        with open(f"/proc/{tgid}/comm", encoding="utf-8", errors="replace") as f:
            program = f.read().strip() or "unknown"
    except OSError:
        pass
    try:
        with open(f"/proc/{tgid}/stat", encoding="utf-8", errors="replace") as f:
            # Field 22, after the parenthesised name (which may hold spaces).
            started = int(f.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        pass
    return Writer(tgid, started, program, _user(uid))


@dataclass(slots=True)
class _Open:
    writer: Writer
    act: Act
    last: float


class Bursts:
    """The operation each writing process's next change belongs to."""

    def __init__(self, gap: float = BURST_GAP_S) -> None:
        self.gap = gap
        self._open: dict[int, _Open] = {}  # tgid -> its operation going on
        self._seen: dict[int, tuple[float, Writer]] = {}  # pid or tid -> /proc, cached
        self._lock = threading.Lock()

    def writer(self, pid: int, uid: int) -> Writer:
        """Who ``pid`` is; ``pid <= 0`` is the kernel itself (a writeback, a release)."""
        if pid <= 0:
            return Writer(0, 0, "kernel", _user(uid))
        now = time.monotonic()
        with self._lock:
            hit = self._seen.get(pid)
            if hit is not None and now - hit[0] < _TTL_S:
                return hit[1]
        found = _read(pid, uid)
        with self._lock:
            if len(self._seen) > KEPT:
                self._seen.clear()
            self._seen[pid] = (now, found)
        return found

    def act(self, writer: Writer) -> Act:
        """The operation ``writer``'s change now belongs to: its burst's, or a new one."""
        now = time.monotonic()
        with self._lock:
            going = self._open.get(writer.pid)
            if (
                going is not None
                and going.writer.started == writer.started
                and now - going.last <= self.gap
            ):
                going.last = now
                return going.act
            act = Act(writer.actor, detail=f"pid {writer.pid}", label=writer.program)
            if len(self._open) >= KEPT:
                oldest = min(self._open, key=lambda p: self._open[p].last)
                del self._open[oldest]
            self._open[writer.pid] = _Open(writer, act, now)
            return act
