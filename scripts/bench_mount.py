"""Benchmark the memfs FUSE mount against the same tree on the native disk.

One run builds ``--files`` files of ``--size`` bytes in ``--dirs`` directories twice: in
an SQLite store (through the store API) and in a plain directory on the same disk. It
then times, through the mount and natively, interleaved, medians of ``--runs``:

* ``grep -r`` cold (first run after the mount; native after dropping the page cache if
  this process may write /proc/sys/vm/drop_caches, else only page-cached) and warm;
* ``find DIR -printf '%s %T@'`` (a stat of every file) warm;
* Python callbacks per file of a warm grep, and microseconds per callback of a cold one;
* the two commit designs: (b) no flush + quiet-period commit (default) against (a)
  ``commit_on_close`` (FLUSH registered: one callback per close), on warm grep and on
  writing ``--write-files`` small files;
* ``cache_readdir`` forced on (libfuse < 3.16's high-level API drops the flag);
* the memory tool handler's mixed workload through the mount against the SDK's
  ``BetaLocalFilesystemMemoryTool`` on the native disk (skipped if the handler is absent).
* large files (also alone, with ``--large-only``): ``cat`` of a ``--large-mib`` file
  (and a 24 MB one) after a remount against native after dropping the page cache, each
  on a fresh mount, medians of ``--runs``; and the daemon's peak RSS (VmHWM) while a
  ``--rss-mib`` file is written through the mount with fsync, and while it is read
  back after a remount.

Targets: warm grep <= 3x native, warm find/stat <= 1.5x, handler through mount <= 3x
SDK on native, a 50 MB read after a remount <= 3x. The machine is shared: read ratios
of medians, not absolute times.

    .venv/bin/python scripts/bench_mount.py [--files 10000] [--runs 5]
    .venv/bin/python scripts/bench_mount.py --large-only [--large-mib 50] [--rss-mib 500]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memfs.store import open_store  # noqa: E402

# The serving process: serve() with a callback counter, answering "counts" and "reset"
# on stdin so the benchmark can read the counter between runs.
SERVER = """
import json, sys, threading
from collections import Counter
from memfs.store import open_store
from memfs.mount.fuse import serve
from memfs.mount.options import MountOptions
counter = Counter()
opts = MountOptions(**json.loads(sys.argv[3]), callback_counter=counter)
store = open_store(sys.argv[1])
def control():
    for line in sys.stdin:
        if line.strip() == "reset":
            counter.clear()
            print("ok", flush=True)
        elif line.strip() == "counts":
            print(json.dumps(dict(counter)), flush=True)
