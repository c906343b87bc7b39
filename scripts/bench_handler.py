"""Benchmark memfs's MemoryHandler against the SDK's BetaLocalFilesystemMemoryTool.

Both run the same seeded workload in the same process, each in a fresh temporary
directory on the same file system, alternating (memfs, SDK, SDK, memfs, ...) so drift in
the machine's load hits both alike. The workload: create ``--files`` files in ``--dirs``
directories, then ``--ops`` commands drawn from a fixed mix of view (file and directory),
str_replace, insert, rename, delete and create. Reported: median ops/s per handler per
phase, the memfs/SDK ratio (above 1.0 means memfs is faster) and the median time per
command kind.

    .venv/bin/python scripts/bench_handler.py [--ops 5000] [--files 1000] [--repeat 5]
    .venv/bin/python scripts/bench_handler.py --profile     # where memfs spends its time
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from anthropic.lib.tools import ToolError
from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

from memfs.handler import MemoryHandler

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike

Command = dict[str, Any]
# (kind, command); kind splits "view" into file and directory views for the breakdown.
Op = tuple[str, Command]
Runner = Callable[[Command], bool]  # runs one command, returns True if it was an error

MIX = {
    "view_file": 30,
    "view_dir": 8,
    "str_replace": 25,
    "insert": 15,
    "rename": 10,
    "delete": 5,
    "create": 7,
}


@dataclass
class Workload:
    setup: list[Op]
    mixed: list[Op]


def _body(index: int) -> str:
    lines = [f"# note {index}", f"counter: {index}-0"]
    lines += [f"line {n} of note {index}: some remembered detail" for n in range(3, 16)]
    return "\n".join(lines) + "\n"


def build_workload(files: int, dirs: int, ops: int, seed: int) -> Workload:
    """A command list valid for any handler that follows the contract.

    A small model of the tree (path -> counter) keeps every command aimed at a path that
    exists (or not, for create and rename targets) so both handlers do real work rather
    than answer errors.
    """
    rng = random.Random(seed)
    live: dict[str, int] = {}  # model path -> the counter value its file holds
    serial = 0
    setup: list[Op] = []
    for index in range(files):
        path = f"/memories/d{index % dirs:02d}/note{index:05d}.md"
        setup.append(("create", {"command": "create", "path": path, "file_text": _body(index)}))
        live[path] = 0
        serial = index + 1
    paths = list(live)
    kinds = list(MIX)
    weights = [MIX[k] for k in kinds]
    mixed: list[Op] = []
    for _ in range(ops):
        kind = rng.choices(kinds, weights)[0]
        if kind in ("view_file", "str_replace", "insert", "rename", "delete") and not paths:
            kind = "create"
        if kind == "view_file":
            mixed.append((kind, {"command": "view", "path": rng.choice(paths)}))
        elif kind == "view_dir":
            path = f"/memories/d{rng.randrange(dirs):02d}"
            mixed.append((kind, {"command": "view", "path": path}))
        elif kind == "str_replace":
            path = rng.choice(paths)
            number = int(path.rsplit("note", 1)[1].split(".")[0])
            old, new = live[path], live[path] + 1
            live[path] = new
            command: Command = {
                "command": "str_replace",
                "path": path,
                "old_str": f"counter: {number}-{old}",
                "new_str": f"counter: {number}-{new}",
            }
            mixed.append((kind, command))
        elif kind == "insert":
            path = rng.choice(paths)
            command = {
                "command": "insert",
                "path": path,
                "insert_line": rng.randint(2, 10),
                "insert_text": f"inserted {rng.random():.6f}\n",
            }
            mixed.append((kind, command))
        elif kind == "rename":
            old_path = rng.choice(paths)
            name = old_path.rsplit("note", 1)[1]  # its number and extension
            new_path = f"/memories/d{rng.randrange(dirs):02d}/r{serial}-note{name}"
            serial += 1
            live[new_path] = live.pop(old_path)
            paths[paths.index(old_path)] = new_path
            command = {"command": "rename", "old_path": old_path, "new_path": new_path}
            mixed.append((kind, command))
        elif kind == "delete":
            path = paths.pop(rng.randrange(len(paths)))
            del live[path]
            mixed.append((kind, {"command": "delete", "path": path}))
        else:
            path = f"/memories/d{rng.randrange(dirs):02d}/note{serial:05d}.md"
            mixed.append((kind, {"command": "create", "path": path, "file_text": _body(serial)}))
            live[path] = 0
            paths.append(path)
            serial += 1
    return Workload(setup, mixed)


def memfs_runner(base: Path) -> Runner:
    root = base / "memories"
    root.mkdir()
    handler = MemoryHandler(root)

    def run(command: Command) -> bool:
        return handler.execute(command).is_error

    return run


def sdk_runner(base: Path) -> Runner:
    tool = BetaLocalFilesystemMemoryTool(base_path=str(base))

    def run(command: Command) -> bool:
        try:
            tool.call(command)
        except ToolError:
            return True
        return False

    return run


HANDLERS: dict[str, Callable[[Path], Runner]] = {"memfs": memfs_runner, "sdk": sdk_runner}


class FsyncCounter:
    """Counts and times os.fsync calls (still making them): on a busy disk they are most
    of a write's cost, so the report separates them from the handlers' own work."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self.real = os.fsync

    def __call__(self, fd: FileDescriptorLike) -> None:
        self.calls += 1
        start = time.perf_counter()
        try:
            self.real(fd)
        finally:
            self.seconds += time.perf_counter() - start


