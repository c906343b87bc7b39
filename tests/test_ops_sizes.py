"""What a reader gets when another writer's change meets the kernel's cached size
(memfs.mount.sizes): never a revision cut short at an older size, nor padded with zeros
up to a newer one. MemfsOperations called as libfuse calls it, with the follower of the
change feed running; the two savers through a rename on two real mounts are
``scripts/bench_many_writers.py --rename-savers``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from memfs.mount.sizes import KernelSizes
from tests.fixtures.mount import wait_for
from tests.fixtures.ops import Kernel

MakeKernel = Callable[..., Kernel]

V1 = b"one\n"
V2 = b"one\ntwo\n"


def seen(k: Kernel, path: str) -> None:
    """Wait until the follower told the kernel to forget ``path`` (another writer's change
    reached this mount)."""
    wait_for(lambda: "/" + path in k.told, 10, what=f"the kernel told to forget {path}")


def test_an_open_the_kernel_may_hold_another_size_for_reads_past_its_page_cache(
    kernel: MakeKernel,
) -> None:
    k = kernel()
    other = k.other()
    other.write("log.md", V1, author="someone")
    seen(k, "log.md")
    k.told.clear()
    assert k.ops.getattr("/log.md")["st_size"] == len(V1)  # the kernel holds this size
    opened = k.ops.open_file("/log.md", os.O_RDONLY)
    assert not opened.direct_io  # its size is the revision's: the page cache serves it
    k.ops.release("/log.md", opened.fh)
    other.write("log.md", V2, author="other mount")
    seen(k, "log.md")
    # The kernel's size may still be the first revision's (the invalidation and the
    # open race): the page cache would cut the read at 4 bytes.
    opened = k.ops.open_file("/log.md", os.O_RDONLY)
    assert opened.direct_io
    assert k.ops.read("/log.md", 4096, 0, opened.fh) == V2
    k.ops.release("/log.md", opened.fh)
    assert k.ops.getattr("/log.md")["st_size"] == len(V2)
    again = k.ops.open_file("/log.md", os.O_RDONLY)
    assert not again.direct_io  # the kernel was given its size since
    k.ops.release("/log.md", again.fh)


def test_while_a_handle_reads_an_older_revision_the_kernel_is_shown_its_size(
    kernel: MakeKernel,
) -> None:
    """A reader opened the first revision through the page cache; another mount's change
    arrives and the kernel asks for the size again before the read: it gets the first
    revision's (the pages are its), not the new one's, which padded the read with zeros
    that the reader then saved (two savers on two mounts). Once the reader closes, the
    kernel is told to forget it and gets the file's own."""
    k = kernel()
    other = k.other()
    other.write("log.md", V1, author="someone")
    seen(k, "log.md")
    k.told.clear()
    k.ops.getattr("/log.md")
    reader = k.ops.open_file("/log.md", os.O_RDONLY)
    assert not reader.direct_io
    other.write("log.md", V2, author="other mount")
    seen(k, "log.md")
    assert k.ops.getattr("/log.md")["st_size"] == len(V1)
    assert k.ops.read("/log.md", 4096, 0, reader.fh) == V1
    later = k.ops.open_file("/log.md", os.O_RDONLY)  # another reader: the new revision
    assert later.direct_io
    assert k.ops.read("/log.md", 4096, 0, later.fh) == V2
    k.ops.release("/log.md", later.fh)
    k.told.clear()
    k.ops.release("/log.md", reader.fh)
    seen(k, "log.md")  # (from the mount's own queue of paths to forget)
    assert k.ops.getattr("/log.md")["st_size"] == len(V2)


def test_a_handle_reads_the_revision_it_opened_when_the_store_moved_on_unseen(
    kernel: MakeKernel,
) -> None:
    """No follower: this mount has not heard of the other writer's change, so what it
    knows of the file is the revision the handle pinned, but the store holds another.
    The handle reads what it opened (the revision its reader's save merges against),
    not the newer bytes (whose lines the save then doubled)."""
    k = kernel(start=False)
    other = k.other()
    other.write("log.md", V1, author="someone")
    k.ops.getattr("/log.md")
    opened = k.ops.open_file("/log.md", os.O_RDONLY)
    other.write("log.md", V2, author="other mount")
    assert k.ops.read("/log.md", 4096, 0, opened.fh) == V1
    k.ops.release("/log.md", opened.fh)


def test_sizes_are_forgotten_by_path_and_below_a_directory() -> None:
    sizes = KernelSizes(limit=3)
    sizes.told("a/x.md", 4)
    sizes.told("a/y.md", 5)
    sizes.told("b.md", 6)
    assert sizes.holds("a/x.md", 4) and not sizes.holds("a/x.md", 5)
    sizes.forget_under(["a"])
    assert not sizes.holds("a/x.md", 4) and not sizes.holds("a/y.md", 5)
    assert sizes.holds("b.md", 6)
    sizes.forget(["b.md"])
    assert not sizes.holds("b.md", 6)
    for i in range(4):  # past the limit: all forgotten (unknown costs only direct reads)
        sizes.told(f"f{i}.md", 1)
    assert not sizes.holds("f0.md", 1) and sizes.holds("f3.md", 1)
    sizes.forget_under([""])
    assert not sizes.holds("f3.md", 1)
