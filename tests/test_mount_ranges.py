"""Large files through a real mount: a file larger than the read cache keeps whole is
read by range from the store (memfs.store.ranges), for the file as it is and for the
revision an older open handle pins, and damage is refused (EIO) as for small files."""

from __future__ import annotations

import errno
import os
import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfs.mount.readcache import ReadCache
from memfs.store import open_store
from memfs.store.base import Store
from tests.fixtures.waiting import wait_for
from tests.test_mount_ops import Mount, start_mount

pytestmark = [
    pytest.mark.fuse,
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="needs /dev/fuse"),
]

# Past what the mount's read cache keeps whole (a quarter of its 64 MiB).
SIZE = 17 << 20


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(str(tmp_path / "store.db"))
    yield s
    s.close()


@pytest.fixture
def mnt(tmp_path: Path, store: Store) -> Iterator[Mount]:
    m = start_mount(tmp_path / "store.db", tmp_path / "mnt")
    yield m
    m.stop()


def noise(seed: int) -> bytes:
    return random.Random(seed).randbytes(SIZE)


def prose(seed: int) -> bytes:
    rng = random.Random(seed)
    words = [b"alpha ", b"beta\n", b"gamma ", b"delta\n"]
    return b"".join(rng.choice(words) for _ in range(SIZE // 5))[:SIZE]


def test_the_size_is_past_what_the_cache_keeps_whole() -> None:
    assert not ReadCache().keeps(SIZE)


@pytest.mark.parametrize("content", [noise, prose], ids=["noise", "zlib-packed prose"])
def test_a_large_file_reads_back_whole_and_in_pieces(
    mnt: Mount, store: Store, content: Callable[[int], bytes]
) -> None:
    data = content(1)
    store.write("big.bin", data, author="t")
    f = mnt.path / "big.bin"
    wait_for(lambda: f.exists() and f.stat().st_size == SIZE, timeout=10, what="file seen")
    assert f.read_bytes() == data
    # Direct I/O: every request reaches the daemon, none is served from the page cache.
    fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
    try:
        for offset in (SIZE - 4096, 0, 5 << 20, 12 << 20):
            assert os.pread(fd, 4096, offset) == data[offset : offset + 4096]
    finally:
        os.close(fd)


def test_an_open_handle_keeps_reading_its_revision_by_range(mnt: Mount, store: Store) -> None:
    old, new = noise(2), noise(3)
    store.write("big.bin", old, author="t")
    f = mnt.path / "big.bin"
    wait_for(lambda: f.exists() and f.stat().st_size == SIZE, timeout=10, what="file seen")
    fd = os.open(f, os.O_RDONLY)
    try:
        assert os.pread(fd, 4096, 0) == old[:4096]
        store.write("big.bin", new, author="other")

        def new_seen() -> bool:
            with open(f, "rb") as g:
                return g.read(4096) == new[:4096]

        wait_for(new_seen, timeout=10, what="the new revision seen by a new open")
        # The old handle reads the rest of the revision it opened.
        assert os.pread(fd, 1 << 20, 9 << 20) == old[9 << 20 : 10 << 20]
        assert os.pread(fd, 100, SIZE - 100) == old[-100:]
    finally:
        os.close(fd)
    assert f.read_bytes() == new


def test_a_damaged_large_file_is_refused(mnt: Mount, store: Store, tmp_path: Path) -> None:
    data = noise(4)
    made = store.write("big.bin", data, author="t")
    wrong = bytearray(data)
    wrong[SIZE // 2] ^= 0xFF
    db = sqlite3.connect(tmp_path / "store.db")
    try:
        db.execute(
            "UPDATE blobs SET codec = 0, content = ? WHERE id ="
            " (SELECT blob_id FROM blob_refs WHERE sha256 = ?)",
            (bytes(wrong), store.history("big.bin")[0].sha256),
        )
        db.commit()
    finally:
        db.close()
    assert made.rev == store.history("big.bin")[0].rev
    f = mnt.path / "big.bin"
    wait_for(lambda: f.exists() and f.stat().st_size == SIZE, timeout=10, what="file seen")
    with pytest.raises(OSError) as caught:
        f.read_bytes()
    assert caught.value.errno == errno.EIO
