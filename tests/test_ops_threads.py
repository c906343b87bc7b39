"""The mount's operations from several FUSE threads at once (libfuse serves requests on
many threads): what one thread's lookups remember never breaks another's rename."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tests.fixtures.ops import Kernel

MakeKernel = Callable[..., Kernel]


def test_renames_meet_lookups_of_other_threads_without_an_error(kernel: MakeKernel) -> None:
    k: Kernel = kernel()
    with k.store.batch():
        for i in range(4000):
            k.store.write(f"b/f{i}.md", b"x", author="seed", parents=True)
        k.store.mkdir("a", author="seed")
    done = threading.Event()
    failures: list[BaseException] = []

    def look() -> None:
        i = 0
        while not done.is_set():
            try:
                k.ops.getattr(f"/b/f{i % 4000}.md")
            except BaseException as exc:
                failures.append(exc)
                return
            i += 1
            if i % 4000 == 0:
                k.ops._meta.forget((), ("b",))  # lookups miss the cache and remember anew

    looker = threading.Thread(target=look)
    looker.start()
    try:
        names = ["/a", "/c"]
        for n in range(300):
            k.ops.rename(names[n % 2], names[(n + 1) % 2])
    finally:
        done.set()
        looker.join(timeout=30)
    assert not looker.is_alive() and failures == []
