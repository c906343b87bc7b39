"""What one revision costs the store, by the size of the content it stores.

    .venv/bin/python scripts/bench_revisions.py [--lines 5000] [--revisions 400] [--url URL]

An appender's revision adds a line to a file. The store kept the whole new content as
its blob (hashed, zlib-packed past 4 KiB on SQLite, written), a cost in proportion to
the file; it now keeps what the revision added after its base (memfs.store.deltas).
Four writers on two mounts make one revision per turn of writers, so this cost bounds
that layout (``scripts/bench_many_writers.py``). Rows, in one store:

* ``growing``: revisions of a text file of ``--lines`` lines (about 40 KB) that grows
  by one line each, compare-and-set on the revision before, as a mount's landing
  writes them;
* ``small`` (the baseline): the same revisions of a file that stays 64 bytes, what a
  revision would cost if it stored only what the append added.

Each alone (one transaction a revision), ten to a batch (one transaction, a write
each), and, for the growing file, ten to a series (``Store.write_series``, as a mount
lands a queue of turns), with the daemon's deferred maintenance (the search index off
the write path). Prints microseconds a revision, medians of 3 passes,
and growing/small.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memfs.store import open_store
from memfs.store.base import Act, Step, Store


def revisions(
    store: Store, path: str, grow: Callable[[bytes, int], bytes], n: int, batch: int
) -> float:
    """Microseconds a revision for ``n`` revisions of ``path``, ``batch`` a transaction."""
    content, entry = store.read(path)
    rev = entry.rev
    start = time.perf_counter()
    done = 0
    while done < n:
        with store.batch():
            for _ in range(batch):
                content = grow(content, done)
                writer = f"writer {done % 2}"  # two writers in turn, as the layout has
                with store.acting(Act(writer)):
                    rev = store.write(path, content, author=writer, expected_rev=rev).rev
                done += 1
    return (time.perf_counter() - start) / done * 1e6


def series(store: Store, path: str, n: int, per: int) -> float:
    """Microseconds a revision for ``n`` appended lines landed ``per`` a
    :meth:`Store.write_series` (a mount's queue of turns), two writers in turn."""
    content, entry = store.read(path)
    data, rev = bytearray(content), entry.rev
    hashed = hashlib.sha256(data)
    start = time.perf_counter()
    done = 0
    while done < n:
        steps = []
        for _ in range(per):
            line = f"w{done % 2}-{done}\n".encode()
            data += line
            hashed.update(line)
            writer = f"writer {done % 2}"
            steps.append(Step(len(data), hashed.hexdigest(), writer, Act(writer)))
            done += 1
        rev = store.write_series(path, data, steps, expected_rev=rev).rev
    return (time.perf_counter() - start) / done * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--revisions", type=int, default=400)
    parser.add_argument("--url", help="a store URL (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memfs-revisions-") as tmp:
        store = open_store(args.url or f"sqlite://{tmp}/m.db")
        store.defer_maintenance()  # as a mount daemon's store: no indexing in the write
        try:
            text = b"".join(f"w{i % 2}-{i}\n".encode() for i in range(args.lines))
            rows = {
                "growing": lambda data, i: data + f"w{i % 2}-{args.lines + i}\n".encode(),
                "small": lambda data, i: f"{i:063d}\n".encode(),
            }
            print(f"{'revision of':<12}{'alone us':>10}{'10 a batch us':>15}{'10 a series us':>16}")
            figures: dict[str, list[float]] = {}
            for name, grow in rows.items():
                path = f"{name}.md"
                store.write(path, text if name == "growing" else b"0" * 63 + b"\n", author="x")
                alone = statistics.median(
                    revisions(store, path, grow, args.revisions, 1) for _ in range(3)
                )
                batched = statistics.median(
                    revisions(store, path, grow, args.revisions, 10) for _ in range(3)
                )
                figures[name] = [alone, batched]
                in_series = "-"  # (only appends make a series)
                if name == "growing":
                    cost = statistics.median(
                        series(store, path, args.revisions, 10) for _ in range(3)
                    )
                    in_series = f"{cost:.0f}"
                size = store.stat(path).size
                print(
                    f"{name:<12}{alone:>10.0f}{batched:>15.0f}{in_series:>16}"
                    f"   ({size:,} bytes at the end)"
                )
            g, s = figures["growing"], figures["small"]
            print(f"{'growing/small':<12}{g[0] / s[0]:>9.2f}x{g[1] / s[1]:>14.2f}x")
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
