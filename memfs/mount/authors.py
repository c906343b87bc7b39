"""Who made a change: the writing program's name and process id, read from /proc.

The format ``"{comm} (pid {tgid})"`` is a contract: the agent filters its own changes
by the ``(pid N)`` suffix, so keep it exactly. ``tgid`` is used rather than the thread id
FUSE reports, because a multi-threaded writer is one program.
"""

from __future__ import annotations

import threading
import time

# A pid can be reused by a new program; a short cache keeps the cost of reading /proc off
# every write without attributing a change to a long-gone program.
_TTL_S = 2.0
_cache: dict[int, tuple[float, str]] = {}
_lock = threading.Lock()


def _read(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            comm = f.read().strip() or "unknown"
    except OSError:
        comm = "unknown"
    tgid = pid
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Tgid:"):
                    tgid = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        pass
    return f"{comm} (pid {tgid})"


def author_of(pid: int) -> str:
    """The author string for process (or thread) ``pid``; ``pid <= 0`` means the kernel."""
    if pid <= 0:
        return f"kernel (pid {pid})"
    now = time.monotonic()
    with _lock:
        hit = _cache.get(pid)
        if hit is not None and now - hit[0] < _TTL_S:
            return hit[1]
    author = _read(pid)
    with _lock:
        if len(_cache) > 4096:
            _cache.clear()
        _cache[pid] = (now, author)
    return author
