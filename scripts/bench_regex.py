"""Benchmark the regex engine of memfs search: RE2 in one pass over each file (memfs
now) against Python's ``re`` matched line by line (memfs before, the named baseline),
on the same texts in the same run.

``--files`` texts like ``scripts/bench_search.py``'s (eight to nine lines each, plus a
100 KiB note of short lines every 500 files) are confirmed against patterns no index
can narrow (no literal of three characters), so every file is read: what
``Query.matching_lines`` costs per search. Medians of ``--runs``; read the ratios.
The catastrophic pattern ``(a+)+$`` runs on one line of 5,000 ``a`` and ``!``: the
baseline is given ``--evil-seconds`` and stopped there (it would run for hours).

    .venv/bin/python scripts/bench_regex.py [--files 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memfs.store.matching import Query, parse_query  # noqa: E402

PATTERNS = [r"\d{4}-\d\d", r"[A-Z]\w+ed\b", r"^(of|line) .*7$"]


def texts(files: int) -> list[str]:
    out = []
    for i in range(files):
        lines = [f"file {i}: some remembered detail, line {n} of text for search" for n in range(8)]
        if i % 100 == 7:
            lines.append(f"Reported on 2026-{i % 12 + 1:02d} by Ada")
        if i % 500 == 0:
            lines.extend(f"x{n}" for n in range(20_000))  # a long note of short lines
        out.append("\n".join(lines) + "\n")
    return out


def baseline(pattern: str) -> Query:
    """The previous engine: Python's re, each line on its own."""
    return Query(pattern, True, (re.compile(pattern),), (), float("inf"), None)


def current(pattern: str) -> Query:
    return parse_query(pattern, regex=True, budget=3600.0)


def timed(query: Query, corpus: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    hits = sum(1 for text in corpus if query.matching_lines(text))
    return time.perf_counter() - start, hits


def _evil_baseline() -> None:
    re.search(r"(a+)+$", "a" * 5000 + "!")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--evil-seconds", type=float, default=10.0)
    args = parser.parse_args()
    corpus = texts(args.files)
    print(f"{args.files:,} files, {sum(map(len, corpus)) / 2**20:.1f} MiB, medians of {args.runs}")
    print(f"{'pattern':<22} {'re, by line':>12} {'RE2, one pass':>14} {'ratio':>7}  hits")
    for pattern in PATTERNS:
        old, new = [], []
        for _ in range(args.runs):  # interleaved, so the machine's load hits both alike
            t_old, h_old = timed(baseline(pattern), corpus)
            t_new, h_new = timed(current(pattern), corpus)
            assert h_old == h_new, (pattern, h_old, h_new)
            old.append(t_old)
            new.append(t_new)
        a, b = statistics.median(old), statistics.median(new)
        print(f"{pattern:<22} {a:>10.3f} s {b:>12.3f} s {b / a:>6.2f}x  {h_new}")
    start = time.perf_counter()
    assert current(r"(a+)+$").matching_lines("a" * 5000 + "!\n") is None
    re2_evil = time.perf_counter() - start
    child = multiprocessing.Process(target=_evil_baseline)
    start = time.perf_counter()
    child.start()
    child.join(args.evil_seconds)
    finished = not child.is_alive()
    if not finished:
        child.kill()
        child.join()
    took = time.perf_counter() - start
    old_text = f"{took:.3f} s" if finished else f"> {args.evil_seconds:g} s (stopped)"
    print(f"{'(a+)+$ on 5,000 a':<22} {old_text:>12} {re2_evil:>12.6f} s")


if __name__ == "__main__":
    main()
