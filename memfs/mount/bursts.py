"""Who changes the tree through the mount, and which of their changes are one operation.

A person through the mount is their user and program: ``root (rm)``, with the process
id kept as the operation's detail (``pid 29402``), never in the name. One program run's
consecutive changes with no pause longer than :data:`BURST_GAP_S` are one operation, so
``cp -r``, ``rm -rf``, ``tar x``, ``rsync -a`` and ``git checkout`` are one each (and so
is a shell loop of ``echo >>``, the shell being one process). A run is its process and
the processes it forks that keep its name and its process group (rsync's generator and
receiver, git's helpers); two other processes are never one operation. A process is
told by its id and start time, so a later process given the same id starts an
operation of its own, as does the same run after a pause.

A coding agent (Claude Code: :func:`memfs.actors.agent_of`) is named ``claude-code
(alice)``, and its session is one operation: every change made by its process, or by
the shell its Bash tool starts and the command that shell runs (``echo >>
MEMORY.md``), with pauses up to
:data:`AGENT_GAP_S` (a model thinks and works for minutes between two memory writes),
so ``memfs undo`` takes back what one session wrote, whole.
"""

from __future__ import annotations

import pwd
import threading
import time
from dataclasses import dataclass

from memfs.actors import agent_of, mount_actor
from memfs.store.base import Act

# Documented in the README: the longest pause inside one process's operation.
BURST_GAP_S = 2.0
# The longest pause inside one agent session's operation (see the module docstring).
AGENT_GAP_S = 1800.0
# How far up its parents a process is looked at for the agent that started it: the
# agent's Bash tool runs a shell (a child) that runs a command (a grandchild). Deeper
# descendants (a build, a test suite run by that command) are programs of their own.
_AGENT_DEPTH = 2
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
    group: int = 0  # the process group (a program run and the helpers it forks)
    group_started: int = 0  # when the group's leader started (0: unknown or gone)
    # The agent this process is or was started by ("claude-code"), its pid and start.
    agent: str | None = None
    agent_pid: int = 0
    agent_started: int = 0

    @property
    def run(self) -> tuple[int, int, str]:
        """What one operation is kept per: an agent's session, else a program's run in
        its process group."""
        if self.agent is not None:
            return (self.agent_pid, self.agent_started, self.agent)
        if self.group <= 0:
            return (self.pid, self.started, self.program)
        return (-self.group, self.group_started, self.program)

    @property
    def actor(self) -> str:
        return mount_actor(self.user, self.program, self.agent)


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
    group, group_started = 0, 0
    try:
        with open(f"/proc/{tgid}/stat", encoding="utf-8", errors="replace") as f:
            # After the parenthesised name (which may hold spaces): field 5 is the
            # process group, field 22 the start time.
            fields = f.read().rpartition(")")[2].split()
            group, started = int(fields[2]), int(fields[19])
    except (OSError, ValueError, IndexError):
        pass
    if group > 0:
        group_started = started if group == tgid else _started(group)
    agent = _agent(tgid, program, started)
    if agent is not None:
        return Writer(
            tgid, started, program, _user(uid), group, group_started, agent[0], agent[1], agent[2]
        )
    return Writer(tgid, started, program, _user(uid), group, group_started)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0")]
    except OSError:
        return []


def _agent(pid: int, program: str, started: int) -> tuple[str, int, int] | None:
    """``(agent, its pid, its start)`` when ``pid`` is an agent or was started by one."""
    for depth in range(_AGENT_DEPTH + 1):
        found = agent_of(program, _cmdline(pid) if program in ("node", "nodejs", "bun") else ())
        if found is not None:
            return found, pid, started
        if depth == _AGENT_DEPTH:
            break
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                head, _, tail = f.read().rpartition(")")
            pid = int(tail.split()[1])  # field 4: the parent
        except (OSError, ValueError, IndexError):
            return None
        if pid <= 1:
            return None
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                head, _, tail = f.read().rpartition(")")
            program, started = head.partition("(")[2], int(tail.split()[19])
        except (OSError, ValueError, IndexError):
            return None
    return None


def _started(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return int(f.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(slots=True)
class _Open:
    writer: Writer
    act: Act
    last: float


class Bursts:
    """The operation each writing process's next change belongs to."""

    def __init__(self, gap: float = BURST_GAP_S) -> None:
        self.gap = gap
        self._open: dict[tuple[int, int, str], _Open] = {}  # a run -> its operation
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
            going = self._open.get(writer.run)
            gap = self.gap if writer.agent is None else max(self.gap, AGENT_GAP_S)
            if going is not None and now - going.last <= gap:
                going.last = now
                return going.act
            if writer.agent is not None:
                act = Act(writer.actor, detail=f"pid {writer.agent_pid}", label=writer.agent)
            else:
                act = Act(writer.actor, detail=f"pid {writer.pid}", label=writer.program)
            if len(self._open) >= KEPT:
                oldest = min(self._open, key=lambda r: self._open[r].last)
                del self._open[oldest]
            self._open[writer.run] = _Open(writer, act, now)
            return act