threading.Thread(target=control, daemon=True).start()
serve(store, sys.argv[2], options=opts, ready=lambda: print("READY", flush=True))
store.close()
"""


class Server:
    def __init__(self, db: Path | str, mnt: Path, **options: Any) -> None:
        self.mnt = mnt
        mnt.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(db), str(mnt), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        if self._line(30) != "READY":
            self.stop()
            raise SystemExit("the mount did not come up")

    def _line(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().strip() if ready else ""

    def _ask(self, what: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        return self._line(10)

    def reset(self) -> None:
        self._ask("reset")

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = json.loads(self._ask("counts") or "{}")
        return counts

    def stop(self) -> None:
        subprocess.run(["fusermount3", "-u", str(self.mnt)], capture_output=True, check=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-uz", str(self.mnt)], check=False)
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def mounted(db: Path | str, mnt: Path, **options: Any) -> Iterator[Server]:
    server = Server(db, mnt, **options)
    try:
        yield server
    finally:
        server.stop()


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def timed(cmd: list[str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def grep(d: Path) -> list[str]:
    return ["grep", "-r", "-c", "needle-that-is-not-there", str(d)]


def find(d: Path) -> list[str]:
    return ["find", str(d), "-printf", "%s %T@\n"]


def body(i: int, size: int) -> bytes:
    line = f"file {i}: some remembered detail, line of text for grep to read\n".encode()
    return (line * (size // len(line) + 1))[:size]


def build(db: Path | str, native: Path, files: int, dirs: int, size: int) -> float:
    store = open_store(str(db))
    start = time.perf_counter()
    for d in range(dirs):
        store.mkdir(f"d{d:03d}", author="bench")
        (native / f"d{d:03d}").mkdir(parents=True)
    for i in range(files):
        rel = f"d{i % dirs:03d}/f{i:05d}.txt"
        data = body(i, size)
        store.write(rel, data, author="bench")
        (native / rel).write_bytes(data)
    store.close()
    return time.perf_counter() - start


def interleaved(a: list[str], b: list[str], runs: int) -> tuple[float, float]:
    ta: list[float] = []
    tb: list[float] = []
    for i in range(runs):
        for cmd, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            out.append(timed(cmd))
    return statistics.median(ta), statistics.median(tb)


def write_files(root: Path, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        with open(root / f"w{i:05d}.txt", "wb") as f:
            f.write(body(i, 2048))
    return time.perf_counter() - start


def write_big(path: Path, mib: int) -> float:
    """One file of ``mib`` MiB in 128 KiB writes, then fsync: the per-write-call cost
    (every acknowledged write is journaled before it returns)."""
    block = os.urandom(128 << 10)
    start = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(mib * 8):
            f.write(block)
            f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - start


def in_store_after(store: Any, name: str, size: int, limit: float = 60.0) -> float:
    """Seconds until ``name`` is in ``store`` at ``size`` bytes (what another mount sees)."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        with contextlib.suppress(Exception):
            if store.stat(name).size == size:
                return time.perf_counter() - start
        time.sleep(0.002)
    raise SystemExit(f"{name} did not reach the store in {limit:.0f} s")


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def read_after_remount(
    db: Path | str, mnt: Path, native: Path, name: str, runs: int
) -> tuple[float, float]:
    """``cat`` of one file, each time on a fresh mount (nothing of it cached in the
    daemon) and with the page cache dropped where allowed, against native; medians."""
    on_mount: list[float] = []
    on_native: list[float] = []
    for _ in range(runs):
        with mounted(db, mnt):
            drop_caches()
            on_mount.append(timed(["cat", str(mnt / name)]))
        drop_caches()
        on_native.append(timed(["cat", str(native / name)]))
    return statistics.median(on_mount), statistics.median(on_native)


def large_rows(
    args: argparse.Namespace, db: Path | str, native: Path, mnt: Path
) -> list[tuple[str, float, float, str]]:
    """Large files: reads after a remount, a 32 MiB write with fsync, and the daemon's
    memory for a very large one."""
    rows: list[tuple[str, float, float, str]] = []
    # Past the default 64 MiB file cap: every mount of it gets the cap in its URL.
    cap = max(args.rss_mib, args.large_mib) << 21
    if isinstance(db, Path):
        db = f"sqlite://{db}?max_file_bytes={cap}"
    store = open_store(str(db))
    native.mkdir(parents=True, exist_ok=True)
    for mb in sorted({24, args.large_mib}):
        data = os.urandom(mb * 1_000_000)
        store.write(f"big{mb}.bin", data, author="bench")
        (native / f"big{mb}.bin").write_bytes(data)
    store.close()
    for mb in sorted({24, args.large_mib}):
        m, nat = read_after_remount(db, mnt, native, f"big{mb}.bin", args.runs)
        note = f"target <= 3x; median of {args.runs}" if mb == args.large_mib else ""
        rows.append((f"read {mb} MB after remount", m, nat, note))
    # New content each run (write_big draws it), so no save finds its bytes stored. The
    # fsync of a large file makes it durable in the daemon's journal and its commit
    # follows in the background: each run waits for that commit before the native
    # write, so neither is timed while the other still works, and the note gives how
    # long after the fsync the store had the file.
    big: list[tuple[float, float]] = []
    stored: list[float] = []
    with mounted(db, mnt), open_store(str(db)) as seen:
        for i in range(max(args.runs, 3)):
            on_mount = write_big(mnt / f"w{i}.bin", 32)
            stored.append(in_store_after(seen, f"w{i}.bin", 32 << 20))
            big.append((on_mount, write_big(native / f"w{i}.bin", 32)))
    rows.append(
        (
            "write 32 MiB + fsync",
            statistics.median(b[0] for b in big),
            statistics.median(b[1] for b in big),
            f"target <= 4x; median of {len(big)}; in the store"
            f" {statistics.median(stored):.3f} s after the fsync",
        )
    )
    if args.rss_mib:
        with mounted(db, mnt) as srv, open_store(str(db)) as seen:
            wrote = write_big(mnt / "huge.bin", args.rss_mib)
            # The peak once the commit that follows the fsync is in the store.
            landed = in_store_after(seen, "huge.bin", args.rss_mib << 20, limit=600)
            written_peak = peak_rss_mib(srv.proc.pid)
        read, read_peak = float("nan"), float("nan")
        if not args.rss_write_only:
            with mounted(db, mnt) as srv:
                drop_caches()
                read = timed(["cat", str(mnt / "huge.bin")])
                read_peak = peak_rss_mib(srv.proc.pid)
        rows.append(
            (
                f"write {args.rss_mib} MiB + fsync",
                wrote,
                float("nan"),
                f"daemon peak RSS {written_peak:.0f} MiB; in the store {landed:.1f} s later",
            )
        )
        rows.append(
            (
                f"read {args.rss_mib} MiB after remount",
                read,
                float("nan"),
                f"daemon peak RSS {read_peak:.0f} MiB",
            )
        )
    return rows


