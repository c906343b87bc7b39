"""Measure ``memfs export`` and ``memfs import`` against ``tar`` of the same tree, in the
same run.

    .venv/bin/python scripts/bench_transfer.py [--files 10000] [--dirs 100] [--size 2048]
                                               [--runs 5]

It writes a tree of ``--files`` files of ``--size`` bytes in ``--dirs`` directories,
imports it into an SQLite store once, then, ``--runs`` times interleaved, times as
separate processes (the installed command, as a person runs it):

- export to a .tar and a .tar.gz, against ``tar -cf`` / ``tar -czf`` of the tree;
- import of the .tar and of the directory into a fresh store, against ``tar -xf`` of
  the same .tar into a fresh directory.

It prints the median seconds of each and the ratio memfs/tar. :func:`measure_export`
is the figure ``scripts/bench_history.py`` reports for export.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MEMFS = str(Path(sys.executable).parent / "memfs")


def make_tree(root: Path, files: int, dirs: int, size: int) -> None:
    body = b"x" * size
    for i in range(files):
        d = root / f"d{i % dirs:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"note {i:05d}.md").write_bytes(body)


def timed(argv: list[str], before: Callable[[], None] | None = None) -> float:
    if before is not None:
        before()
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _fresh(*paths: Path) -> Callable[[], None]:
    def clear() -> None:
        for path in paths:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    return clear


def measure_export(tree: Path, db: Path, work: Path, runs: int) -> dict[str, list[float]]:
    """Seconds per run of ``memfs export`` (.tar, .tar.gz) and ``tar`` of ``tree``."""
    out: dict[str, list[float]] = {
        k: [] for k in ("export tar", "tar -cf", "export tgz", "tar -czf")
    }
    tar, tgz = work / "m.tar", work / "m.tgz"
    plain, plain_gz = work / "t.tar", work / "t.tgz"
    for _ in range(runs):
        out["export tar"].append(
            timed([MEMFS, "export", str(tar), "--store", str(db), "-q"], _fresh(tar))
        )
        out["tar -cf"].append(
            timed(["tar", "-cf", str(plain), "-C", str(tree), "."], _fresh(plain))
        )
        out["export tgz"].append(
            timed([MEMFS, "export", str(tgz), "--store", str(db), "-q"], _fresh(tgz))
        )
        out["tar -czf"].append(
            timed(["tar", "-czf", str(plain_gz), "-C", str(tree), "."], _fresh(plain_gz))
        )
    return out


def measure_import(tree: Path, archive: Path, work: Path, runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in ("import tar", "import dir", "tar -xf")}
    db, into = work / "fresh.db", work / "x"

    def fresh_dir() -> None:
        _fresh(into)()
        into.mkdir()

    for _ in range(runs):
        clear = _fresh(db, Path(f"{db}-wal"), Path(f"{db}-shm"))
        out["import tar"].append(
            timed([MEMFS, "import", str(archive), "--store", str(db), "-q"], clear)
        )
        out["import dir"].append(
            timed([MEMFS, "import", str(tree), "--store", str(db), "-q"], clear)
        )
        out["tar -xf"].append(timed(["tar", "-xf", str(archive), "-C", str(into)], fresh_dir))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=int, default=100)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        work = Path(tmp)
        tree, db = work / "tree", work / "store.db"
        make_tree(tree, args.files, args.dirs, args.size)
        subprocess.run([MEMFS, "import", str(tree), "--store", str(db), "-q"], check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        results = measure_export(tree, db, work, args.runs)
        results |= measure_import(tree, work / "m.tar", work, args.runs)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"{args.files:,} files of {args.size:,} bytes in {args.dirs} directories,"
          f" median of {args.runs} runs (seconds)")  # fmt: skip
    rows = [
        ("export .tar", "export tar", "tar -cf"),
        ("export .tar.gz", "export tgz", "tar -czf"),
        ("import .tar", "import tar", "tar -xf"),
        ("import directory", "import dir", "tar -xf"),
    ]
    print(f"{'':18} {'memfs':>8} {'tar':>8} {'memfs/tar':>10}")
    for label, ours, theirs in rows:
        print(f"{label:18} {med[ours]:8.3f} {med[theirs]:8.3f} {med[ours] / med[theirs]:9.1f}x")


if __name__ == "__main__":
    main()
