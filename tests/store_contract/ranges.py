"""The contract for reading a revision by byte range (``Store.open_revision``): every
range is the content's own bytes, whichever way the backend stores them (packed or not,
compressed by the database or not); what cannot be read raises as ``read_revision``
does; damage is refused at the open, and bytes cut short after it at the read."""

from __future__ import annotations

import random

import pytest

from memfs.errors import Damaged, NotFound, Redacted
from memfs.store.base import Store
from memfs.store.ranges import CHUNK
from tests.store_contract.common import A
from tests.store_contract.integrity import Damage, sha

# Larger than the chunks a reader checks and inflates in, so every path crosses them.
SIZE = 2 * CHUNK + 12_345


def noise(size: int, seed: int = 7) -> bytes:
    """Bytes no compressor shrinks: stored as they are."""
    return random.Random(seed).randbytes(size)


def prose(size: int) -> bytes:
    """Text that packs well (SQLite zlib-packs it, PostgreSQL compresses it)."""
    words = [b"alpha ", b"beta ", b"gamma\n", b"delta ", b"epsilon ", b"zeta\n"]
    rng = random.Random(3)
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words)
    return bytes(out[:size])


class RangesContract:
    @pytest.mark.parametrize("content", [noise, prose], ids=["noise", "prose"])
    def test_every_range_is_the_contents_own_bytes(self, store: Store, content: object) -> None:
        assert callable(content)
        data: bytes = content(SIZE)
        made = store.write("big.bin", data, author=A)
        reader = store.open_revision("big.bin", made.rev)
        assert (reader.path, reader.rev, reader.size, reader.sha256) == (
            "big.bin",
            made.rev,
            SIZE,
            sha(data),
        )
        # A sequential read in the kernel's 128 KiB requests, then reads that go back,
        # jump ahead, overlap, straddle the end, and ask for nothing.
        step = 128 << 10
        assert b"".join(reader.read(o, step) for o in range(0, SIZE, step)) == data
        for offset, size in [
            (0, 10),
            (CHUNK - 5, 10),
            (5, CHUNK + 100),
            (SIZE - 3, 100),
            (SIZE, 10),
            (SIZE + 1000, 10),
            (17, 0),
            (2 * CHUNK + 1, 4096),
            (1, 1),
        ]:
            assert reader.read(offset, size) == data[offset : offset + size], (offset, size)

    def test_an_old_revision_reads_as_it_was_and_a_reader_outlives_a_new_write(
        self, store: Store
    ) -> None:
        old_data, new_data = noise(SIZE, 1), prose(SIZE // 2)
        old = store.write("f.bin", old_data, author=A)
        reader = store.open_revision("f.bin", old.rev)
        new = store.write("f.bin", new_data, author=A)
        assert reader.read(CHUNK, 100) == old_data[CHUNK : CHUNK + 100]
        assert store.open_revision("f.bin", old.rev).read(0, 50) == old_data[:50]
        assert store.open_revision("f.bin", new.rev).read(10, 50) == new_data[10:60]

    def test_an_empty_file_reads_empty(self, store: Store) -> None:
        made = store.write("empty", b"", author=A)
        reader = store.open_revision("empty", made.rev)
        assert reader.size == 0 and reader.read(0, 4096) == b""

    def test_what_is_not_retained_or_was_redacted_raises_as_read_revision(
        self, store: Store
    ) -> None:
        first = store.write("f.md", b"secret\n", author=A)
        store.write("f.md", b"public\n", author=A)
        with pytest.raises(NotFound):
            store.open_revision("f.md", first.rev + 100)
        with pytest.raises(NotFound):
            store.open_revision("other.md", first.rev)
        store.redact("f.md", first.rev, author=A)
        with pytest.raises(Redacted):
            store.open_revision("f.md", first.rev)

    @pytest.mark.parametrize("content", [noise, prose], ids=["noise", "prose"])
    def test_damaged_content_is_refused_when_opened(
        self, store: Store, damage: Damage, content: object
    ) -> None:
        assert callable(content)
        data: bytes = content(SIZE)
        made = store.write("big.bin", data, author=A)
        wrong = bytearray(data)
        wrong[CHUNK + 7] ^= 0xFF
        damage(store, sha(data), bytes(wrong))
        with pytest.raises(Damaged) as caught:
            store.open_revision("big.bin", made.rev)
        assert (caught.value.path, caught.value.rev, caught.value.sha256) == (
            "big.bin",
            made.rev,
            sha(data),
        )

    def test_bytes_cut_short_after_the_open_are_never_served(
        self, store: Store, damage: Damage
    ) -> None:
        data = noise(SIZE, 5)
        made = store.write("big.bin", data, author=A)
        reader = store.open_revision("big.bin", made.rev)
        assert reader.read(0, 10) == data[:10]
        damage(store, sha(data), data[: CHUNK // 2])
        # The checked bytes (a reader that holds a snapshot from before the damage:
        # SQLite's open blob handle) or Damaged; never other bytes.
        try:
            got = reader.read(CHUNK, 4096)
        except Damaged as caught:
            assert caught.rev == made.rev
        else:
            assert got == data[CHUNK : CHUNK + 4096]
        # A reader opened now refuses it.
        with pytest.raises(Damaged):
            store.open_revision("big.bin", made.rev)

    def test_a_large_bytearray_is_stored_as_given_and_reads_back_by_range(
        self, store: Store
    ) -> None:
        # A door's buffer, handed over without a copy (SQLite streams it into its row).
        data = bytearray(noise(5 * CHUNK + 3, 9))
        made = store.write("buf.bin", data, author=A)
        assert made.size == len(data) and bytes(data) == noise(5 * CHUNK + 3, 9)
        assert store.read("buf.bin")[0] == data
        reader = store.open_revision("buf.bin", made.rev)
        assert reader.sha256 == sha(bytes(data))
        assert reader.read(4 * CHUNK, 100) == data[4 * CHUNK : 4 * CHUNK + 100]
        # The same content again is stored once and still reads back.
        again = store.write("copy.bin", bytes(data), author=A)
        assert store.open_revision("copy.bin", again.rev).read(0, 10) == data[:10]