FSYNCS = FsyncCounter()


@dataclass
class Run:
    setup_s: float
    mixed_s: float
    errors: int
    per_kind: dict[str, float] = field(default_factory=dict)  # kind -> mean seconds per op
    fsyncs: dict[str, float] = field(default_factory=dict)  # kind -> fsync calls per op
    fsync_s: float = 0.0  # time inside fsync, both phases
    tree: dict[str, str] = field(default_factory=dict)


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def run_once(name: str, workload: Workload, parent: Path, keep_tree: bool) -> Run:
    base = Path(tempfile.mkdtemp(prefix=f"bench-{name}-", dir=parent))
    try:
        runner = HANDLERS[name](base)
        errors = 0
        fsync_start = FSYNCS.seconds
        start = time.perf_counter()
        for _, command in workload.setup:
            errors += runner(command)
        setup_s = time.perf_counter() - start
        spent: dict[str, float] = defaultdict(float)
        synced: dict[str, int] = defaultdict(int)
        counts: dict[str, int] = defaultdict(int)
        clock = time.perf_counter
        start = clock()
        for kind, command in workload.mixed:
            f0, t0 = FSYNCS.calls, clock()
            errors += runner(command)
            spent[kind] += clock() - t0
            synced[kind] += FSYNCS.calls - f0
            counts[kind] += 1
        mixed_s = clock() - start
        per_kind = {k: spent[k] / counts[k] for k in spent}
        fsyncs = {k: synced[k] / counts[k] for k in spent}
        tree = _tree(base / "memories") if keep_tree else {}
        fsync_s = FSYNCS.seconds - fsync_start
        return Run(setup_s, mixed_s, errors, per_kind, fsyncs, fsync_s, tree)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _fs_type(path: Path) -> str:
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                mount_point = fields[1]
                if str(path).startswith(mount_point) and len(mount_point) > len(best):
                    best, kind = mount_point, fields[2]
    except OSError:
        pass
    return kind


def bench(args: argparse.Namespace) -> dict[str, Any]:
    workload = build_workload(args.files, args.dirs, args.ops, args.seed)
    parent = Path(args.dir) if args.dir else Path(tempfile.gettempdir())
    runs: dict[str, list[Run]] = {name: [] for name in HANDLERS}
    for rep in range(args.repeat):
        order = ["memfs", "sdk"] if rep % 2 == 0 else ["sdk", "memfs"]
        for name in order:
            runs[name].append(run_once(name, workload, parent, keep_tree=rep == 0))
    same_tree = runs["memfs"][0].tree == runs["sdk"][0].tree
    result: dict[str, Any] = {
        "workload": {
            "files": args.files,
            "dirs": args.dirs,
            "ops": args.ops,
            "seed": args.seed,
            "repeat": args.repeat,
            "file_system": _fs_type(parent.resolve()),
            "python": sys.version.split()[0],
        },
        "same_final_tree": same_tree,
        "handlers": {},
    }
    n_setup, n_mixed = len(workload.setup), len(workload.mixed)
    for name, rs in runs.items():
        kinds = sorted({k for r in rs for k in r.per_kind})
        result["handlers"][name] = {
            "setup_ops_per_s": statistics.median(n_setup / r.setup_s for r in rs),
            "mixed_ops_per_s": statistics.median(n_mixed / r.mixed_s for r in rs),
            "total_ops_per_s": statistics.median(
                (n_setup + n_mixed) / (r.setup_s + r.mixed_s) for r in rs
            ),
            "errors": max(r.errors for r in rs),
            "us_per_op": {
                k: statistics.median(r.per_kind[k] for r in rs if k in r.per_kind) * 1e6
                for k in kinds
            },
            "fsyncs_per_op": {k: rs[0].fsyncs[k] for k in kinds if k in rs[0].fsyncs},
        }
        result["handlers"][name]["runs_s"] = [[r.setup_s, r.mixed_s] for r in rs]
        result["handlers"][name]["fsync_share"] = statistics.median(
            r.fsync_s / (r.setup_s + r.mixed_s) for r in rs
        )
        result["handlers"][name]["ops_per_s_outside_fsync"] = statistics.median(
            (n_setup + n_mixed) / (r.setup_s + r.mixed_s - r.fsync_s) for r in rs
        )
    # Run i of memfs and run i of the SDK ran back to back: the median of their ratios
    # cancels slow drifts of the machine that a ratio of medians can still catch.
    result["paired_total_ratio_median"] = statistics.median(
        (s.setup_s + s.mixed_s) / (m.setup_s + m.mixed_s)
        for m, s in zip(runs["memfs"], runs["sdk"], strict=True)
    )
    m, s = result["handlers"]["memfs"], result["handlers"]["sdk"]
    result["ratio_memfs_over_sdk"] = {
        phase: m[f"{phase}_ops_per_s"] / s[f"{phase}_ops_per_s"]
        for phase in ("setup", "mixed", "total")
    }
    result["ratio_by_kind"] = {
        k: s["us_per_op"][k] / m["us_per_op"][k] for k in m["us_per_op"] if k in s["us_per_op"]
    }
    return result


