"""SQLite specifics of per-path history: content stored once per SHA-256, blobs deleted
with their last revision, lazy bounded sweeping, and the migration from schema 1."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

from memfs.store import open_store
from memfs.store import sqlite_schema as schema
from memfs.store.base import Store
from memfs.store.rules import SWEEP_ROWS

A = "tester"
DAY = 86_400 * 10**9


def count(path: Path, sql: str) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute(sql).fetchone()[0])
    finally:
        db.close()


def blobs(path: Path) -> int:
    return count(path, "SELECT count(*) FROM blobs")


def test_equal_contents_and_arrivals_share_one_blob(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(db) as store:
        for name in ("a", "b", "c"):
            store.write(name, b"same words", author=A)
        store.write("t", b"same words", author=A)
        store.rename("t", "a", author=A, overwrite=True)
        store.rename("b", "moved", author=A)
        assert blobs(db) == 1
        assert count(db, "SELECT count(*) FROM revisions") == 6
        assert count(db, "SELECT refs FROM blob_refs") == 6
        store.write("c", b"other words", author=A)
        assert blobs(db) == 2


def test_a_blob_goes_with_its_last_revision(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(db, history=0) as store:
        store.write("f", b"first", author=A)
        store.write("g", b"shared", author=A)
        store.write("f", b"shared", author=A)  # f's "first" revision is pruned
        assert blobs(db) == 1
        store.delete("g", author=A)
        store.delete("f", author=A)
        assert blobs(db) == 1  # the tombstones still hold it
        store.clock = lambda: time.time_ns() + 31 * DAY
        store.write("h", b"new", author=A)  # the sweep removes both expired tombstones
        assert blobs(db) == 1 and count(db, "SELECT count(*) FROM blob_refs") == 1
        assert count(db, "SELECT count(*) FROM gone") == 0
        assert store.read("h")[0] == b"new"


def test_sweeping_removes_at_most_a_batch_per_write(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    files = SWEEP_ROWS + SWEEP_ROWS // 2
    with open_store(db) as store:
        for i in range(files):
            store.write(f"d/f{i}", b"%d" % i, author=A, parents=True)
        store.delete("d", author=A, recursive=True)
        store.clock = lambda: time.time_ns() + 31 * DAY
        assert count(db, "SELECT count(*) FROM revisions") == files
        store.write("x", b"1", author=A)
        assert count(db, "SELECT count(*) FROM revisions") == files - SWEEP_ROWS + 1
        store.write("x", b"2", author=A)
        assert count(db, "SELECT count(*) FROM revisions WHERE path != 'x'") == 0
        assert count(db, "SELECT count(*) FROM gone") == 0
        assert blobs(db) == 2


def test_a_trimmed_path_is_trimmed_on_disk_by_later_writes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(db) as store:
        for i in range(5):
            store.write("f", b"v%d" % i, author=A)
        store.delete("f", author=A)
        store.write("x", b"x", author=A)
        assert count(db, "SELECT count(*) FROM revisions WHERE path = 'f'") == 1
        assert count(db, "SELECT count(*) FROM gone WHERE trim_ns IS NULL") == 1
        assert [r.size for r in store.history("f")] == [2]


def _schema_1_store(path: Path) -> None:
    """A store as memfs with schema 1 left it: revisions keyed by entry, content inline."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    schema.MIGRATIONS[0](db)
    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    add = "INSERT INTO entries (id, path, parent, kind, size, mode, mtime_ns, ctime_ns, rev)"
    db.execute(add + " VALUES (2, 'notes', '', 'dir', 0, 448, 1, 1, 1)")
    db.execute(add + " VALUES (3, 'notes/a.md', 'notes', 'file', 2, 384, 1, 1, 3)")
    db.execute(add + " VALUES (4, 'b.md', '', 'file', 2, 384, 1, 1, 5)")  # renamed once
    for rev, entry, author, content in [
        (2, 3, "alice", b"a1"),
        (3, 3, "bob", b"a2"),
        (4, 4, "carol", b"b1"),
        (5, 4, "dave", b"a2"),
    ]:
        db.execute(
            "INSERT INTO revisions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, entry, author, 1000 + rev, 2, hashlib.sha256(content).hexdigest(), content),
        )
    db.execute("UPDATE counters SET value = 5")
    db.execute("COMMIT")
    db.close()


