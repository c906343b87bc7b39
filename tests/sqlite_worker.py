"""A separate process that uses an SQLite store, for the multi-process tests.

Run as ``python -m tests.sqlite_worker COMMAND DB ARGS...`` from the project root:

- ``write DB PREFIX N``: write PREFIX/0 .. PREFIX/N-1, printing ``ok I REV SHA256``
  after each write has returned (committed); ``N`` of 0 means until killed.
- ``words DB PREFIX N``: like ``write``, with text content (``text(PREFIX, I)``), for
  the search index's tests.
- ``bump DB PATH N``: N read-modify-write increments of the counter file PATH, retrying
  on Conflict, printing ``bumped K`` at the end.
- ``follow DB SINCE N TIMEOUT``: poll ``changes(since=SINCE)`` until N ``create``
  records were seen, printing ``seen PATH`` for each; exit 3 if TIMEOUT seconds pass.
- ``session DB``: keep the store open and run one command per line of stdin, as a
  long-lived daemon would: ``write PATH SIZE`` writes :func:`blob` and prints
  ``ok REV`` or ``full`` (StoreFull); ``read PATH`` prints ``sha SHA256`` or
  ``missing``; ``maintain`` checkpoints and prints ``ok``. End of input closes the store.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable

from memfs.errors import Conflict, NotFound, StoreFull
from memfs.store import open_store


def content(prefix: str, i: int) -> bytes:
    """Deterministic content of a few pages, so a write spans several database pages."""
    seed = hashlib.sha256(f"{prefix}/{i}".encode()).digest()
    return seed * (64 + (i % 7) * 64)


def blob(path: str, size: int) -> bytes:
    """Deterministic content of ``size`` bytes for ``path``, the same in every process."""
    seed = hashlib.sha256(path.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def text(prefix: str, i: int) -> bytes:
    """Deterministic text of a few pages, with a word only file I holds."""
    return f"kumquat word{i}x in {prefix}\n".encode() * (40 + (i % 7) * 40)


def write(db: str, prefix: str, n: int, make: Callable[[str, int], bytes] | None = None) -> None:
    make = content if make is None else make
    with open_store(db) as store:
        store.mkdir(prefix, author=prefix, exist_ok=True)
        i = 0
        while n == 0 or i < n:
            data = make(prefix, i)
            entry = store.write(f"{prefix}/{i}", data, author=prefix)
            print(f"ok {i} {entry.rev} {hashlib.sha256(data).hexdigest()}", flush=True)
            i += 1


def bump(db: str, path: str, n: int) -> None:
    with open_store(db) as store:
        for _ in range(n):
            while True:
                data, entry = store.read(path)
                try:
                    store.write(
                        path, b"%d" % (int(data) + 1), author="bump", expected_rev=entry.rev
                    )
                    break
                except Conflict:
                    continue
        print(f"bumped {n}", flush=True)


def follow(db: str, since: int, n: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    seen = 0
    with open_store(db) as store:
        print("ready", flush=True)
        while seen < n:
            if time.monotonic() > deadline:
                return 3
            batch = store.changes(since=since)
            for change in batch:
                since = change.seq
                if change.kind == "create":
                    seen += 1
                    print(f"seen {change.path}", flush=True)
            if not batch:
                time.sleep(0.01)  # polling interval of a feed follower, not a wait-and-hope
    return 0


def session(db: str) -> None:
    with open_store(db) as store:
        print("ready", flush=True)
        for line in sys.stdin:
            command, *args = line.split()
            if command == "write":
                try:
                    entry = store.write(args[0], blob(args[0], int(args[1])), author="session")
                    print(f"ok {entry.rev}", flush=True)
                except StoreFull:
                    print("full", flush=True)
            elif command == "read":
                try:
                    print(f"sha {hashlib.sha256(store.read(args[0])[0]).hexdigest()}", flush=True)
                except NotFound:
                    print("missing", flush=True)
            elif command == "maintain":
                store.maintain()
                print("ok", flush=True)


def main(argv: list[str]) -> int:
    command, db, *args = argv
    if command == "write":
        write(db, args[0], int(args[1]))
    elif command == "words":
        write(db, args[0], int(args[1]), text)
    elif command == "bump":
        bump(db, args[0], int(args[1]))
    elif command == "follow":
        return follow(db, int(args[0]), int(args[1]), float(args[2]))
    elif command == "session":
        session(db)
    else:
        print(f"unknown command {command}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
