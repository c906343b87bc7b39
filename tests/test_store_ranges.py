"""How much a range reader fetches (memfs.store.ranges): the open checks every stored
byte once, and after it a read fetches its own range (raw bytes) or moves forward
through the packed ones (zlib), so a sequential read of a large file costs one pass of
the stored bytes, not one per request. The backends' readers are checked for content
by the store contract (tests/store_contract/ranges.py)."""

from __future__ import annotations

import hashlib
import random
import zlib

import pytest

from memfs.errors import Damaged
from memfs.store.ranges import CHUNK, StoredReader

SIZE = 5 * CHUNK + 999
STEP = 128 << 10


class Stored:
    """Stored bytes with a count of what was fetched."""

    def __init__(self, stored: bytes) -> None:
        self.stored = stored
        self.fetched = 0

    def fetch(self, offset: int, size: int) -> bytes | None:
        got = self.stored[offset : offset + size]
        self.fetched += len(got)
        return got


def content() -> bytes:
    rng = random.Random(11)
    return b"".join(rng.choice([b"one ", b"two\n", b"three "]) for _ in range(SIZE // 3))[:SIZE]


@pytest.mark.parametrize("packed", [False, True], ids=["raw", "zlib"])
def test_a_sequential_read_fetches_the_stored_bytes_once_after_the_check(packed: bool) -> None:
    data = content()
    stored = Stored(zlib.compress(data, 1) if packed else data)
    reader = StoredReader(
        "f", 3, len(data), hashlib.sha256(data).hexdigest(),
        fetch=stored.fetch, packed=packed, stored=len(stored.stored),
    )  # fmt: skip
    assert stored.fetched == len(stored.stored)  # the check: one pass
    stored.fetched = 0
    assert b"".join(reader.read(o, STEP) for o in range(0, SIZE, STEP)) == data
    assert stored.fetched <= len(stored.stored) + CHUNK


def test_a_raw_read_fetches_only_its_range() -> None:
    data = random.Random(2).randbytes(SIZE)
    stored = Stored(data)
    reader = StoredReader(
        "f", 3, SIZE, hashlib.sha256(data).hexdigest(),
        fetch=stored.fetch, packed=False, stored=SIZE,
    )  # fmt: skip
    stored.fetched = 0
    assert reader.read(3 * CHUNK + 5, 4096) == data[3 * CHUNK + 5 : 3 * CHUNK + 5 + 4096]
    assert stored.fetched == 4096


def test_packed_bytes_that_do_not_inflate_are_damage() -> None:
    data = content()
    packed = bytearray(zlib.compress(data, 1))
    packed[len(packed) // 2 :] = b"\0" * (len(packed) - len(packed) // 2)
    stored = Stored(bytes(packed))
    with pytest.raises(Damaged):
        StoredReader(
            "f", 3, len(data), hashlib.sha256(data).hexdigest(),
            fetch=stored.fetch, packed=True, stored=len(packed),
        )  # fmt: skip
