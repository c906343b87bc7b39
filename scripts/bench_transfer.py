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

    .venv/bin/python scripts/bench_transfer.py --entries 200000 [--runs 3]
                                               [--against /path/to/older/checkout]

measures instead the import of one .tar.gz of ``--entries`` entries (small files of
about 200 bytes, each different, a thousand to a directory), made in memory: the
median seconds and the peak RSS of ``memfs import`` into a fresh store. With
``--against``, the memfs package of that checkout (a ``git worktree`` or
``git archive`` of an older commit) is timed in the same runs, interleaved, for a
before/after on a loaded machine.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
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


def make_archive(path: Path, entries: int) -> None:
    """A .tar.gz of ``entries`` entries: a directory per thousand, the rest files."""
    dirs = max(1, entries // 1000)
    pad = b"x" * 180
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for d in range(dirs):
            info = tarfile.TarInfo(f"d{d:04d}")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1_700_000_000
            tar.addfile(info)
        for i in range(entries - dirs):
            body = b"note %d\n" % i + pad
            info = tarfile.TarInfo(f"d{i % dirs:04d}/note {i:07d}.md")
            info.size, info.mode, info.mtime = len(body), 0o644, 1_700_000_000
            tar.addfile(info, io.BytesIO(body))


def timed_rss(argv: list[str], env: dict[str, str] | None, cwd: Path) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{argv[0]} exited with {child.returncode}")
    return seconds, usage.ru_maxrss * 1024


def measure_archive_import(entries: int, runs: int, against: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        work = Path(tmp)
        archive, db = work / "big.tgz", work / "fresh.db"
        make_archive(archive, entries)
        # Run from the temporary directory: a checkout in the working directory would
        # come first on sys.path.
        code = "import sys; from memfs.cli import main; sys.argv[0] = 'memfs'; main()"
        argv = [sys.executable, "-c", code, "import", str(archive), "--store", str(db), "-q"]
        variants: dict[str, dict[str, str] | None] = {"this checkout": None}
        if against is not None:
            # PYTHONPATH before the editable install's finder: that checkout's memfs.
            variants = {f"{against}": {**os.environ, "PYTHONPATH": str(against)}, **variants}
        seconds: dict[str, list[float]] = {k: [] for k in variants}
        rss: dict[str, list[int]] = {k: [] for k in variants}
        for _ in range(runs):
            for name, env in variants.items():
                _fresh(db, Path(f"{db}-wal"), Path(f"{db}-shm"))()
                took, peak = timed_rss(argv, env, work)
                seconds[name].append(took)
                rss[name].append(peak)
        print(f"import of a .tar.gz of {entries:,} entries ({archive.stat().st_size:,} bytes),"
              f" median of {runs} runs")  # fmt: skip
        print(f"{'memfs':40} {'seconds':>8} {'peak RSS MB':>12}")
        for name in variants:
            med_rss = statistics.median(rss[name]) / 1e6
            print(f"{name:40} {statistics.median(seconds[name]):8.1f} {med_rss:12.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=int, default=100)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--entries", type=int, help="time the import of a tar.gz of this many")
    parser.add_argument("--against", type=Path, help="with --entries: an older checkout too")
    args = parser.parse_args()
    if args.entries is not None:
        measure_archive_import(args.entries, args.runs, args.against)
        return
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
