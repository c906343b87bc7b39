"""memfs web on a big store: server time for the timeline's first page and for an
operation's page, and the browser's time to show a 1 MiB file and a 5,000-change
operation; and diffs of big edits against their budget, and SIGTERM while they run.

    .venv/bin/python scripts/bench_web.py [--ops 100000] [--runs 20] [--diffs-only]

It builds a SQLite store of OPS operations (three actors taking turns, one file write
each, 2,000 files in 40 directories), plus one operation of 5,000 changes and a 1 MiB
text file, serves it with the installed ``memfs web`` on loopback, and times real HTTP
requests (median of RUNS, after one warm-up). Baselines in the same run: the same
pages on a store of 100 operations, and the server's own static stylesheet (the HTTP
floor). Browser times are Chromium's (Playwright) from navigation to the load event,
against the small store's timeline.

The diff rows: a file of 2N lines edited so that every other line changed (N changed
lines), for N of 10k, 20k and 200k: the server's time for the edit's operation page and
for the history's compare page, the peak RSS of the server after them, and ``memfs
diff`` of the file (time and peak RSS of the process). Each diff has a budget
(memfs.history.bounded.DIFF_BUDGET); past it the page shows a summary. Then 8 requests
of the largest compare page are sent at once and the server gets SIGTERM while they are
in flight: the time from the signal to its exit.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memfs.store import open_store
from memfs.store.base import Act

MEMFS = str(Path(sys.executable).with_name("memfs"))
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ACTORS = ("agent:planner", "vim (pid 812)", "mcp:claude-code")


def build(db: Path, ops: int) -> dict[str, int]:
    """The store; returns the ids of a one-change operation and the 5,000-change one."""
    with open_store(f"sqlite:///{db}") as store:
        done = 0
        while done < ops:
            with store.batch():  # one transaction for speed, each write its own operation
                for i in range(done, min(ops, done + 10_000)):
                    actor, _, detail = ACTORS[i % 3].partition(" (")
                    act = Act(actor, detail=detail.rstrip(")"))
                    with store.acting(act):
                        store.write(
                            f"d{i % 40:02}/f{i % 2000:04}.md",
                            f"line {i}\nsecond line\n".encode(),
                            author=actor,
                            parents=True,
                        )
            done = min(ops, done + 10_000)
        one = store.operations(limit=1)[0].id
        with store.acting(Act("alice (cp)", detail="pid 7", label="cp")), store.batch():
            for i in range(5000):
                store.write(
                    f"big/f{i:04}.md", f"file {i}\n".encode(), author="alice (cp)", parents=True
                )
        big = store.operations(limit=1)[0].id
        with store.acting(Act("alice (cp)", detail="pid 8", label="cp")):
            store.write(
                "huge.md",
                b"".join(b"%07d the quick brown fox\n" % i for i in range(1 << 15)),
                author="alice (cp)",
            )
        return {"one": one, "big": big}


def serve(db: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [MEMFS, "web", "--store", f"sqlite:///{db}", "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    found = re.search(r"127\.0\.0\.1:(\d+)/", proc.stderr.readline())
    if found is None:
        proc.kill()
        raise SystemExit("memfs web did not start")
    return proc, int(found.group(1))


def timed(port: int, path: str, runs: int) -> float:
    """Median seconds of GET ``path`` (status 200 required)."""
    samples = []
    for n in range(runs + 1):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        start = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - start
        conn.close()
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status} {body[:200]!r}")
        if n:
            samples.append(elapsed)
    return statistics.median(samples)


def browser_times(port: int, small_port: int, paths: dict[str, str], runs: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        for label, (where, path) in {
            "small timeline": (small_port, "/"),
            **{k: (port, v) for k, v in paths.items()},
        }.items():
            samples = []
            for n in range(runs + 1):
                start = time.perf_counter()
                page.goto(f"http://127.0.0.1:{where}{path}", wait_until="load")
                page.evaluate("document.body.offsetHeight")  # layout done
                if n:
                    samples.append(time.perf_counter() - start)
            out[label] = statistics.median(samples)
        browser.close()
    return out


DIFF_SIZES = (10_000, 20_000, 200_000)


def build_diffs(db: Path) -> dict[int, tuple[int, int, int]]:
    """Per N: the operation that changed every other line of a 2N-line file, and the
    file's revisions before and after it."""
    ops: dict[int, tuple[int, int, int]] = {}
    with open_store(f"sqlite:///{db}") as store:
        for n in DIFF_SIZES:
            path = f"diff{n}.md"
            lines = b"".join(b"line %d\n" % i for i in range(2 * n))
            before = store.write(path, lines, author="bench").rev
            edited = b"".join(
                b"line %d\n" % i if i % 2 else b"changed %d\n" % i for i in range(2 * n)
            )
            after = store.write(path, edited, author="bench").rev
            ops[n] = (store.operations(limit=1)[0].id, before, after)
    return ops


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def get(port: int, path: str) -> tuple[float, int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return time.perf_counter() - start, response.status, body


def diff_rows(tmp: Path) -> None:
    db = tmp / "diffs.db"
    ops = build_diffs(db)
    proc, port = serve(db)
    try:
        print("\ndiffs of a file with every other line changed (server time, one request)")
        print("| changed lines | operation page | compare page | shown as | server peak RSS |")
        print("|---|---|---|---|---|")
        for n, (op, a, b) in ops.items():
            t_op, status, body = get(port, f"/op/{op}")
            assert status == 200, (status, body[:200])
            t_cmp, status, body = get(port, f"/history/diff{n}.md?a={a}&b={b}")
            assert status == 200, (status, body[:200])
            shown = "summary" if b"too large to show" in body else "diff"
            print(
                f"| {n:,} | {t_op:.2f} s | {t_cmp:.2f} s | {shown} | "
                f"{peak_rss_mib(proc.pid):.0f} MiB |"
            )
        print("\n`memfs diff FILE` (the CLI, whole process)")
        print("| changed lines | time | peak RSS | shown as |")
        print("|---|---|---|---|")
        for n in ops:
            start = time.perf_counter()
            child = subprocess.Popen(
                [MEMFS, "diff", "--store", f"sqlite:///{db}", f"diff{n}.md"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert child.stdout is not None
            out = child.stdout.read()
            child.stdout.close()
            _, _, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
            child.returncode = 0
            elapsed = time.perf_counter() - start
            shown = "summary" if "too large to show" in out else "diff"
            print(f"| {n:,} | {elapsed:.2f} s | {usage.ru_maxrss / 1024:.0f} MiB | {shown} |")
        biggest = max(ops)
        _, a, b = ops[biggest]
        path = f"/history/diff{biggest}.md?a={a}&b={b}"
        threads = [threading.Thread(target=lambda: _quiet_get(port, path)) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.5)  # the requests are being served (a benchmark may wait so)
        start = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        exit_s = time.perf_counter() - start
        for t in threads:
            t.join(60)
        print(f"\nSIGTERM with 8 compare pages of {biggest:,} changed lines in flight:")
        print(f"exited in {exit_s:.2f} s (status {proc.returncode})")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(15)


def _quiet_get(port: int, path: str) -> None:
    with contextlib.suppress(OSError):  # the server stopped under it, as meant
        get(port, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--diffs-only", action="store_true", help="Only the diff rows.")
    args = parser.parse_args()
    if args.diffs_only:
        with tempfile.TemporaryDirectory() as tmp:
            diff_rows(Path(tmp))
        return
    with tempfile.TemporaryDirectory() as tmp:
        diff_rows(Path(tmp))
        started = time.perf_counter()
        big_db, small_db = Path(tmp) / "big.db", Path(tmp) / "small.db"
        ids = build(big_db, args.ops)
        small_ids = build(small_db, 100)
        print(f"built {args.ops:,} + 100 operations in {time.perf_counter() - started:.1f} s")
        big, port = serve(big_db)
        small, small_port = serve(small_db)
        try:
            rows = [
                ("static stylesheet (HTTP floor)", "/static/style.css", "/static/style.css"),
                ("timeline, first page (50 operations)", "/", "/"),
                ("timeline, filtered by actor", "/?actor=planner", "/?actor=planner"),
                (
                    "an operation's page (one change)",
                    f"/op/{ids['one']}",
                    f"/op/{small_ids['one']}",
                ),
                (
                    "the 5,000-change operation, first page",
                    f"/op/{ids['big']}",
                    f"/op/{small_ids['big']}",
                ),
                ("a 1 MiB file", "/tree/huge.md", "/tree/huge.md"),
            ]
            print(f"\nserver time, median of {args.runs} (loopback HTTP round trip)")
            print(f"| page | {args.ops:,} operations | 100 operations | ratio |")
            print("|---|---|---|---|")
            for label, path, small_path in rows:
                t_big, t_small = (
                    timed(port, path, args.runs),
                    timed(small_port, small_path, args.runs),
                )
                ratio = t_big / t_small
                print(f"| {label} | {t_big * 1e3:.1f} ms | {t_small * 1e3:.1f} ms | {ratio:.2f}x |")
            times = browser_times(
                port,
                small_port,
                {
                    "timeline, first page": "/",
                    "the 5,000-change operation, first page": f"/op/{ids['big']}",
                    "a 1 MiB file (raw text)": "/tree/huge.md?raw=1",
                },
                max(3, args.runs // 4),
            )
            base = times["small timeline"]
            print("\nChromium, navigation to load event, median")
            print("| page | time | vs the small store's timeline |")
            print("|---|---|---|")
            for label, value in times.items():
                print(f"| {label} | {value * 1000:.0f} ms | {value / base:.2f}x |")
        finally:
            for proc in (big, small):
                proc.terminate()
                proc.wait(15)


if __name__ == "__main__":
    main()
