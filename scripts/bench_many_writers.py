"""Acknowledged appends per second, 1, 2 and 4 writers across two mounts of one store.

    .venv/bin/python scripts/bench_many_writers.py [--seconds 5] [--runs 3] [--url postgresql://...]
        [--sqlite-only | --postgres-only] [--no-savers] [--rename-savers]

Each writer is a process appending one unique line at a time to one shared file the way
``echo line >> f`` does (open with O_APPEND, write, close), as fast as it can, for
``--seconds``. Layouts: one writer on one mount (the baseline), two writers on two
mounts (one each), four writers on two mounts (two each). A write is acknowledged when
its ``write(2)`` returned. After each run the file is read from the store once every
mount has committed, and every acknowledged line must be there exactly once, in its
writer's order: the script prints ``lost=N`` (must be 0: a line kept in a conflict copy
is not lost), ``dup=N`` and the number of conflict copies made. Two mounts are two
daemons with their own state directories (two "hosts"). SQLite runs first; PostgreSQL
on a throwaway local cluster unless ``--url``. Prints the median rate of the runs and
each layout's rate over the baseline's.

The last row is whole-file saves: two writers on two mounts each read the shared index,
add their line at the end and write the whole file back (``open(f, "w")``: a truncate
and a write, as every editor and agent tool saves), as fast as they can. Each save
lands against the revision its writer read and merges with what the other saved
meanwhile: ``lost`` counts acknowledged lines missing and ``dup`` lines doubled (both
must be 0), ``conflicts`` the copies made, and the rate is saves/s against the single
appender's appends/s. ``--rename-savers`` adds the same saves made through a temporary
file renamed over the index, as editors and atomic writers save.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memfs.mount import daemon
from memfs.store import open_store

WRITER = """
import os, sys, time
path, tag, seconds, ack = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
end = time.monotonic() + seconds
n = 0
with open(ack, "w") as out:
    while time.monotonic() < end:
        n += 1
        line = f"{tag}-{n}\\n".encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        out.write(f"{tag}-{n}\\n")
"""

# A saver reads the index and writes it back whole with its line added: in place
# (open(f, "w")), or with "rename" (--rename-savers) as editors and atomic writers save,
# to a temporary file beside it renamed over it.
SAVER = """
import os, sys, time
path, tag, seconds, ack = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
rename = sys.argv[5:] == ["rename"]
target = f"{path}.{tag}.tmp" if rename else path
end = time.monotonic() + seconds
n = 0
with open(ack, "w") as out:
    while time.monotonic() < end:
        n += 1
        with open(path) as f:
            text = f.read()
        with open(target, "w") as f:
            f.write(text + f"{tag}-{n}\\n")
        if rename:
            os.replace(target, path)
        out.write(f"{tag}-{n}\\n")
