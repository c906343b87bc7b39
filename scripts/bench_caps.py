"""What the tree caps cost the mount's write path: the same writes through a mount of a
store without caps (the baseline) and of the same kind of store with caps far above
what the run writes, interleaved, medians of ``--runs``.

Rows: ``--write-files`` small files (a create and a write each: the max_files and
max_tree_bytes checks), and 32 MiB in 128 KiB writes then fsync (one max_tree_bytes
check per write call). The checks read the store's usage at most once a second, or
again after each of the mount's own commits, so the per-call cost is a few additions.

    .venv/bin/python scripts/bench_caps.py [--runs 5] [--write-files 1000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mount import mounted, write_big, write_files

CAPS = "?max_tree_bytes=100000000000&max_files=100000000"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--write-files", type=int, default=1000)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memfs-bench-caps-", dir="/var/tmp"))
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for run in range(args.runs):
            order = [("no caps", ""), ("caps", CAPS)]
            for label, query in order if run % 2 == 0 else order[::-1]:
                db, mnt = work / f"{run}-{label}.db", work / f"{run}-{label}-mnt"
                with mounted(f"sqlite://{db}{query}", mnt):
                    (mnt / "w").mkdir()
                    small = write_files(mnt / "w", args.write_files)
                    big = write_big(mnt / "big.bin", 32)
                times.setdefault((label, "small"), []).append(small)
                times.setdefault((label, "big"), []).append(big)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for row, name in (
        ("small", f"write {args.write_files} files"),
        ("big", "32 MiB, 128 KiB writes"),
    ):
        base = statistics.median(times[("no caps", row)])
        capped = statistics.median(times[("caps", row)])
        print(f"{name:28s} no caps {base:7.3f} s  caps {capped:7.3f} s  ratio {capped / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
