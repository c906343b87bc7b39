"""Measure the history commands against git on the same history, in the same run.

    .venv/bin/python scripts/bench_history.py [--files 10000] [--revisions 100000] [--back 10000]

Builds one history twice: a memfs SQLite store (``--files`` files in 100 directories,
then modifications of random files up to ``--revisions`` revisions in all, each change
with its own author and time) and a git repository with one commit per change (made
with ``git fast-import``, the fastest honest way to get 100,000 commits). Then, as whole
commands from a shell, the median of 3 runs of:

- ``memfs log`` of the whole store vs ``git log --name-status`` (every change printed);
- ``memfs log --limit 20`` vs ``git log -n 20 --name-status``;
- ``memfs restore --to CHECKPOINT`` (a checkpoint ``--back`` changes ago) vs
  ``git checkout COMMIT`` of the same point (each on a fresh copy / back at HEAD);
- ``memfs export`` of the tree to a directory vs ``tar -cf`` of git's work tree (when
  this memfs has ``export``).

Both sides pay process start-up, as a person running them does.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memfs.store import open_store

MEMFS = str(Path(sys.executable).with_name("memfs"))
RUNS = 3


def median_time(run: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(RUNS):
        if before is not None:
            before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sh(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, timeout=3600)


def build(work: Path, files: int, revisions: int, back: int) -> tuple[Path, Path, str]:
    """The store, the git repository, and the git commit ``back`` changes before HEAD."""
    rng = random.Random(7)
    db = work / "memory.db"
    repo = work / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    stream = open(work / "fast-import", "w", encoding="utf-8")  # noqa: SIM115
    paths = [f"d{i % 100}/note{i}.md" for i in range(files)]
    t0 = int(time.time()) - revisions
    mark_at_checkpoint = 0
    with open_store(db, history=50) as store:
        ticks = iter(range(revisions + 1))
        store.clock = lambda: (t0 + next(ticks)) * 10**9
        with store.batch():
            for i in range(revisions):
                path = paths[i] if i < files else rng.choice(paths)
                body = f"# {path}\nrevision {i}\n" + "memory line\n" * 20
                author = f"agent-{i % 7}"

                def clock(stamp: int = (t0 + i) * 10**9) -> int:  # one time per change
                    return stamp

                store.clock = clock
                store.write(path, body.encode(), author=author, parents=True)
                stream.write(
                    f"commit refs/heads/main\nmark :{i + 1}\n"
                    f"committer {author} <{author}@memfs> {t0 + i} +0000\n"
                    f"data 6\nchange\nM 644 inline {path}\ndata {len(body.encode())}\n{body}\n"
                )
                if i == revisions - back - 1:
                    mark_at_checkpoint = i + 1
                    store.set_checkpoint("bench-point", author="bench")
    stream.close()
    with open(work / "fast-import", "rb") as feed:
        subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, stdin=feed, check=True)
    sh("git", "checkout", "-q", "main", cwd=repo)
    commit = subprocess.run(
        ["git", "rev-parse", f"main~{revisions - mark_at_checkpoint}"],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return db, repo, commit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--revisions", type=int, default=100_000)
    parser.add_argument("--back", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memfs-bench-history-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        db, repo, commit = build(work, args.files, args.revisions, args.back)
        print(
            f"built {args.revisions} revisions of {args.files} files in"
            f" {time.perf_counter() - started:.1f} s (store and git)"
        )
        fresh = work / "restore.db"
        env = {**os.environ, "MEMFS_STATE_DIR": str(work / "state")}

        def memfs(*cmd: str, store: Path = db) -> None:
            subprocess.run(
                [MEMFS, *cmd, "--store", str(store)],
                check=True,
                env=env,
                stdout=subprocess.DEVNULL,
                timeout=3600,
            )

        def copy_store() -> None:
            for suffix in ("", "-wal", "-shm"):
                src = Path(str(db) + suffix)
                if src.exists():
                    shutil.copyfile(src, str(fresh) + suffix)

        rows = [
            (
                "log, every change",
                median_time(lambda: memfs("log")),
                median_time(lambda: sh("git", "log", "--name-status", cwd=repo)),
                "git log --name-status",
            ),
            (
                "log --limit 20",
                median_time(lambda: memfs("log", "--limit", "20")),
                median_time(lambda: sh("git", "log", "-n", "20", "--name-status", cwd=repo)),
                "git log -n 20 --name-status",
            ),
            (
                f"restore --to a point {args.back} changes back",
                median_time(
                    lambda: memfs("restore", "--to", "bench-point", store=fresh), copy_store
                ),
                median_time(
                    lambda: sh("git", "checkout", "-q", commit, cwd=repo),
                    lambda: sh("git", "checkout", "-q", "main", cwd=repo),
                ),
                "git checkout COMMIT",
            ),
        ]
        sh("git", "checkout", "-q", "main", cwd=repo)
        exported = work / "export"
        has_export = (
            subprocess.run([MEMFS, "export", "--help"], capture_output=True).returncode == 0
        )
        if has_export:
            rows.append(
                (
                    f"export {args.files} files",
                    median_time(
                        lambda: memfs("export", str(exported)),
                        lambda: shutil.rmtree(exported, ignore_errors=True),
                    ),
                    median_time(
                        lambda: sh(
                            "tar", "-cf", str(work / "t.tar"), "--exclude=.git", ".", cwd=repo
                        )
                    ),
                    "tar -cf of the work tree",
                )
            )
        print(f"{'measure':45} {'memfs':>9} {'baseline':>9} {'ratio':>7}  baseline")
        for name, ours, theirs, what in rows:
            print(f"{name:45} {ours:8.3f}s {theirs:8.3f}s {ours / theirs:6.2f}x  {what}")
        if not has_export:
            print("export: this memfs has no export command; row skipped")


if __name__ == "__main__":
    main()