"""

SAVES = "2 savers, 2 mounts"
RENAMES = "2 savers by rename"

LAYOUTS = {
    "1 writer, 1 mount": (1, 0),
    "2 writers, 2 mounts": (1, 1),
    "4 writers, 2 mounts": (2, 2),
}


@contextlib.contextmanager
def mounted(url: str, where: Path, name: str) -> Iterator[Path]:
    state = where / f"state-{name}"
    state.mkdir(exist_ok=True)
    mnt = where / name
    old = os.environ.get("MEMFS_STATE_DIR")
    os.environ["MEMFS_STATE_DIR"] = str(state)
    try:
        daemon.start(mnt, url)
    finally:
        if old is None:
            os.environ.pop("MEMFS_STATE_DIR", None)
        else:
            os.environ["MEMFS_STATE_DIR"] = old
    try:
        yield mnt
    finally:
        os.environ["MEMFS_STATE_DIR"] = str(state)
        try:
            daemon.stop(mnt, timeout=60)
        finally:
            if old is None:
                os.environ.pop("MEMFS_STATE_DIR", None)
            else:
                os.environ["MEMFS_STATE_DIR"] = old


def one_run(
    url: str,
    a: Path,
    b: Path,
    per_mount: tuple[int, int],
    seconds: float,
    run: int,
    program: str = WRITER,
    how: str = "",
) -> dict[str, float]:
    # A name of its own for each row and run: the savers' row once reused the two
    # appenders' file, 100,000 lines long, and measured saves of a 2 MB file (520
    # saves/s against 3,700-4,400 for the fresh file it means to measure).
    kind = "log" if program is WRITER else ("renamed" if how else "save")
    name = f"{kind}-{run}-{per_mount[0]}{per_mount[1]}.md"
    (a / name).write_text("")
    with open_store(url) as store:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(Exception):
                if store.read(name)[0] == b"":
                    break
            if time.monotonic() > deadline:
                raise SystemExit("the file never reached the store")
            time.sleep(0.01)
        with tempfile.TemporaryDirectory(prefix="memfs-acks-") as acks:
            procs = []
            tags = []
            for mount, count in ((a, per_mount[0]), (b, per_mount[1])):
                for i in range(count):
                    tag = f"{mount.name}{i}"
                    tags.append(tag)
                    procs.append(
                        subprocess.Popen(
                            [
                                sys.executable,
                                "-c",
                                program,
                                str(mount / name),
                                tag,
                                str(seconds),
                                str(Path(acks) / tag),
                                *([how] if how else []),
                            ],
                        )
                    )
            for p in procs:
                if p.wait(timeout=seconds + 120) != 0:
                    raise SystemExit("a writer failed")
            acked = {t: (Path(acks) / t).read_text().split() for t in tags}
        total = sum(len(v) for v in acked.values())
        want = {tok for v in acked.values() for tok in v}
        deadline = time.monotonic() + 60
        while True:
            lines = store.read(name)[0].decode().split()
            # A save that would not merge is kept whole as a conflict copy and reported:
            # its lines are there, not lost (the copies are counted apart).
            copies = [
                e.path for e in store.walk() if ".conflict-" in e.path and name[:-3] in e.path
            ]
            kept = {tok for c in copies for tok in store.read(c)[0].decode().split()}
            if want <= set(lines) | kept or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        gone = sorted(want - set(lines) - kept)
        lost = len(gone)
        if gone:
            print(f"  {name}: acknowledged, not in the store: {' '.join(gone[:10])}", flush=True)
        dup = len(lines) - len(set(lines))
        ordered = all([x for x in lines if x.rsplit("-", 1)[0] == t] == v for t, v in acked.items())
    return {
        "rate": total / seconds,
        "lost": lost,
        "dup": dup,
        "ordered": float(ordered),
        "copies": len(copies),
    }


def bench(
    url: str, seconds: float, runs: int, label: str, *, savers: bool = True, renames: bool = False
) -> None:
    with tempfile.TemporaryDirectory(prefix="memfs-many-") as tmp:
        where = Path(tmp)
        with mounted(url, where, "a") as a, mounted(url, where, "b") as b:
            base = None
            for layout, per_mount in LAYOUTS.items():
                results = [one_run(url, a, b, per_mount, seconds, r) for r in range(runs)]
                base = _report(label, layout, "appends/s", results, base)
            if savers:
                results = [one_run(url, a, b, (1, 1), seconds, r, SAVER) for r in range(runs)]
                _report(label, SAVES, "saves/s  ", results, base)
            if renames:
                results = [
                    one_run(url, a, b, (1, 1), seconds, r, SAVER, "rename") for r in range(runs)
                ]
                _report(label, RENAMES, "saves/s  ", results, base)


def _report(
    label: str, row: str, unit: str, results: list[dict[str, float]], base: float | None
) -> float:
    """Print one row (its rate against ``base``, the first row's; what was lost, doubled
    or copied aside) and return the base for the rows after it."""
    if len(results) > 3:
        rates = sorted(round(r["rate"]) for r in results)
        print(f"{label:<10} {row:<20} runs: {rates}", flush=True)
    rate = statistics.median(r["rate"] for r in results)
    base = base or rate
    lost = sum(int(r["lost"]) for r in results)
    dup = sum(int(r["dup"]) for r in results)
    copies = sum(int(r["copies"]) for r in results)
    ordered = all(r["ordered"] for r in results)
    print(
        f"{label:<10} {row:<20} {rate:8.0f} {unit}  x{rate / base:4.2f}"
        f"  lost={lost} dup={dup} conflicts={copies}"
        f"{'' if ordered else '  OUT OF ORDER'}",
        flush=True,
    )
    return base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a PostgreSQL store URL (default: a throwaway cluster)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=3)
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--sqlite-only", action="store_true")
    only.add_argument("--postgres-only", action="store_true")
    parser.add_argument(
        "--no-savers", action="store_true", help="only the appenders' rows (more runs cheaper)"
    )
    parser.add_argument(
        "--rename-savers",
        action="store_true",
        help="add a row of two savers saving through a temporary file and a rename",
    )
    args = parser.parse_args()

    def run(url: str, label: str) -> None:
        bench(
            url,
            args.seconds,
            args.runs,
            label,
            savers=not args.no_savers,
            renames=args.rename_savers,
        )

    if not args.postgres_only:
        with tempfile.TemporaryDirectory(prefix="memfs-many-db-") as tmp:
            run(f"sqlite://{tmp}/m.db", "sqlite")
    if args.sqlite_only:
        return 0
    cluster = None
    url = args.url
    if url is None:
        from tests.fixtures.postgres import PgCluster, find_bindir

        bindir = find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL server binaries; run make system-deps or give --url")
        cluster = PgCluster(bindir)
        url = cluster.url("bench-many-writers")
    try:
        run(url, "postgresql")
    finally:
        if cluster is not None:
            cluster.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
