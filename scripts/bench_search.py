"""Benchmark ``memfs search`` against grep through the mount and grep/rg on the native disk.

One run builds ``--files`` text files (default 10,000; the README's figures use
``--files 100000``) in an SQLite store and the same tree in a plain directory, mounts
the store, and times, medians of ``--runs``, for a rare word (one file), a common word
(every file) and a regular expression (about 1% of files):

* ``memfs search`` as the installed program (``--limit 20``, the default: what a model
  or a person reads), and ``Store.search`` in process (no interpreter start-up);
* ``grep -rl`` through the mount, cold (the first run after mounting, page cache dropped
  when this process may) and warm;
* ``grep -rl`` and ``rg -l`` on the native disk, warm (rg skipped with a note when not
  installed; the Makefile's system packages include it).

grep and rg list every matching file; memfs search ranks and returns the best 20 with
their lines. The machine is shared: read the ratios, not absolute times.

    .venv/bin/python scripts/bench_search.py [--files 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memfs.store import open_store  # noqa: E402

MEMFS = ROOT / ".venv" / "bin" / "memfs"
RARE = "zanzibar"
COMMON = "remembered"
REGEX = r"ticket-\d{3}7x"


def body(i: int) -> bytes:
    lines = [f"file {i}: some remembered detail, line {n} of text for search\n" for n in range(8)]
    if i % 100 == 7:
        lines.append(f"see ticket-{i % 1000:03d}7x for the rest\n")
    if i == 4242:
        lines.append(f"the {RARE} note\n")
    return "".join(lines).encode()


def build(db: Path, native: Path, files: int) -> float:
    start = time.perf_counter()
    with open_store(db) as store:
        for d in range(100):
            store.mkdir(f"d{d:02d}", author="bench")
            (native / f"d{d:02d}").mkdir(parents=True)
        for first in range(0, files, 1000):
            with store.batch():  # one transaction per thousand files, index included
                for i in range(first, min(first + 1000, files)):
                    rel = f"d{i % 100:02d}/f{i:06d}.txt"
                    store.write(rel, body(i), author="bench")
                    (native / rel).write_bytes(body(i))
    return time.perf_counter() - start


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def median(cmd: list[str], runs: int) -> float:
    timed(cmd)  # warm
    return statistics.median(timed(cmd) for _ in range(runs))


def in_process(db: Path, query: str, regex: bool, runs: int) -> float:
    with open_store(db) as store:
        store.search(query, regex=regex)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            store.search(query, regex=regex)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memfs-bench-search-"))
    os.environ["MEMFS_STATE_DIR"] = str(work / "state")
    from memfs.mount import daemon

    db, native, mnt = work / "m.db", work / "native", work / "mnt"
    native.mkdir()
    mnt.mkdir()
    try:
        built = build(db, native, args.files)
        print(f"{args.files} files built in {built:.1f} s (store with its index, and native)")
        rg = shutil.which("rg")
        queries = [("rare word", RARE, False), ("common word", COMMON, False)]
        queries.append(("regex", REGEX, True))
        daemon.start(mnt, f"sqlite://{db}")
        try:
            dropped = drop_caches()
            cold_grep = timed(["grep", "-rl", RARE, str(mnt)])
            cache = "after drop_caches" if dropped else "page-cached only"
            print(f"grep -rl through the mount, cold ({cache}): {cold_grep:.3f} s ({RARE!r})")
            print()
            head = f"{'query':12} {'memfs search':>13} {'in process':>11} {'grep mount':>11}"
            print(head + f" {'grep native':>12} {'rg native':>10}")
            for label, query, regex in queries:
                flag = ["--regex"] if regex else []
                grep_flag = ["-P"] if regex else ["-F"]
                cli = median([str(MEMFS), "search", query, *flag, "--store", str(db)], args.runs)
                lib = in_process(db, query, regex, args.runs)
                through = median(["grep", "-rl", *grep_flag, query, str(mnt)], args.runs)
                direct = median(["grep", "-rl", *grep_flag, query, str(native)], args.runs)
                rg_time = median([rg, "-l", query, str(native)], args.runs) if rg else None
                shown = f"{rg_time:10.3f}" if rg_time is not None else f"{'(no rg)':>10}"
                print(f"{label:12} {cli:13.3f} {lib:11.3f} {through:11.3f} {direct:12.3f} {shown}")
            print("\nseconds, medians; grep through the mount warm")
        finally:
            daemon.stop(mnt, timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
