"""SQLite's range reader holds a blob handle open between reads (a sequential read
walks the blob's overflow chain once); the handle holds a read snapshot, so an idle
one must let go, or the WAL could never be restarted while a large file sits open."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from memfs.store import open_store
from memfs.store.sqlite import SqliteStore
from tests.fixtures.waiting import wait_for


def checkpoint_truncates(path: Path) -> bool:
    db = sqlite3.connect(path, timeout=0)  # busy now, not after waiting for it
    try:
        busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return bool(busy == 0)
    finally:
        db.close()


def test_an_idle_range_reader_lets_the_wal_restart(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path}/s.db")
    assert isinstance(store, SqliteStore)
    try:
        data = os.urandom(6 << 20)
        made = store.write("big.bin", data, author="t")
        reader = store.open_revision("big.bin", made.rev)
        assert reader.read(5 << 20, 10) == data[5 << 20 : (5 << 20) + 10]
        store.write("other.md", b"a change after the reader's snapshot\n", author="t")
        assert not checkpoint_truncates(store.path)  # the open handle's snapshot holds it
        wait_for(lambda: checkpoint_truncates(store.path), timeout=15, what="idle handle closed")
        # The reader reads on after its handle was closed, from the same content.
        assert reader.read(1 << 20, 10) == data[1 << 20 : (1 << 20) + 10]
        reader.close()
        assert reader.read(0, 10) == data[:10]  # a read racing the close still works
    finally:
        store.close()