def test_a_schema_1_store_migrates_with_every_revision_readable(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _schema_1_store(db)
    with open_store(db) as store:
        assert count(db, "PRAGMA user_version") == schema.SCHEMA_VERSION
        _check_migrated(store)
        # Schema 4's counters start from what the tree held.
        files = [e for e in store.walk() if e.is_file]
        assert (store.usage().files, store.usage().bytes) == (2, sum(e.size for e in files))
        assert blobs(db) == 3  # "a2" is stored once for both files
        assert store.write("b.md", b"b2", author=A, expected_rev=5).rev == 6
    with open_store(db) as store:  # and it opens again without migrating
        assert [r.rev for r in store.history("b.md")] == [6, 5, 4]


def _check_migrated(store: Store) -> None:
    history = store.history("notes/a.md")
    assert [(r.rev, r.author, r.time_ns, r.size) for r in history] == [
        (3, "bob", 1003, 2),
        (2, "alice", 1002, 2),
    ]
    assert [store.read_revision("notes/a.md", r) for r in (3, 2)] == [b"a2", b"a1"]
    assert [r.author for r in store.history("b.md")] == ["dave", "carol"]
    assert [store.read_revision("b.md", r) for r in (5, 4)] == [b"a2", b"b1"]
    assert store.read("notes/a.md")[0] == b"a2" and store.read("b.md")[0] == b"a2"
    assert store.stat("b.md").rev == 5


def test_compressible_content_is_stored_packed_and_reads_back_whole(tmp_path: Path) -> None:
    db = tmp_path / "packed.db"
    sparse = b"\0" * (8 << 20) + b"tail"  # a file written past its end: mostly a hole
    noise = os.urandom(1 << 20)
    with open_store(str(db)) as store:
        store.write("sparse.bin", sparse, author="a")
        store.write("noise.bin", noise, author="a")
        store.write("small.txt", b"x" * 100, author="a")
        assert store.read("sparse.bin")[0] == sparse
        rev = store.history("sparse.bin")[0].rev
        store.truncate("sparse.bin", 4 << 20, author="a")
        assert store.read("sparse.bin")[0] == b"\0" * (4 << 20)
        assert store.read_revision("sparse.bin", rev) == sparse
        assert store.read("noise.bin")[0] == noise
        assert store.read("small.txt")[0] == b"x" * 100
    rows = sqlite3.connect(db).execute("SELECT codec, length(content) FROM blobs").fetchall()
    packed = [length for codec, length in rows if codec == 1]
    assert len(packed) == 2 and all(length < 100_000 for length in packed)  # both sparse ones
    assert sorted(length for codec, length in rows if codec == 0) == [100, 1 << 20]


def _appended(store: Store, path: str, data: bytes, lines: int) -> bytes:
    for i in range(lines):
        data += f"appended line {i:05d}, about forty bytes of it\n".encode()
        store.write(path, data, author=A)
    return data


def test_a_growing_file_stores_what_each_revision_added_and_lets_it_all_go(
    tmp_path: Path,
) -> None:
    from memfs.store.deltas import MAX_TAIL

    db = tmp_path / "m.db"
    base = b"# the log\n" * 600  # 6,000 bytes
    lines = 2 * MAX_TAIL // 44
    with open_store(db, history=1000, deleted_history_days=0) as store:
        store.write("log.md", base, author=A)
        final = _appended(store, "log.md", base, lines)
        continuing = count(db, "SELECT count(*) FROM blobs WHERE base IS NOT NULL")
        whole = count(db, "SELECT count(*) FROM blobs WHERE base IS NULL")
        # A whole copy about every MAX_TAIL bytes of growth; every other revision a tail.
        assert continuing >= lines - 4 and whole <= 4
        stored = count(db, "SELECT sum(length(content)) FROM blobs")
        assert stored < lines * MAX_TAIL // 2  # not a whole file (6-15 KB) a revision
        # Each base counts its revision and every row continuing it.
        assert (
            count(
                db,
                "SELECT count(*) FROM blob_refs br JOIN blobs b ON b.id = br.blob_id"
                " WHERE b.base IS NULL AND br.refs != 1 + (SELECT count(*) FROM blobs c"
                " WHERE c.base = br.sha256)",
            )
            == 0
        )
        assert store.read("log.md")[0] == final
        store.delete("log.md", author=A)
        store.clock = lambda: time.time_ns() + 2 * DAY
        for _ in range(lines // SWEEP_ROWS + 2):  # the sweep takes a batch per write
            store.write("other.md", b"x", author=A)
        assert blobs(db) == 1 and count(db, "SELECT count(*) FROM blob_refs") == 1


def test_a_base_left_by_its_revision_goes_with_the_last_row_continuing_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    base = b"0123456789" * 500
    with open_store(db, history=1) as store:  # the current revision and one before
        store.write("log.md", base, author=A)
        data = _appended(store, "log.md", base, 5)
        # base's own revision is pruned; it stays while the last two continue it
        assert count(db, "SELECT count(*) FROM blobs WHERE base IS NULL") == 1
        assert count(db, "SELECT count(*) FROM blobs WHERE base IS NOT NULL") == 2
        store.write("log.md", b"short now", author=A)
        store.write("log.md", b"and shorter", author=A)
        assert blobs(db) == 2 and count(db, "SELECT count(*) FROM blob_refs") == 2
        assert store.read("log.md")[0] == b"and shorter"
        assert data.startswith(base)
