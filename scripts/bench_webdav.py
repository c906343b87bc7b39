"""Benchmark 1,000 small files written and read through rclone: ``memfs webdav`` against
a FUSE mount of a memfs store and a native directory, in the same run.

rclone copies a local tree of ``--files`` small files into each target and back out
(``rclone copy SRC TARGET``, then ``rclone copy TARGET OUT``); the WebDAV target is a
``memfs webdav`` of its own SQLite store, the FUSE target a ``memfs mount`` of another,
the native target a plain directory. Targets are alternated round by round (native,
mount, webdav, webdav, mount, native, ...) so drift in the machine's load hits them
alike, each round into a fresh subdirectory. Reported: the median seconds of each step
per target over ``--rounds`` rounds, and each memfs target's ratio to the native one.

    .venv/bin/python scripts/bench_webdav.py [--files 1000] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memfs.mount import daemon

MEMFS = str(Path(sys.executable).with_name("memfs"))
SERVING = re.compile(r"memfs webdav: serving .* at (http://\S+?)/$")


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        where = root / f"d{i % 20}"
        where.mkdir(parents=True, exist_ok=True)
        (where / f"note{i}.md").write_text(f"# note {i}\n" + "a line of memory\n" * (i % 7))


def serve(store_url: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [MEMFS, "webdav", "--store", store_url, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            hit = SERVING.search(line.strip())
            if hit:
                found.append(hit.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(60) or not found:
        proc.kill()
        raise SystemExit("memfs webdav did not start")
    return proc, found[0]


def rclone(*args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(["rclone", *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("rclone") is None:
        raise SystemExit("rclone is missing: make system-deps installs it")
    work = Path(tempfile.mkdtemp(prefix="memfs-bench-webdav-"))
    os.environ["MEMFS_STATE_DIR"] = str(work / "state")
    source = work / "source"
    make_tree(source, args.files)
    native = work / "native"
    native.mkdir()
    mountpoint = work / "mnt"
    daemon.start(mountpoint, f"sqlite://{work}/mount.db")
    server, url = serve(f"sqlite://{work}/dav.db")
    env = {
        **os.environ,
        "RCLONE_CONFIG": str(work / "rclone.conf"),
        "RCLONE_CONFIG_DAV_TYPE": "webdav",
        "RCLONE_CONFIG_DAV_URL": url + "/",
        "RCLONE_CONFIG_DAV_VENDOR": "other",
    }
    targets = {"native": str(native), "mount": str(mountpoint), "webdav": "dav:"}
    times: dict[str, dict[str, list[float]]] = {t: {"write": [], "read": []} for t in targets}
    try:
        order = list(targets)
        for r in range(args.rounds):
            for name in order if r % 2 == 0 else list(reversed(order)):
                base = targets[name]
                into = f"{base}/round{r}" if name != "webdav" else f"dav:round{r}"
                out = work / f"out-{name}-{r}"
                times[name]["write"].append(rclone("copy", str(source), into, env=env))
                times[name]["read"].append(rclone("copy", into, str(out), env=env))
                if subprocess.run(["diff", "-rq", str(source), str(out)]).returncode != 0:
                    raise SystemExit(f"{name}: what came back differs from what went in")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        daemon.stop(mountpoint)
    result = {
        name: {step: statistics.median(values) for step, values in steps.items()}
        for name, steps in times.items()
    }
    if args.json:
        print(json.dumps({"files": args.files, "rounds": args.rounds, "median_s": result}))
    else:
        print(f"{args.files} files, median of {args.rounds} rounds (seconds; x native)")
        for name, steps in result.items():
            cells = [
                f"{step} {seconds:6.2f} s ({seconds / result['native'][step]:5.1f}x)"
                for step, seconds in steps.items()
            ]
            print(f"  {name:7} " + "   ".join(cells))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
