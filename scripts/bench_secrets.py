"""Benchmark the secrets scan on the handler's write path: creating 100 KB notes with
``secrets="redact"`` (and ``"refuse"``) against the same creates with ``"allow"`` (no
scan) in the same run, alternating so machine load hits all alike. The notes are of
several shapes (prose, code, a base64 image, hex hashes, one with many credentials, and
adversarial runs that make some regexes backtrack). Reported per shape: median create
time per policy and the ratio to ``allow``; medians over ``--repeat`` creates.

    .venv/bin/python scripts/bench_secrets.py [--repeat 15] [--kib 100] [--json]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import shutil
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memfs.handler import MemoryHandler

POLICIES = ("allow", "redact", "refuse")


def shapes(size: int) -> dict[str, str]:
    r = random.Random(7)

    def fill(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    image = base64.b64encode(r.randbytes(size)).decode()
    key = "".join(r.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    return {
        "prose": fill(
            "Alice prefers tea; the build runs `make test` (see https://example.com/a).\n"
        ),
        "code": fill('password = os.environ["DB_PASSWORD"]  # token=abc key: value\n'),
        "base64-image": ("data:image/png;base64," + image)[:size],
        "hex-hashes": fill("11f6ad8ec52a2984abaafd7c3b516503785c2072\n"),
        "many-secrets": fill(f"AKIA{key} password=Hunter22x\n"),
        "eyJ-run": fill("eyJ"),
        "one-long-line": fill("a/"),
    }


def bench(repeat: int, size: int) -> dict[str, dict[str, float]]:
    notes = shapes(size)
    results: dict[str, dict[str, float]] = {}
    root = Path(tempfile.mkdtemp(prefix="bench-secrets-"))
    try:
        handlers = {
            p: MemoryHandler(root / p, secrets=p, max_file_bytes=2 * size) for p in POLICIES
        }
        for name, note in notes.items():
            times: dict[str, list[float]] = {p: [] for p in POLICIES}
            for i in range(repeat):
                order = POLICIES if i % 2 == 0 else POLICIES[::-1]
                for policy in order:
                    t0 = time.perf_counter()
                    result = handlers[policy].create(f"/memories/{name}-{i}.md", note)
                    times[policy].append(time.perf_counter() - t0)
                    if result.is_error and not (policy == "refuse" and name == "many-secrets"):
                        raise SystemExit(f"{policy} create of {name} failed: {result.content}")
            med = {p: statistics.median(times[p]) for p in POLICIES}
            results[name] = {
                **{f"{p}_ms": round(med[p] * 1000, 2) for p in POLICIES},
                "redact_over_allow": round(med["redact"] / med["allow"], 1),
            }
    finally:
        shutil.rmtree(root)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--kib", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repeat < 1 or args.kib < 1:
        parser.error("--repeat and --kib must be at least 1")
    results = bench(args.repeat, args.kib * 1024)
    if args.json:
        print(json.dumps(results))
        return
    print(f"create of a {args.kib} KiB note, median of {args.repeat}, ms")
    print(f"{'shape':<14} {'allow':>8} {'redact':>8} {'refuse':>8} {'redact/allow':>13}")
    for name, r in results.items():
        print(
            f"{name:<14} {r['allow_ms']:>8} {r['redact_ms']:>8} {r['refuse_ms']:>8} "
            f"{r['redact_over_allow']:>13}"
        )


if __name__ == "__main__":
    main()