def print_table(result: dict[str, Any]) -> None:
    w = result["workload"]
    print(
        f"workload: {w['files']} files in {w['dirs']} dirs, then {w['ops']} mixed ops; "
        f"seed {w['seed']}; {w['repeat']} interleaved repetitions; "
        f"file system {w['file_system']}; Python {w['python']}"
    )
    m, s = result["handlers"]["memfs"], result["handlers"]["sdk"]
    r = result["ratio_memfs_over_sdk"]
    print(f"\n{'median ops/s':<16}{'memfs':>12}{'SDK':>12}{'memfs/SDK':>12}")
    for phase in ("setup", "mixed", "total"):
        key = f"{phase}_ops_per_s"
        print(f"{phase:<16}{m[key]:>12,.0f}{s[key]:>12,.0f}{r[phase]:>11.2f}x")
    print(f"{'total, paired':<16}{'':>24}{result['paired_total_ratio_median']:>11.2f}x")
    outside = m["ops_per_s_outside_fsync"], s["ops_per_s_outside_fsync"]
    print(
        f"{'without fsync':<16}{outside[0]:>12,.0f}{outside[1]:>12,.0f}"
        f"{outside[0] / outside[1]:>11.2f}x   (time inside fsync: memfs "
        f"{m['fsync_share']:.0%}, SDK {s['fsync_share']:.0%})"
    )
    for name, label in (("memfs", "memfs"), ("sdk", "SDK")):
        totals = sorted(a + b for a, b in result["handlers"][name]["runs_s"])
        print(f"  {label} run totals: " + ", ".join(f"{t:.2f}s" for t in totals))
    print(f"\n{'median µs/op':<16}{'memfs':>12}{'SDK':>12}{'SDK/memfs':>12}{'fsyncs/op':>16}")
    for kind, ratio in sorted(result["ratio_by_kind"].items()):
        syncs = f"{m['fsyncs_per_op'][kind]:.2f} / {s['fsyncs_per_op'][kind]:.2f}"
        print(
            f"{kind:<16}{m['us_per_op'][kind]:>12,.1f}{s['us_per_op'][kind]:>12,.1f}"
            f"{ratio:>11.2f}x{syncs:>16}"
        )
    print(f"\nerrors: memfs {m['errors']}, SDK {s['errors']}")
    print(f"same final tree: {'yes' if result['same_final_tree'] else 'NO'}")


def profile(args: argparse.Namespace) -> None:
    workload = build_workload(args.files, args.dirs, args.ops, args.seed)
    parent = Path(args.dir) if args.dir else Path(tempfile.gettempdir())
    profiler = cProfile.Profile()
    profiler.enable()
    run_once("memfs", workload, parent, keep_tree=False)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)
    print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5000, help="mixed commands (default 5000)")
    parser.add_argument("--files", type=int, default=1000, help="files created first")
    parser.add_argument("--dirs", type=int, default=30, help="directories they go in")
    parser.add_argument("--repeat", type=int, default=5, help="runs per handler")
    parser.add_argument("--seed", type=int, default=20250818)
    parser.add_argument("--dir", help="where the temporary trees go (default: $TMPDIR)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--profile", action="store_true", help="cProfile one memfs run")
    args = parser.parse_args(argv)
    if min(args.ops, args.files, args.dirs, args.repeat) < 1:
        parser.error("--ops, --files, --dirs and --repeat must be at least 1")
    if args.dir and not Path(args.dir).is_dir():
        parser.error(f"--dir {args.dir} is not a directory")
    if args.profile:
        profile(args)
        return 0
    # Both handlers call os.fsync through the module attribute, so this sees every call.
    os.fsync = FSYNCS
    try:
        result = bench(args)
    finally:
        os.fsync = FSYNCS.real
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