def print_rows(rows: list[tuple[str, float, float, str]]) -> None:
    print(f"\n{'operation':<28}{'mount s':>10}{'native s':>10}{'ratio':>8}  note")
    for name, m, nat, note in rows:
        print(f"{name:<28}{m:>10.3f}{nat:>10.3f}{m / nat:>7.2f}x  {note}")


def handler_row(mnt: Path, native: Path, args: argparse.Namespace) -> dict[str, float] | None:
    """The handler's mixed workload on the mount against the SDK tool on native disk:
    ``--handler-reps`` interleaved repetitions, each in fresh directories; medians."""
    try:
        sys.path.insert(0, str(ROOT / "scripts"))
        from anthropic.lib.tools import ToolError
        from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
        from bench_handler import build_workload

        from memfs.handler import MemoryHandler
    except ImportError as e:
        print(f"handler row skipped: {e}")
        return None
    work = build_workload(args.handler_files, 20, args.handler_ops, 20250818)
    commands = [c for _, c in work.setup + work.mixed]

    def on_mount(rep: int) -> float:
        handler = MemoryHandler(mnt / f"h{rep}")
        start = time.perf_counter()
        errors = sum(handler.execute(c).is_error for c in commands)
        took = time.perf_counter() - start
        if errors:
            print(f"handler on the mount: {errors} commands answered errors")
        return took

    def on_native(rep: int) -> float:
        sdk = BetaLocalFilesystemMemoryTool(base_path=str(native / f"h{rep}"))
        start = time.perf_counter()
        for c in commands:
            with contextlib.suppress(ToolError):
                sdk.call(c)
        return time.perf_counter() - start

    t_mount, t_sdk = [], []
    for rep in range(args.handler_reps):
        if rep % 2 == 0:
            t_mount.append(on_mount(rep))
            t_sdk.append(on_native(rep))
        else:
            t_sdk.append(on_native(rep))
            t_mount.append(on_mount(rep))
    return {
        "mount_s": statistics.median(t_mount),
        "sdk_s": statistics.median(t_sdk),
        "ops": len(commands),
    }


