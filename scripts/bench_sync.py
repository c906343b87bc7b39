"""Latency of ``memfs sync`` each way, and its CPU use when idle.

Runs ``memfs sync DIR --store URL`` as a subprocess (a fresh SQLite store and DIR in a
temporary directory), then:

1. idle: reads the process's utime+stime from /proc/<pid>/stat before and after
   ``--idle`` seconds with nothing happening, and prints the CPU share;
2. person -> store: writes ``--edits`` files in DIR, one every ``--pace`` seconds, round-
   robin over 50 names (so a name is rewritten only every 50 x pace, far longer than
   the debounce: each edit is measured on its own, not behind its predecessor), while a
   thread follows the store's change feed every 2 ms; latency = first sight of the
   content in the store minus the write;
3. store -> DIR: ``store.write`` the same way, while a thread re-reads every 1 ms the
   few files with an edit in flight; latency = first sight on disk minus the write.
   (Not a watchdog observer: watchdog's inotify emitter holds a rename's IN_MOVED_FROM
   up to 0.5 s waiting for its pair, which would measure the observer, not the mirror.)

Prints p50/p90/p99/max per direction. Usage::

    .venv/bin/python scripts/bench_sync.py [--edits 1000] [--pace 0.02] [--idle 10]
        [--tree 1000]   # also: time to fill DIR with that many files; use --idle 31 to
                        # include one 30 s safety-net rescan in the idle figure
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memfs.errors import NotFound
from memfs.store import open_store

NAMES = 50


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of stat(5), counted after the ")" here.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return f"p50 {q[49]:6.1f} ms  p90 {q[89]:6.1f} ms  p99 {q[98]:6.1f} ms  max {ms[-1]:6.1f} ms"


def wait(predicate: object, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > end:
            raise SystemExit(f"bench: timed out waiting for {what}")
        time.sleep(0.01)


def person_to_store(store_url: str, root: Path, edits: int, pace: float) -> list[float]:
    store = open_store(store_url)
    sent: dict[bytes, float] = {}
    seen: dict[bytes, float] = {}
    done = threading.Event()
    since = store.last_seq()

    def follow() -> None:
        nonlocal since
        follower = open_store(store_url)
        try:
            while not done.is_set():
                for change in follower.changes(since=since):
                    since = change.seq
                    if change.kind in ("create", "modify"):
                        try:
                            data = follower.read(change.path)[0]
                        except NotFound:
                            continue
                        seen.setdefault(data, time.perf_counter())
                time.sleep(0.002)
        finally:
            follower.close()

    thread = threading.Thread(target=follow)
    thread.start()
    try:
        start = time.perf_counter()
        for i in range(edits):
            data = f"person edit {i}\n".encode()
            target = start + i * pace
            time.sleep(max(0.0, target - time.perf_counter()))
            path = root / f"p{i % NAMES:02}.md"
            sent[data] = time.perf_counter()
            path.write_bytes(data)
        wait(lambda: all(d in seen for d in sent), 30, "the person's edits in the store")
    finally:
        done.set()
        thread.join()
        store.close()
    return [seen[d] - t for d, t in sent.items()]


def store_to_disk(store_url: str, root: Path, edits: int, pace: float) -> list[float]:
    store = open_store(store_url)
    sent: dict[bytes, float] = {}
    seen: dict[bytes, float] = {}
    inflight: dict[str, bytes] = {}  # file name -> content still expected there
    lock = threading.Lock()
    done = threading.Event()

    def watch() -> None:
        # Polls only the files with an edit in flight (a handful at 20 ms pacing), so
        # resolution is ~1 ms without reading the whole tree.
        while not done.is_set():
            with lock:
                expected = list(inflight.items())
            for name, data in expected:
                try:
                    if (root / name).read_bytes() == data:
                        seen.setdefault(data, time.perf_counter())
                        with lock:
                            if inflight.get(name) == data:
                                del inflight[name]
                except OSError:
                    pass
            time.sleep(0.001)

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        start = time.perf_counter()
        for i in range(edits):
            data = f"agent edit {i}\n".encode()
            name = f"s{i % NAMES:02}.md"
            target = start + i * pace
            time.sleep(max(0.0, target - time.perf_counter()))
            with lock:
                inflight[name] = data
            sent[data] = time.perf_counter()
            store.write(name, data, author="bench agent")
        wait(lambda: all(d in seen for d in sent), 30, "the agent's edits on disk")
    finally:
        done.set()
        thread.join()
        store.close()
    return [seen[d] - t for d, t in sent.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between edits")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU")
    parser.add_argument(
        "--tree", type=int, default=0, help="files in the store before start (first-pass time)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        root = Path(tmp) / "mirror"
        root.mkdir()
        url = f"sqlite://{tmp}/store.db"
        seed = open_store(url)
        for i in range(args.tree):
            seed.write(f"tree/d{i // 100:03}/f{i}.md", b"x" * 500, author="bench", parents=True)
        seed.write("zz-ready.md", b"ready", author="bench")  # sorts last: pulled last
        seed.close()
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", "from memfs.cli import main; main()", "sync", str(root),
             "--store", url, "--state", f"{tmp}/state.json"],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait(lambda: (root / "zz-ready.md").exists(), 300, "the mirror's first pass")
            if args.tree:
                first = time.perf_counter() - started
                print(f"first pass filling DIR with {args.tree} files: {first:.2f} s")
            time.sleep(1.0)  # let start-up work finish before measuring idle
            before = cpu_seconds(proc.pid)
            time.sleep(args.idle)
            idle = (cpu_seconds(proc.pid) - before) / args.idle
            print(f"idle CPU of memfs sync over {args.idle:.0f} s: {idle * 100:.2f}% of one core")

            t0 = cpu_seconds(proc.pid)
            up = person_to_store(url, root, args.edits, args.pace)
            down = store_to_disk(url, root, args.edits, args.pace)
            busy = cpu_seconds(proc.pid) - t0
            print(f"{args.edits} edits each way, one every {args.pace * 1000:.0f} ms:")
            print(f"  person -> store  {percentiles(up)}")
            print(f"  store -> person  {percentiles(down)}")
            print(f"  mirror CPU during both runs: {busy:.2f} s")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
