"""Full-text search on a real SQLite store: the same files as grep on the same tree, an
index consistent with the tree after every kind of write (and a kill -9 mid-write), and
a store from before the index is indexed on first use."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.errors import Conflict, NotFound, QueryError
from memfs.handler.search import search_directory
from memfs.store import Store, open_store
from memfs.store import sqlite as sqlite_store
from memfs.store.base import Store as BaseStore
from memfs.store.engine import MAINTAIN_INDEX_BATCH
from memfs.store.matching import MAX_LINES
from memfs.store.sqlite_search import INDEX_BYTES, PARTIAL, SKIPPED

A = "tester"
ROOT = Path(__file__).resolve().parent.parent

# A small tree with what tokenizers get wrong: identifiers, paths, case, non-ASCII,
# CJK without spaces, short words, a binary file and a file past the index's cap.
TREE: dict[str, bytes] = {
    "notes/todo.md": b"# TODO\n- call Alice about parse_rel\n- buy oat milk\n",
    "notes/done.md": b"- fixed memfs/store/sqlite_writes.py\n- wrote the README\n",
    "notes/deep/er/x.txt": b"the quick brown fox\nTHE LAZY DOG\nparse_rel(path)\n",
    "people/zurich.md": "Meeting in Zürich with Ærøskøbing folks\n".encode(),
    "people/tokyo.md": "東京で会議があります。\nmeeting at noon\n".encode(),
    "code/main.py": b"def parse_rel(rel: str) -> MemPath:\n    return MemPath(rel.split('/'))\n",
    "code/empty.py": b"",
    "bin/blob.bin": b"\x00\x01parse_rel\x02",
    "big/large.log": b"filler line\n" * (INDEX_BYTES // 12 + 10) + b"needle at the very end\n",
}
QUERIES = [
    "parse_rel",
    "PARSE_REL",
    "memfs/store",
    "sqlite_writes.py",
    "zürich",
    "ZÜRICH",
    "東京",
    "会議",
    "meeting",
    "oat milk",
    "the",
    "at",  # shorter than a trigram
    "needle",
    "nowhere-to-be-found",
]
REGEXES = [r"parse_\w+\(", r"^- \w+ the", r"[Mm]eeting (in|at)", r"oat|fox", r"M.mPath", r"^$"]


def _put_tree(store: Store, base: Path) -> None:
    for rel, data in TREE.items():
        store.write(rel, data, author=A, parents=True)
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_bytes(data)


def _grep_files(base: Path, *args: str) -> set[str]:
    # -I: binary files are not searched, as memfs does not search them.
    out = subprocess.run(
        ["grep", "-rlI", *args, "."], cwd=base, capture_output=True, text=True, check=False
    )
    assert out.returncode in (0, 1), out.stderr
    return {line[2:] for line in out.stdout.splitlines()}


def _grep_plain(base: Path, query: str) -> set[str]:
    found: set[str] | None = None
    for term in query.split():
        files = _grep_files(base, "-iF", "--", term)
        found = files if found is None else found & files
    return found or set()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "m.db") as s:
        yield s


@pytest.fixture
def tree(tmp_path: Path, store: Store) -> Path:
    base = tmp_path / "tree"
    base.mkdir()
    _put_tree(store, base)
    return base


@pytest.mark.parametrize("query", QUERIES)
def test_plain_queries_find_the_files_grep_finds(store: Store, tree: Path, query: str) -> None:
    expected = _grep_plain(tree, query)
    assert {h.path for h in store.search(query, limit=100)} == expected
    assert {h.path for h in BaseStore.search(store, query, limit=100)} == expected
    assert {h.path for h in search_directory(tree, query, limit=100)} == expected


@pytest.mark.parametrize("pattern", REGEXES)
def test_regexes_find_the_files_grep_finds(store: Store, tree: Path, pattern: str) -> None:
    expected = _grep_files(tree, "-P", "--", pattern)
    assert {h.path for h in store.search(pattern, regex=True, limit=100)} == expected
    assert {h.path for h in search_directory(tree, pattern, regex=True, limit=100)} == expected


@pytest.mark.parametrize("query", ["parse_rel", "meeting", "the"])
def test_line_numbers_and_text_are_grep_n(store: Store, tree: Path, query: str) -> None:
    out = subprocess.run(
        ["grep", "-rnIiF", "--", query, "."], cwd=tree, capture_output=True, text=True
    ).stdout
    expected: dict[str, list[tuple[int, str]]] = {}
    for line in out.splitlines():
        path, number, text = line[2:].split(":", 2)
        expected.setdefault(path, []).append((int(number), text))
    got = {h.path: h.lines for h in store.search(query, limit=100)}
    assert got == {p: lines[:MAX_LINES] for p, lines in expected.items()}


def test_ranking_limit_and_scope(store: Store) -> None:
    store.write("a/many.md", b"alpha alpha alpha alpha\n", author=A, parents=True)
    store.write("a/once.md", b"alpha and a lot of other words to dilute it\n" * 3, author=A)
    store.write("b/other.md", b"alpha\n", author=A, parents=True)
    hits = store.search("alpha")
    assert hits[0].path == "a/many.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(store.search("alpha", limit=1)) == 1
    assert {h.path for h in store.search("alpha", "a")} == {"a/many.md", "a/once.md"}
    assert [h.path for h in store.search("alpha", "b/other.md")] == ["b/other.md"]
    # "a" is a prefix of "a/..." but not a directory of "ab/...".
    store.write("ab/x.md", b"alpha\n", author=A, parents=True)
    assert "ab/x.md" not in {h.path for h in store.search("alpha", "a")}


def test_long_lines_are_cut_around_the_match(store: Store) -> None:
    line = "x" * 1000 + " target " + "y" * 1000
    store.write("long.md", line.encode(), author=A)
    (hit,) = store.search("target")
    (number, text) = hit.lines[0]
    assert number == 1 and "target" in text and len(text) <= 202
    assert text.startswith("…") and text.endswith("…")


def test_bad_queries_and_paths(store: Store) -> None:
    with pytest.raises(QueryError, match="empty"):
        store.search("  ")
    with pytest.raises(QueryError, match="not a valid regular expression"):
        store.search("(", regex=True)
    with pytest.raises(NotFound):
        store.search("x", "missing")


# --- consistency after every kind of write ----------------------------------------------


def _consistent(store: Store) -> None:
    assert store.search_index_problems() == []  # type: ignore[attr-defined]
    assert store.search_index_pending() == 0


def _found(store: Store, query: str) -> set[str]:
    return {h.path for h in store.search(query, limit=100)}


def test_index_follows_every_kind_of_write(store: Store) -> None:
    store.write("d/a.md", b"apple banana\n", author=A, parents=True)
    _consistent(store)
    assert _found(store, "banana") == {"d/a.md"}
    store.write("d/a.md", b"cherry only\n", author=A)
    _consistent(store)
    assert _found(store, "banana") == set() and _found(store, "cherry") == {"d/a.md"}
    store.truncate("d/a.md", 3, author=A)
    _consistent(store)
    assert _found(store, "cherry") == set() and _found(store, "che") == {"d/a.md"}
    store.truncate("d/a.md", 0, author=A)
    _consistent(store)
    store.write("d/b.md", b"durian\n", author=A)
    store.rename("d/b.md", "d/c.md", author=A)
    _consistent(store)
    assert _found(store, "durian") == {"d/c.md"}
    store.rename("d", "e", author=A)
    _consistent(store)
    assert _found(store, "durian") == {"e/c.md"}
    store.write("e/over.md", b"elderberry\n", author=A)
    store.rename("e/over.md", "e/c.md", author=A, overwrite=True)
    _consistent(store)
    assert _found(store, "durian") == set() and _found(store, "elderberry") == {"e/c.md"}
    store.delete("e/c.md", author=A)
    _consistent(store)
    assert _found(store, "elderberry") == set()
    store.write("e/f/g.md", b"fig\n", author=A, parents=True)
    store.delete("e", author=A, recursive=True)
    _consistent(store)
    assert _found(store, "fig") == set()


def test_a_daemons_store_indexes_in_maintain_and_searches_miss_nothing(store: Store) -> None:
    """After defer_maintenance (the mount daemon) writes leave their content to index
    to maintain(), a batch per call; a search indexes what is still waiting first."""
    store.defer_maintenance()
    n = MAINTAIN_INDEX_BATCH + 5
    for i in range(n):
        store.write(f"d/f{i}.md", f"quince {i}\n".encode(), author=A, parents=True)
    assert store.search_index_pending() == n
    store.write("d/f0.md", b"raspberry\n", author=A)  # rewritten before it was indexed
    store.delete("d/f1.md", author=A)  # gone before it was indexed
    assert store.search_index_pending() == n - 1
    store.maintain()
    assert store.search_index_pending() == 4
    assert store.search_index_problems() == []  # type: ignore[attr-defined]
    assert _found(store, "raspberry") == {"d/f0.md"}
    assert _found(store, f"quince {n - 1}") == {f"d/f{n - 1}.md"}  # one still waiting
    _consistent(store)  # the search indexed the rest first
    store.write("d/f2.md", b"strawberry\n", author=A)
    assert store.search_index_pending() == 1
    store.maintain()
    _consistent(store)
    assert _found(store, "strawberry") == {"d/f2.md"}


def test_maintain_indexes_a_large_file_from_its_head_alone(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file past the index's cap is indexed from its first INDEX_BYTES, read from the
    row without unpacking or hashing the rest: packed and raw bytes, text and binary;
    searches still find what lies past the head."""
    store.defer_maintenance()
    text = b"".join(b"line %d of filler\n" % i for i in range(INDEX_BYTES // 10))
    store.write("packed.log", text + b"kumquat at the end\n", author=A)
    monkeypatch.setattr(sqlite_store, "_PACK_FROM", 1 << 40)  # kept as they are
    store.write("raw.log", text + b"lychee at the end\n", author=A)
    store.write("bin.dat", b"\x00" + text, author=A)
    codecs = dict(
        store._db()  # type: ignore[attr-defined]
        .execute(
            "SELECT r.path, b.codec FROM revisions r JOIN blob_refs br"
            " ON br.sha256 = r.sha256 JOIN blobs b ON b.id = br.blob_id"
        )
        .fetchall()
    )
    assert codecs == {"packed.log": sqlite_store.ZLIB, "raw.log": sqlite_store.RAW,
                      "bin.dat": sqlite_store.RAW}  # fmt: skip
    store.maintain()
    _consistent(store)
    kinds = dict(
        store._db()  # type: ignore[attr-defined]
        .execute("SELECT e.path, d.kind FROM search_docs d JOIN entries e ON e.id = d.id")
        .fetchall()
    )
    assert kinds == {"packed.log": PARTIAL, "raw.log": PARTIAL, "bin.dat": SKIPPED}
    assert _found(store, "kumquat") == {"packed.log"}
    assert _found(store, "lychee") == {"raw.log"}
    assert _found(store, "line 7 of filler") == {"packed.log", "raw.log"}


def test_a_refused_or_rolled_back_write_leaves_the_index_alone(store: Store) -> None:
    store.write("a.md", b"grape\n", author=A)
    with pytest.raises(Conflict):
        store.write("a.md", b"kiwi\n", author=A, expected_rev=999)
    with pytest.raises(RuntimeError), store.batch():
        store.write("a.md", b"lemon\n", author=A)
        store.write("b.md", b"lemon\n", author=A)
        raise RuntimeError("abandon the batch")
    _consistent(store)
    assert _found(store, "grape") == {"a.md"}
    assert _found(store, "kiwi") == _found(store, "lemon") == set()


def test_content_written_without_the_index_is_found_and_then_indexed(store: Store) -> None:
    """A revision made by code that does not index (here: SQL behind the store's back,
    as a future write path might) is marked stale by the trigger and read by searches
    until indexed."""
    store.write("a.md", b"mango\n", author=A)
    store.write("b.md", b"papaya\n", author=A)
    db = store._db()  # type: ignore[attr-defined]
    db.execute("BEGIN IMMEDIATE")
    rev = db.execute("UPDATE counters SET value = value + 1 WHERE name = 'rev' RETURNING value")
    new_rev = rev.fetchone()[0]
    sha = db.execute("SELECT sha256 FROM revisions WHERE path = 'b.md'").fetchone()[0]
    db.execute(
        "INSERT INTO revisions (rev, path, author, time_ns, size, sha256)"
        " VALUES (?, 'a.md', ?, 1, 7, ?)",
        (new_rev, A, sha),
    )
    db.execute("UPDATE entries SET rev = ?, size = 7 WHERE path = 'a.md'", (new_rev,))
    db.execute("COMMIT")
    assert store.search_index_pending() == 1
    assert _found(store, "papaya") == {"a.md", "b.md"}  # the search indexed it first
    _consistent(store)
    assert _found(store, "mango") == set()


def test_a_store_from_before_the_index_is_indexed_with_progress(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    with open_store(db_path) as store:
        for i in range(450):
            store.write(f"f{i:03d}.md", f"file number {i} quince\n".encode(), author=A)
    # Back to schema 4: what a memfs without the index left.
    db = sqlite3.connect(db_path)
    for name in ("search_revision", "search_entry_gone"):
        db.execute(f"DROP TRIGGER {name}")
    for table in ("search_text", "search_docs", "search_stale"):
        db.execute(f"DROP TABLE {table}")
    # and without what the schemas after it added (the operation log)
    db.execute("DROP INDEX changes_op")
    db.execute("DROP INDEX changes_path")
    db.execute("DROP TABLE operations")
    db.execute("DROP TABLE door_notes")
    db.execute("DROP TRIGGER blob_removed")
    db.execute("DROP INDEX blobs_by_base")
    db.execute("ALTER TABLE blobs DROP COLUMN base")
    for column in ("op", "mode", "target", "prior_kind", "prior_sha256", "prior_size",
                   "prior_mode", "prior_target"):  # fmt: skip
        db.execute(f"ALTER TABLE changes DROP COLUMN {column}")
    db.execute("PRAGMA user_version = 4")
    db.commit()
    db.close()
    with open_store(db_path) as store:
        assert store.search_index_pending() == 450
        steps: list[int] = []
        store.build_search_index(steps.append)
        assert sum(steps) == 450 and len(steps) == 3
        _consistent(store)
        assert len(store.search("quince", limit=1000)) == 450
        assert [h.path for h in store.search("number 123")] == ["f123.md"]


# --- a writer killed mid-write --------------------------------------------------------------


def test_a_writer_killed_mid_write_leaves_a_consistent_index(tmp_path: Path) -> None:
    db_path = tmp_path / "m.db"
    open_store(db_path).close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.sqlite_worker", "words", str(db_path), "w", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged: list[int] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            acknowledged.append(int(line.split()[1]))
            if len(acknowledged) == 60:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
    with open_store(db_path) as store:
        _consistent(store)
        found = {h.path for h in store.search("kumquat", limit=10_000)}
        files = {e.path for e in store.walk() if e.is_file}
        assert found == files  # every committed file, nothing else
        assert {f"w/{i}" for i in acknowledged} <= found
        assert [h.path for h in store.search("word17x")] == ["w/17"]


def test_restores_keep_the_index_consistent(store: Store) -> None:
    from memfs.history.restore import restore_file, restore_tree

    first = store.write("r/a.md", b"orange first\n", author=A, parents=True)
    store.write("r/b.md", b"pear first\n", author=A)
    seq = store.last_seq()
    store.write("r/a.md", b"orange second\n", author=A)
    store.delete("r/b.md", author=A)
    store.write("r/c.md", b"plum later\n", author=A)
    restore_file(store, "r/a.md", first.rev, author=A)
    _consistent(store)
    assert _found(store, "first") == {"r/a.md"}
    restore_tree(store, seq, "r", author=A)
    _consistent(store)
    assert _found(store, "first") == {"r/a.md", "r/b.md"}
    assert _found(store, "plum") == set()
