"""Cross-host latency: from a write's commit through host A's mount to the new content
read through host B's mount, on PostgreSQL (pushed) beside SQLite (polled), same run.

    .venv/bin/python scripts/bench_crosshost.py [--url postgresql://...] [--writes 1000]

"Hosts" are two mount daemons with their own MEMFS_STATE_DIR (as two machines would
have). Each write goes through A's mount and is fsynced (fsync returns once the store
committed it); B's file is then read until it shows the new content. Prints p50, p99
and max in milliseconds per store. Without --url a throwaway PostgreSQL cluster is
started (tests/fixtures/postgres.py) and removed at the end; against a remote server
give its URL (a fresh ?tree=NAME keeps the run apart from real trees).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memfs.mount import daemon


@contextlib.contextmanager
def mounted(url: str, where: Path, name: str) -> Iterator[Path]:
    """A daemon of its own (its own state directory) serving ``url`` at ``where/name``."""
    state = where / f"state-{name}"
    state.mkdir()
    mnt = where / name
    old = os.environ.get("MEMFS_STATE_DIR")
    os.environ["MEMFS_STATE_DIR"] = str(state)
    try:
        daemon.start(mnt, url)
        try:
            yield mnt
        finally:
            daemon.stop(mnt, timeout=30)
    finally:
        if old is None:
            os.environ.pop("MEMFS_STATE_DIR", None)
        else:
            os.environ["MEMFS_STATE_DIR"] = old


def measure(url: str, writes: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="memfs-xhost-") as tmp:
        where = Path(tmp)
        with mounted(url, where, "a") as a, mounted(url, where, "b") as b:
            (a / "probe.md").write_text("start\n")
            deadline = time.monotonic() + 30
            while not (b / "probe.md").exists() or (b / "probe.md").read_text() != "start\n":
                if time.monotonic() > deadline:
                    raise SystemExit("B never saw A's first write")
                time.sleep(0.01)
            out: list[float] = []
            for i in range(writes):
                data = f"write {i} {uuid.uuid4().hex}\n".encode()
                fd = os.open(a / "probe.md", os.O_WRONLY | os.O_TRUNC)
                try:
                    os.write(fd, data)
                    os.fsync(fd)  # returns once the store has committed it
                finally:
                    os.close(fd)
                committed = time.perf_counter()
                while (b / "probe.md").read_bytes() != data:
                    if time.perf_counter() - committed > 10:
                        raise SystemExit(f"write {i} did not reach B within 10 s")
                    time.sleep(0.0002)
                out.append((time.perf_counter() - committed) * 1000)
            return out


def report(name: str, ms: list[float]) -> None:
    ms = sorted(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"{name:<11} p50 {statistics.median(ms):7.2f} ms   p99 {p99:7.2f} ms   max {ms[-1]:7.2f} ms"
        f"   ({len(ms)} writes)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a PostgreSQL store URL (default: a throwaway cluster)")
    parser.add_argument("--writes", type=int, default=1000)
    args = parser.parse_args()
    cluster = None
    url = args.url
    if url is None:
        from tests.fixtures.postgres import PgCluster, find_bindir

        bindir = find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL server binaries; run make system-deps or give --url")
        cluster = PgCluster(bindir)
        url = cluster.url()
    try:
        with tempfile.TemporaryDirectory(prefix="memfs-xhost-db-") as tmp:
            report("sqlite", measure(f"sqlite://{tmp}/m.db", args.writes))
        report("postgresql", measure(url, args.writes))
    finally:
        if cluster is not None:
            cluster.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
