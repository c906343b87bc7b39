"""Measure a store's hot-path operations against plain file I/O in the same run.

    .venv/bin/python scripts/bench_store.py [--url URL] [--files 1000] [--threads 4] [--scale 1]
    .venv/bin/python scripts/bench_store.py --postgres   # a throwaway cluster beside SQLite

With a server URL (``--url postgresql://...``, or ``--postgres`` for a throwaway cluster
from tests/fixtures/postgres.py) the SQLite store is measured first in the same run, so
the two backends compare on one machine at one moment.

For each of stat, read, write, create, rename, atomic save and listdir it prints the
median ops/s of 5 rounds for the store and for the same operation on a temporary
directory (``os.stat``, open+read, write-to-temp+rename, an exclusive create of a new
name and its write, ``os.rename`` to another name and back on the next call, write a
temp file + rename it over the file, ``scandir`` with a stat per entry), and the ratio.
Plain writes are not fsynced, like the SQLite store's default ``synchronous=normal``
commits.

With a server it then runs the memory tool handler's mixed workload through a mount
of a new SQLite store and through a mount of a new tree of the server, both at once,
alternating (``--mount-reps``, medians): the comparison that counts for agents on a
team's server. Needs FUSE (skipped, saying why, without it).

With ``--threads N`` it also compares N threads calling ``stat`` through the store (one
connection per thread) with N threads sharing one connection behind a lock, the other
design the SQLite backend could have used.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from memfs.store import Store, open_store

ROUNDS = 5


def rate(op: Callable[[int], object], count: int) -> float:
    """Median ops/s of ROUNDS rounds of ``count`` calls."""
    results = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for i in range(count):
            op(i)
        results.append(count / (time.perf_counter() - start))
    return statistics.median(results)


def populate(store: Store, plain: Path, files: int, dirs: int) -> list[str]:
    paths = [f"d{i % dirs}/f{i}.md" for i in range(files)]
    body = b"x" * 1024
    for d in range(dirs):
        store.mkdir(f"d{d}", author="bench", exist_ok=True)
        (plain / f"d{d}").mkdir(exist_ok=True)
    for path in paths:
        store.write(path, body, author="bench")
        (plain / path).write_bytes(body)
    return paths


def plain_write(root: Path, path: str, data: bytes) -> None:
    tmp = root / (path + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, root / path)


def plain_listdir(directory: Path) -> list[os.stat_result]:
    with os.scandir(directory) as it:
        return [entry.stat(follow_symlinks=False) for entry in sorted(it, key=lambda e: e.name)]


def toggler(rename: Callable[[str, str], object], order: list[str]) -> Callable[[int], object]:
    """An op renaming ``order[i]`` to a ``.moved`` name, or back if it is there already."""
    names = {p: p for p in order}

    def op(i: int) -> object:
        path = order[i]
        new = path + ".moved" if names[path] == path else path
        result = rename(names[path], new)
        names[path] = new
        return result

    return op


def creator(create: Callable[[str], object], dirs: int) -> Callable[[int], object]:
    """An op creating a name never used before (the model's ``create``), in turn in
    each directory."""
    made = itertools.count()

    def op(i: int) -> object:
        return create(f"d{i % dirs}/new-{next(made)}.md")

    return op


def plain_create(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)


def store_save(store: Store, path: str, data: bytes) -> None:
    store.write(path + ".tmp", data, author="bench")
    store.rename(path + ".tmp", path, author="bench", overwrite=True)


def compare(store: Store, plain: Path, paths: list[str], dirs: int, scale: float) -> None:
    rng = random.Random(7)

    def n(count: int) -> int:
        return max(1, int(count * scale))

    order = [rng.choice(paths) for _ in range(2000)]
    body = b"y" * 1024
    cases: list[tuple[str, int, Callable[[int], object], Callable[[int], object]]] = [
        ("stat", n(2000), lambda i: store.stat(order[i]), lambda i: os.stat(plain / order[i])),
        (
            "read 1 KiB",
            n(2000),
            lambda i: store.read(order[i]),
            lambda i: (plain / order[i]).read_bytes(),
        ),
        (
            "write 1 KiB",
            n(300),
            lambda i: store.write(order[i], body, author="bench"),
            lambda i: plain_write(plain, order[i], body),
        ),
        (
            "create 1 KiB",
            n(300),
            creator(lambda p: store.write(p, body, author="bench", expected_rev=0), dirs),
            creator(lambda p: plain_create(plain / p, body), dirs),
        ),
        (
            "rename",
            n(300),
            toggler(lambda a, b: store.rename(a, b, author="bench"), order),
            toggler(lambda a, b: os.rename(plain / a, plain / b), order),
        ),
        (
            "atomic save 1 KiB",
            n(300),
            lambda i: store_save(store, order[i], body),
            lambda i: plain_write(plain, order[i], body),
        ),
        (
            f"listdir ({len(paths) // dirs} entries)",
            n(200),
            lambda i: store.listdir(f"d{i % dirs}"),
            lambda i: plain_listdir(plain / f"d{i % dirs}"),
        ),
    ]
    print(f"{'operation':<26}{'store ops/s':>14}{'plain ops/s':>14}{'store/plain':>13}")
    for name, count, store_op, plain_op in cases:
        ours, theirs = rate(store_op, count), rate(plain_op, count)
        print(f"{name:<26}{ours:>14,.0f}{theirs:>14,.0f}{ours / theirs:>13.2f}")


def threaded(fn: Callable[[int], object], threads: int, per_thread: int) -> float:
    """Total ops/s of ``threads`` threads each calling ``fn`` ``per_thread`` times a round.

    The threads live across all rounds (like a FUSE daemon's workers), so per-thread
    connections are opened once, in an unmeasured warm-up call.
    """
    start_round = threading.Barrier(threads + 1)
    end_round = threading.Barrier(threads + 1)

    def run() -> None:
        fn(0)
        for _ in range(ROUNDS):
            start_round.wait()
            for i in range(per_thread):
                fn(i)
            end_round.wait()

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    results = []
    for _ in range(ROUNDS):
        start_round.wait()
        start = time.perf_counter()
        end_round.wait()
        results.append(threads * per_thread / (time.perf_counter() - start))
    for w in workers:
        w.join()
    return statistics.median(results)


def compare_threads(db_path: str, paths: list[str], threads: int, scale: float) -> None:
    """The same queries the store runs, through per-thread connections or one locked one."""
    shared = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    lock = threading.Lock()
    local = threading.local()
    opened: list[sqlite3.Connection] = []
    stat_sql = (
        "SELECT path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, target"
        " FROM entries WHERE path = ?"
    )
    read_sql = (
        "SELECT b.content FROM entries e JOIN revisions r ON r.path = e.path AND r.rev = e.rev"
        " JOIN blob_refs br ON br.sha256 = r.sha256 JOIN blobs b ON b.id = br.blob_id"
        " WHERE e.path = ?"
    )

    def own() -> sqlite3.Connection:
        db = getattr(local, "db", None)
        if db is None:
            db = local.db = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
            opened.append(db)
        return db

    def per_thread(sql: str) -> Callable[[int], object]:
        return lambda i: own().execute(sql, (paths[i % len(paths)],)).fetchone()

    def locked(sql: str) -> Callable[[int], object]:
        def run(i: int) -> object:
            with lock:
                return shared.execute(sql, (paths[i % len(paths)],)).fetchone()

        return run

    print(f"\n{threads} threads{'':<17}{'per-thread':>14}{'shared+lock':>14}{'ratio':>13}")
    for name, sql in (("stat query", stat_sql), ("read 1 KiB query", read_sql)):
        a = threaded(per_thread(sql), threads, max(1, int(2000 * scale)))
        b = threaded(locked(sql), threads, max(1, int(2000 * scale)))
        print(f"{name:<26}{a:>14,.0f}{b:>14,.0f}{a / b:>13.2f}")
    shared.close()
    for db in opened:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="store URL (default: an SQLite file in a temp dir)")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--dirs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=4, help="0 skips the thread comparison")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies operation counts")
    parser.add_argument(
        "--postgres", action="store_true", help="also a throwaway PostgreSQL cluster"
    )
    parser.add_argument(
        "--mount-reps",
        type=int,
        default=7,
        help="with a server: the handler's workload through a mount of each, this many"
        " alternating repetitions (0 skips it)",
    )
    parser.add_argument(
        "--only-mounts", action="store_true", help="with a server: only the mount comparison"
    )
    args = parser.parse_args()
    cluster = None
    urls: list[str | None] = [args.url]
    if args.postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.fixtures.postgres import PgCluster, find_bindir

        bindir = find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL server binaries; run make system-deps")
        cluster = PgCluster(bindir)
        urls = [cluster.url()]
    if urls[0] is not None and not urls[0].startswith("sqlite"):
        urls.insert(0, None)  # the SQLite baseline, same run
    try:
        for url in [] if args.only_mounts else urls:
            run(url, args)
            print()
        server = urls[-1]
        if server is not None and not server.startswith("sqlite") and args.mount_reps:
            through_mounts(server, args.mount_reps)
    finally:
        if cluster is not None:
            cluster.destroy()


def _fresh_tree(url: str) -> str:
    """``url`` naming a new tree of the same database (the mount starts empty, as the
    SQLite one does)."""
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query["tree"] = f"bench_mount_{os.getpid()}"
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def through_mounts(server: str, reps: int) -> None:
    """The memory tool handler's mixed workload (scripts/bench_handler.py) through a
    mount of a new SQLite store and through a mount of ``server``, both mounted at
    once, repetitions alternating which goes first; medians."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_handler import build_workload
    from bench_mount import mounted

    from memfs import host
    from memfs.handler import MemoryHandler

    problem = host.fuse_problem()
    if problem:
        print(f"through a mount: skipped ({problem})")
        return
    work = build_workload(200, 20, 300, 20250818)
    commands = [command for _, command in work.setup + work.mixed]
    with tempfile.TemporaryDirectory(prefix="memfs-bench-", dir="/var/tmp") as tmp:
        base = Path(tmp)
        times: dict[str, list[float]] = {"sqlite": [], "server": []}
        with (
            mounted(base / "s.db", base / "sqlite") as _,
            mounted(_fresh_tree(server), base / "server") as _,
        ):
            for rep in range(reps):
                order = ["sqlite", "server"] if rep % 2 == 0 else ["server", "sqlite"]
                for name in order:
                    handler = MemoryHandler(base / name / f"h{rep}")
                    start = time.perf_counter()
                    errors = sum(handler.execute(c).is_error for c in commands)
                    times[name].append(time.perf_counter() - start)
                    if errors:
                        raise SystemExit(f"{name}: {errors} commands answered errors")
    a, b = statistics.median(times["sqlite"]), statistics.median(times["server"])
    print(f"handler mixed workload, {len(commands)} commands through a mount (median of {reps})")
    print(f"{'SQLite mount s':<26}{a:>14.3f}")
    print(f"{'server mount s':<26}{b:>14.3f}")
    print(f"{'server / SQLite':<26}{b / a:>14.2f}")


def run(url: str | None, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="memfs-bench-") as tmp:
        plain = Path(tmp) / "plain"
        plain.mkdir()
        db_path = os.path.join(tmp, "bench.db")
        with open_store(url or db_path) as store:
            paths = populate(store, plain, args.files, args.dirs)
            # As a mount's daemon does each second: SQLite copies its write-ahead log
            # back, PostgreSQL's statistics catch up with the files just made.
            store.maintain()
            print(f"store {store.url}: {args.files} files of 1 KiB in {args.dirs} dirs")
            compare(store, plain, paths, args.dirs, args.scale)
            if args.threads and url is None:
                compare_threads(db_path, paths, args.threads, args.scale)


if __name__ == "__main__":
    main()
