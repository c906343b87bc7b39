"""Measure the mount daemon's lifecycle: start, stop, crash recovery, cross-mount latency.

    .venv/bin/python scripts/bench_lifecycle.py [--rounds N]

Everything happens under a temporary directory with its own MEMFS_STATE_DIR; every mount
is taken down at the end, also on failure.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMFS = str(Path(sys.executable).with_name("memfs"))


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cli(*args: str) -> None:
    subprocess.run([MEMFS, *args], check=True, capture_output=True, timeout=60)


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except FileNotFoundError:
        return False


def _summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return (
        f"{name:<44} median {statistics.median(ms):7.1f} ms   max {ms[-1]:7.1f} ms   (n={len(ms)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memfs-bench-life-") as tmp:
        base = Path(tmp)
        os.environ["MEMFS_STATE_DIR"] = str(base / "state")
        sys.path.insert(0, str(ROOT))
        from memfs import host
        from memfs.mount import daemon, state
        from memfs.mount.ops import MountOptions

        url = f"sqlite://{base / 'store.db'}"
        a, b = base / "a", base / "b"
        try:
            starts, stops = [], []
            for _ in range(args.rounds):
                starts.append(_timed(lambda: _cli("mount", str(a), "--store", url)))
                stops.append(_timed(lambda: _cli("umount", str(a))))
            print(_summary("memfs mount (CLI, until the mount answers)", starts))
            print(_summary("memfs umount (CLI, until the daemon exits)", stops))

            recoveries = []
            for _ in range(args.rounds):
                rec = daemon.start(a, url, options=MountOptions(auto_unmount=False))
                os.kill(rec.pid, signal.SIGKILL)
                while state.pid_alive(rec.pid):
                    daemon.reap(rec.pid)
                    time.sleep(0.005)
                assert host.is_dead(a)
                recoveries.append(_timed(lambda: daemon.start(a, url)))
                daemon.stop(a)
            print(_summary("remount over a dead mount (kill -9 before)", recoveries))

            daemon.start(a, url)
            daemon.start(b, url)
            latencies = []
            for i in range(args.rounds * 5):
                data = f"round {i}\n".encode() * (i + 1)
                fd = os.open(a / "shared.md", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, data)
                os.fsync(fd)
                os.close(fd)
                t0 = time.perf_counter()
                deadline = t0 + 10
                while not _holds(b / "shared.md", data):
                    if time.perf_counter() > deadline:
                        raise SystemExit("the second mount never saw the write")
                    time.sleep(0.002)
                latencies.append(time.perf_counter() - t0)
            opts = MountOptions()
            print(_summary("fsynced write on mount A visible on mount B", latencies))
            print(
                f"  (documented bound: poll_interval {opts.poll_interval} s + "
                f"commit_quiet_period {opts.commit_quiet_period} s)"
            )
        finally:
            for mp in (a, b):
                if host.mount_entry(mp) is not None:
                    try:
                        daemon.stop(mp)
                    except Exception:
                        host.fusermount(mp, lazy=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
