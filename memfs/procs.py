"""Whether the process a record names still runs: for the state records of long-lived
memfs processes (the mirror's in :mod:`memfs.sync.running`).

A pid alone is not enough: a zombie (killed, not yet reaped) counts as dead, and a pid
reused by a newer process after a reboot or a wrap-around is not the one that wrote the
record, so the record's start time must not predate the process. (Linux /proc; elsewhere
a live pid is taken at its word.)
"""

from __future__ import annotations

import os
from pathlib import Path

# btime in /proc/stat has one-second resolution; a process may look up to that much
# younger or older than the clock says.
CLOCK_SLACK_S = 2.0


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    # The state letter follows the parenthesised command name, which may hold spaces.
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def process_start(pid: int) -> float | None:
    """When ``pid`` started, in seconds since the epoch (None if it cannot be told)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[-1].split()[19])
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int | None:
    """User plus system CPU time ``pid`` has used, in clock ticks (None if unknown):
    a process whose count moves is working, one whose count stands still is not."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None


def runs_since(pid: int, recorded: float) -> bool:
    """``pid`` is alive and is the process that was running at ``recorded``."""
    if not pid_alive(pid):
        return False
    born = process_start(pid)
    return born is None or born <= recorded + CLOCK_SLACK_S