def _visible(path: Path, data: bytes, deadline_s: float = 10.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                return time.monotonic() - start
        time.sleep(0.002)
    raise SystemExit(f"{path} did not show the new content within {deadline_s}s")


def staleness(db: Path | str, mnt: Path, trials: int = 100) -> None:
    """How long another writer's change takes to show through a mount: p50 and p99 of
    ``trials`` writes each way (an SQLite store wakes the other mount from its -wal
    file's inotify watch; PostgreSQL from LISTEN/NOTIFY)."""
    other = mnt.parent / "mnt-b"
    with mounted(db, mnt), mounted(db, other):
        store = open_store(str(db))
        try:
            a_to_b, outside = [], []
            (mnt / "stale.txt").write_bytes(b"start")
            _visible(other / "stale.txt", b"start")
            for i in range(trials):
                data = f"from a {i}".encode()
                # A save of what it read, as a writer makes (a blind rewrite of what
                # another writer just stored would keep theirs as a conflict copy).
                (mnt / "stale.txt").read_bytes()
                with open(mnt / "stale.txt", "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                a_to_b.append(_visible(other / "stale.txt", data))
                data = f"from the store {i}".encode()
                store.write("stale.txt", data, author="bench")
                outside.append(_visible(other / "stale.txt", data))
                # Mount A's next save must be of what it read, or it is a conflict copy.
                _visible(mnt / "stale.txt", data)
        finally:
            store.close()
    print(f"\nother writers' changes visible after ({trials} writes; p50 / p99 / max):")
    for name, lat in (("mount A fsync -> mount B", a_to_b), ("store.write -> mount", outside)):
        ms = sorted(x * 1000 for x in lat)
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        print(f"  {name:<26}{statistics.median(ms):>6.1f} ms {p99:>6.1f} ms {ms[-1]:>6.1f} ms")


# --- the floor: a bare passthrough on the same binding (issue 27, item 6) ---------------
PASSTHROUGH = Path(__file__).resolve().parent / "bench_passthrough.py"
SOURCE_COPIES = 4  # copies of the repository's tree in the untar tarball


class Passthrough:
    """scripts/bench_passthrough.py mounted at ``mnt`` over ``source``."""

    def __init__(self, source: Path, mnt: Path) -> None:
        self.mnt = mnt
        source.mkdir(parents=True, exist_ok=True)
        mnt.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, str(PASSTHROUGH), str(source), str(mnt)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        if not ready or self.proc.stdout.readline().strip() != "READY":
            self.stop()
            raise SystemExit("the passthrough mount did not come up")

    def stop(self) -> None:
        subprocess.run(["fusermount3", "-u", str(self.mnt)], capture_output=True, check=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-uz", str(self.mnt)], check=False)
            self.proc.kill()
            self.proc.wait()


def source_tarball(work: Path) -> tuple[Path, int]:
    """A tarball of this repository's tracked tree at HEAD, ``SOURCE_COPIES`` times
    (prefixes a/, b/, ...), names sorted and times fixed: the same bytes for the same
    commit, nothing from the network. Returns the tarball and its number of files."""
    tree = work / "src-tree"
    tree.mkdir()
    for i in range(SOURCE_COPIES):
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", f"--prefix={chr(97 + i)}/", "HEAD"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-xf", "-", "-C", str(tree)], input=archive, check=True)
    tarball = work / "src.tar"
    subprocess.run(
        ["tar", "--sort=name", "--mtime=2026-01-01", "-cf", str(tarball), "-C", str(tree), "."],
        check=True,
    )
    files = sum(len(names) for _, _, names in os.walk(tree))
    shutil.rmtree(tree)
    return tarball, files


def bare_clone(work: Path) -> tuple[Path, int]:
    """A bare copy of this repository (cloned through the pack protocol in the rows, as
    from a server) and its number of commits."""
    bare = work / "repo.git"
    subprocess.run(
        ["git", "clone", "--bare", "--quiet", "--no-local", str(ROOT), str(bare)], check=True
    )
    commits = subprocess.run(
        ["git", "-C", str(bare), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return bare, int(commits)


def write_small(root: Path, n: int, size: int = 4096) -> float:
    """``n`` text files of ``size`` bytes (memories are text: the store indexes them)."""
    root.mkdir()
    texts = [body(i, size) for i in range(n)]
    start = time.perf_counter()
    for i, text in enumerate(texts):
        with open(root / f"f{i:05d}.md", "wb") as f:
            f.write(text)
    return time.perf_counter() - start


def untar(tarball: Path, into: Path) -> float:
    into.mkdir()
    return timed(["tar", "-xf", str(tarball), "-C", str(into)])


def floor_rows(args: argparse.Namespace, work: Path) -> None:
    """Native, the bare passthrough and memfs side by side: 1,000 files of 4 KiB, an
    untar of a source tree, a git clone; each in a fresh directory, the three targets
    interleaved in a rotating order, medians of ``--floor-runs``; ratios to the
    passthrough (the binding's own cost is the floor memfs can reach)."""
    tarball, tar_files = source_tarball(work)
    bare, commits = bare_clone(work)
    native = work / "floor-native"
    native.mkdir()
    targets = {"native": native, "passthrough": work / "floor-pt", "memfs": work / "floor-mnt"}
    pt = Passthrough(work / "floor-pt-src", targets["passthrough"])
    counts: dict[str, dict[str, int]] = {}
    try:
        with mounted(work / "floor.db", targets["memfs"]) as srv:
            workloads: dict[str, Callable[[Path], float]] = {
                f"write {args.write_files} x 4 KiB": lambda d: write_small(d, args.write_files),
                f"untar {tar_files} files": lambda d: untar(tarball, d),
                f"git clone ({commits} commits)": lambda d: timed(
                    ["git", "clone", "--quiet", f"file://{bare}", str(d)]
                ),
            }
            results: dict[str, dict[str, list[float]]] = {}
            for w, (name, fn) in enumerate(workloads.items()):
                results[name] = {t: [] for t in targets}
                for run in range(args.floor_runs):
                    order = list(targets)
                    order = order[run % 3 :] + order[: run % 3]
                    for t in order:
                        if t == "memfs" and run == 0:
                            srv.reset()
                        took = fn(targets[t] / f"w{w}-{run}")
                        if t == "memfs" and run == 0:
                            counts[name] = srv.counts()
                        results[name][t].append(took)
    finally:
        pt.stop()
    print(f"\nfloor: native, bare mfusepy passthrough, memfs (medians of {args.floor_runs})")
    print(
        f"{'workload':<30}{'native s':>10}{'passth. s':>11}{'memfs s':>10}"
        f"{'memfs/pt':>10}{'pt/native':>10}{'memfs cb':>10}"
    )
    for name, by in results.items():
        med = {t: statistics.median(v) for t, v in by.items()}
        print(
            f"{name:<30}{med['native']:>10.3f}{med['passthrough']:>11.3f}{med['memfs']:>10.3f}"
            f"{med['memfs'] / med['passthrough']:>9.2f}x"
            f"{med['passthrough'] / med['native']:>9.1f}x"
            f"{sum(v for k, v in counts[name].items() if not k.endswith('.ns')):>10}"
        )
    print("memfs callbacks of each workload's first run (count x mean time inside Python):")
    for name, c in counts.items():
        calls = sorted(
            ((k, v) for k, v in c.items() if not k.endswith(".ns")), key=lambda kv: -kv[1]
        )
        print(
            f"  {name}: "
            + ", ".join(f"{k} {v} x {c.get(k + '.ns', 0) / v / 1000:.0f} us" for k, v in calls)
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=10000)
    p.add_argument("--dirs", type=int, default=100)
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--write-files", type=int, default=1000)
    p.add_argument("--handler-files", type=int, default=300)
    p.add_argument("--handler-ops", type=int, default=1000)
    p.add_argument("--handler-reps", type=int, default=3)
    p.add_argument("--large-mib", type=int, default=50, help="the large file read (MB)")
    p.add_argument(
        "--rss-mib", type=int, default=500, help="the file for the daemon's memory (0: skip)"
    )
    p.add_argument("--large-only", action="store_true", help="only the large-file rows")
    p.add_argument(
        "--rss-write-only",
        action="store_true",
        help="skip reading the --rss-mib file back (before range reads it took hours)",
    )
    p.add_argument("--floor-runs", type=int, default=3)
    p.add_argument(
        "--floor-only", action="store_true", help="only the native/passthrough/memfs rows"
    )
    p.add_argument("--dir", help="work directory (default: a temp dir under /var/tmp)")
    p.add_argument(
        "--url", help="the store to mount (default: a new SQLite file); a new, empty tree"
    )
    args = p.parse_args()
    base = Path(tempfile.mkdtemp(prefix="memfs-bench-", dir=args.dir or "/var/tmp"))
    native, mnt = base / "native", base / "mnt"
    db: Path | str = args.url or base / "store.db"
    try:
        if args.large_only:
            print_rows(large_rows(args, db, native, mnt))
            return 0
        if args.floor_only:
            floor_rows(args, base)
            return 0
        code = run(args, db, native, mnt)
        floor_rows(args, base)
        return code
    finally:
        for m in (mnt, base / "floor-mnt", base / "floor-pt"):
            subprocess.run(["fusermount3", "-uz", str(m)], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


def run(args: argparse.Namespace, db: Path | str, native: Path, mnt: Path) -> int:
    n = args.files
    print(f"building {n} files of {args.size} B in {args.dirs} dirs (store and native)...")
    print(f"  built in {build(db, native, n, args.dirs, args.size):.1f} s")
    dropped = drop_caches()
    cold_native = timed(grep(native))
    print(
        f"\ncold = first run after mount; native cold "
        f"{'after drop_caches' if dropped else 'only page-cached (drop_caches not allowed)'}"
    )
    rows: list[tuple[str, float, float, str]] = []
    with mounted(db, mnt) as srv:
        drop_caches()
        srv.reset()
        cold_mount = timed(grep(mnt))
        cold_counts = srv.counts()
        rows.append(("grep -r cold", cold_mount, cold_native, ""))
        timed(grep(mnt))  # second run: the kernel's caches fill up over two passes
        g_mount, g_native = interleaved(grep(mnt), grep(native), args.runs)
        rows.append(("grep -r warm", g_mount, g_native, "target <= 3x"))
        srv.reset()
        timed(grep(mnt))
        warm_counts = srv.counts()
        f_mount, f_native = interleaved(find(mnt), find(native), args.runs)
        rows.append(("find -printf warm", f_mount, f_native, "target <= 1.5x"))
        ls_mount, ls_native = interleaved(
            ["ls", "-lR", str(mnt)], ["ls", "-lR", str(native)], args.runs
        )
        rows.append(("ls -lR warm", ls_mount, ls_native, ""))
        (native / "w").mkdir()
        (mnt / "w").mkdir()
        srv.reset()
        w_mount = write_files(mnt / "w", args.write_files)
        write_counts = srv.counts()
        w_native = write_files(native / "w", args.write_files)
        rows.append((f"write {args.write_files} files (b)", w_mount, w_native, ""))
        srv.reset()
        hrow = handler_row(mnt, native, args)
        handler_counts = srv.counts()
    rows += large_rows(args, db, native, mnt)

    print_rows(rows)
    if hrow is not None:
        ratio = hrow["mount_s"] / hrow["sdk_s"]
        print(
            f"{'handler mixed (mount/SDK)':<28}{hrow['mount_s']:>10.3f}{hrow['sdk_s']:>10.3f}"
            f"{ratio:>7.2f}x  target <= 3x; {hrow['ops']:.0f} commands, "
            f"median of {args.handler_reps}"
        )

    def per_file(counts: dict[str, int]) -> str:
        calls = {k: v for k, v in counts.items() if not k.endswith(".ns")}
        total = sum(calls.values())
        parts = ", ".join(
            f"{k} {v} x {counts.get(k + '.ns', 0) / v / 1000:.0f} us"
            + (
                f" (filler {counts[k + '.fill.ns'] / v / 1000:.0f} us)"
                if k + ".fill.ns" in counts
                else ""
            )
            for k, v in sorted(calls.items(), key=lambda kv: -kv[1])
        )
        return f"{total} callbacks = {total / n:.3f}/file ({parts} inside Python)"

    print(f"\ncallbacks, cold grep: {per_file(cold_counts)}")
    total_cold = sum(v for k, v in cold_counts.items() if not k.endswith(".ns")) or 1
    print(
        f"  cold grep per file: {cold_mount / n * 1e6:.0f} us through the mount vs "
        f"{cold_native / n * 1e6:.0f} us native; {cold_mount / total_cold * 1e6:.0f} us "
        "per callback (wall time / callbacks)"
    )
    print(f"callbacks, warm grep: {per_file(warm_counts)}")
    print(f"  warm grep per file: {g_mount / n * 1e6:.1f} us mount vs {g_native / n * 1e6:.1f} us")
    print(f"callbacks, writing {args.write_files} files (b): {per_file(write_counts)}")
    if hrow is not None:
        n_cmds = hrow["ops"] * args.handler_reps
        calls = sum(v for k, v in handler_counts.items() if not k.endswith(".ns"))
        print(f"callbacks, handler workload: {calls / n_cmds:.1f} per command")
        print(f"  {per_file(handler_counts).split('(', 1)[1]}")

    staleness(db, mnt)

    # The alternatives, each on its own fresh mount, interleaved with the default.
    print("\ndesign comparison (fresh mount each; warm grep after two passes; medians)")
    print(f"{'configuration':<34}{'warm grep s':>12}{'write s':>10}{'cb/close':>10}")
    configs = {
        "(b) no flush, quiet commit": {},
        "(a) commit_on_close": {"commit_on_close": True},
        "(b) cache_readdir forced on": {"cache_readdir": True},
    }
    for label, opts in configs.items():
        with mounted(db, mnt, **opts) as srv:
            timed(grep(mnt))
            timed(grep(mnt))
            warm = statistics.median(timed(grep(mnt)) for _ in range(args.runs))
            srv.reset()
            timed(["cat", *[str(mnt / "d000" / f"f{i:05d}.txt") for i in range(0, n, args.dirs)]])
            closes = srv.counts()
            calls = sum(v for k, v in closes.items() if not k.endswith(".ns"))
            per_close = calls / len(range(0, n, args.dirs))
            target = mnt / f"w-{list(configs).index(label)}"
            target.mkdir()
            wr = write_files(target, args.write_files)
        print(f"{label:<34}{warm:>12.3f}{wr:>10.3f}{per_close:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
