"""SQLite-specific behaviour: URLs and options, the file format, refusing what is not ours."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

import memfs.store
from memfs.errors import CorruptStore, StoreUnavailable, UnknownScheme
from memfs.store import Store, default_url, open_store, register
from memfs.store.sqlite import SqliteStore
from memfs.store.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION
from tests.fixtures.bad_stores import damage

A = "tester"


def fingerprint(path: Path) -> tuple[str, list[str]]:
    """The file's hash and the names beside it, to prove a refused file was not touched."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
    return digest, sorted(p.name for p in path.parent.iterdir())


def pragma(path: Path, name: str) -> int:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(db.execute(f"PRAGMA {name}").fetchone()[0])
    finally:
        db.close()


# --- URLs and the registry ------------------------------------------------------------------
@pytest.mark.parametrize(
    "form", ["sqlite://{p}", "sqlite:///{q}", "sqlite:///{q}?history=3", "{p}"]
)
def test_url_forms_name_the_same_file(tmp_path: Path, form: str) -> None:
    path = tmp_path / "m.db"
    url = form.format(p=path, q=str(path).lstrip("/"))
    with open_store(url) as store:
        store.write("f", b"x", author=A)
        assert store.url == "sqlite://" + quote(str(path))
    with open_store(str(path)) as store:
        assert store.read("f")[0] == b"x"


def test_relative_url_and_bare_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with open_store("sqlite:///./sub/rel.db") as store:
        assert store.url == "sqlite://" + quote(f"{tmp_path}/sub/rel.db")
    with open_store("~/h.db") as store:
        assert store.url == "sqlite://" + quote(f"{tmp_path}/home/h.db")
    with open_store("sqlite:///./with%20space.db") as store:
        assert (tmp_path / "with space.db").is_file()
    with open_store("plain?name.db") as store:
        assert (tmp_path / "plain?name.db").is_file()


def test_a_path_object_is_a_bare_path(tmp_path: Path) -> None:
    with open_store(tmp_path / "p.db") as store:
        assert store.url == "sqlite://" + quote(str(tmp_path / "p.db"))


def test_reopening_by_the_store_url(tmp_path: Path) -> None:
    for name in ("a b/m.db", "50%25 ?x=1#frag.db"):
        with open_store(f"{tmp_path}/{name}") as store:
            store.write("f", name.encode(), author=A)
            url = store.url
        with open_store(url) as again:
            assert again.read("f")[0] == name.encode()
        assert (tmp_path / name).is_file()


def test_default_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMFS_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_url() == f"sqlite://{tmp_path}/data/memfs/memory.db"
    with open_store() as store:
        store.write("f", b"x", author=A)
    assert (tmp_path / "data" / "memfs" / "memory.db").is_file()
    monkeypatch.setenv("MEMFS_STORE", f"{tmp_path}/env.db")
    assert default_url() == f"{tmp_path}/env.db"
    with open_store() as store:
        assert store.url == "sqlite://" + quote(f"{tmp_path}/env.db")


def test_unknown_scheme_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownScheme, match=r"nosuch://.*known: .*sqlite://"):
        open_store("nosuch://host/db")


def test_register_a_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(memfs.store, "_openers", dict(memfs.store._openers))
    calls: list[tuple[str, dict[str, object]]] = []

    def opener(url: str, options: object) -> Store:
        calls.append((url, dict(options)))  # type: ignore[call-overload]
        return SqliteStore(tmp_path / "via-test.db")

    register("Test", opener)
    with open_store("test://somewhere/x?a=1", b=2) as store:
        assert isinstance(store, SqliteStore)
    assert calls == [("test://somewhere/x", {"a": "1", "b": 2})]
    assert "test" in memfs.store.known_schemes()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///{p}?history=-1", "history"),
        ("sqlite:///{p}?history=lots", "history"),
        ("sqlite:///{p}?max_file_bytes=0", "max_file_bytes"),
        ("sqlite:///{p}?busy_timeout=never", "busy_timeout"),
        ("sqlite:///{p}?synchronous=off", "synchronous"),
        ("sqlite:///{p}?colour=blue", "unknown option 'colour'"),
        ("sqlite:///{p}?history=1&history=2", "twice"),
        ("sqlite:///{p}?history", "malformed"),
        ("sqlite://", "names no file"),
        ("sqlite://relative.db", "names no file"),
        ("", "empty"),
    ],
)
def test_bad_urls_and_options_are_refused_clearly(tmp_path: Path, url: str, message: str) -> None:
    with pytest.raises(StoreUnavailable, match=message):
        open_store(url.format(p=str(tmp_path / "m.db").lstrip("/")))
    assert not (tmp_path / "m.db").exists()


def test_keyword_options_win_over_the_url(tmp_path: Path) -> None:
    with open_store(f"sqlite://{tmp_path}/m.db?history=5", history=0) as store:
        for i in range(3):
            store.write("f", b"%d" % i, author=A)
        assert len(store.history("f")) == 1
    with pytest.raises(StoreUnavailable, match="history"):
        open_store(f"{tmp_path}/m.db", history=True)


# --- creation, persistence, migration ------------------------------------------------------------
def test_first_open_creates_parents_and_a_versioned_wal_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "m.db"
    with open_store(str(path)):
        pass
    assert pragma(path, "application_id") == APPLICATION_ID
    assert pragma(path, "user_version") == SCHEMA_VERSION
    header = path.read_bytes()[:100]
    # The id is in the main file's own header (not only in a WAL) so the raw-bytes check
    # at open can trust it.
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert header[18:20] == b"\x02\x02"  # WAL read/write versions


def test_contents_history_and_feed_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(str(path)) as store:
        first = store.write("d/f", b"one", author=A, parents=True)
        second = store.write("d/f", b"two", author=A)
        seq = store.last_seq()
    with open_store(str(path)) as store:
        assert store.read("d/f")[0] == b"two"
        assert store.read_revision("d/f", first.rev) == b"one"
        assert store.last_seq() == seq
        third = store.write("d/g", b"", author=A)
        assert third.rev > second.rev and store.changes(since=seq)[0].path == "d/g"


@pytest.mark.parametrize("kind", ["zero-byte", "empty-sqlite"])
def test_an_empty_database_is_migrated_from_version_0(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "m.db"
    if kind == "zero-byte":
        path.write_bytes(b"")
    else:
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE scratch (x)")
        db.execute("DROP TABLE scratch")
        db.commit()
        db.close()
        assert path.stat().st_size > 0 and pragma(path, "user_version") == 0
    with open_store(str(path)) as store:
        store.write("f", b"x", author=A)
        assert store.stat("").is_dir
    assert pragma(path, "user_version") == SCHEMA_VERSION
    assert pragma(path, "application_id") == APPLICATION_ID


# --- refusing what is not a memfs store, without touching it ----------------------------------
def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(1).randbytes(8192))


def _text(path: Path) -> None:
    path.write_text("hello, I am a note\n")


def _sqlite_magic_then_garbage(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + random.Random(2).randbytes(4000))


def _foreign_with_id(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA application_id = 1234")
    db.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    db.commit()
    db.close()


def _foreign_without_id(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE cookies (host TEXT, value TEXT)")
    db.execute("INSERT INTO cookies VALUES ('example.org', 'x')")
    db.commit()
    db.close()


def _truncated(path: Path) -> None:
    with open_store(str(path)) as store:
        for i in range(20):
            store.write(f"f{i}", os.urandom(20_000), author=A)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _damaged_pages(path: Path) -> None:
    damage(path)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (_damaged_pages, CorruptStore, "is damaged"),
        (_random_bytes, CorruptStore, "not a memfs store"),
        (_text, CorruptStore, "not a memfs store"),
        (_sqlite_magic_then_garbage, CorruptStore, "another application|damaged"),
        (_foreign_with_id, CorruptStore, "another application"),
        (_foreign_without_id, CorruptStore, "tables: cookies"),
        (_truncated, CorruptStore, "truncated"),
    ],
)
def test_files_that_are_not_a_memfs_store_are_refused_untouched(
    tmp_path: Path, make: Callable[[Path], None], error: type[Exception], message: str
) -> None:
    path = tmp_path / "m.db"
    make(path)
    before = fingerprint(path)
    for _ in range(2):  # a second attempt finds the same bytes, so nothing was repaired
        with pytest.raises(error, match=message) as info:
            open_store(str(path))
        assert "\n" not in str(info.value) and str(path) in str(info.value)
    assert fingerprint(path) == before


def test_a_store_from_a_newer_memfs_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(str(path)) as store:
        store.write("f", b"x", author=A)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = fingerprint(path)
    with pytest.raises(StoreUnavailable, match=r"newer memfs.*upgrade") as info:
        open_store(str(path))
    assert not isinstance(info.value, CorruptStore)
    assert fingerprint(path) == before


def test_a_directory_or_a_file_as_parent_is_refused(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(StoreUnavailable, match="is a directory"):
        open_store(str(tmp_path / "adir"))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(StoreUnavailable, match="afile"):
        open_store(str(tmp_path / "afile" / "m.db"))
    assert (tmp_path / "afile").read_text() == "x" and list((tmp_path / "adir").iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(str(path)):
        pass
    path.chmod(0)
    with pytest.raises(StoreUnavailable, match="cannot"):
        open_store(str(path))


@pytest.mark.parametrize(("option", "level"), [(None, 1), ("normal", 1), ("full", 2)])
def test_synchronous_option_sets_every_connection(
    tmp_path: Path, option: str | None, level: int
) -> None:
    options = {} if option is None else {"synchronous": option}
    with open_store(str(tmp_path / "m.db"), **options) as store:
        assert isinstance(store, SqliteStore)
        seen: list[int] = []

        def probe() -> None:
            seen.append(store._db().execute("PRAGMA synchronous").fetchone()[0])

        probe()
        thread = threading.Thread(target=probe)
        thread.start()
        thread.join(30)
        assert seen == [level, level]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "m.db"
    os.mkfifo(fifo)
    with pytest.raises(StoreUnavailable, match="not a regular file"):
        open_store(str(fifo))


def test_a_locked_store_at_open_is_busy_not_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    path.write_bytes(b"")  # a version-0 store: opening it must migrate, which needs the lock
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailable, match="busy") as info:
            open_store(str(path), busy_timeout=0.2)
        assert not isinstance(info.value, CorruptStore)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with open_store(str(path)) as store:
        assert store.stat("").is_dir


def test_a_write_waits_for_another_process_lock_at_its_own_pace_then_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BEGIN IMMEDIATE meets a lock held elsewhere: memfs tries again after a short
    pause (not SQLite's 1, 2, 5, 10 ms ones), and the write lands once the lock is free."""
    path = tmp_path / "m.db"
    with open_store(str(path), busy_timeout=30) as store:
        assert isinstance(store, SqliteStore)
        store.write("a.md", b"one\n", author=A)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        pauses: list[float] = []

        def pause(seconds: float) -> None:
            pauses.append(seconds)
            if len(pauses) == 3:
                holder.execute("ROLLBACK")  # the other process commits meanwhile

        monkeypatch.setattr(time, "sleep", pause)
        try:
            store.write("a.md", b"two\n", author=A)
        finally:
            holder.close()
        assert store.read("a.md")[0] == b"two\n"
        assert pauses[:3] == [50e-6, 100e-6, 200e-6]
        # The connection's own wait is back for every other statement.
        busy = store._files.connection().execute("PRAGMA busy_timeout").fetchone()
        assert busy == (30000,)


def test_a_write_that_never_gets_the_lock_is_busy_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    with open_store(str(path), busy_timeout=0.2) as store:
        store.write("a.md", b"one\n", author=A)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        clock = [0.0]
        monkeypatch.setattr(time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
        monkeypatch.setattr(time, "monotonic", lambda: clock[0])
        try:
            with pytest.raises(StoreUnavailable, match="busy"):
                store.write("a.md", b"two\n", author=A)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert clock[0] >= 0.2  # it waited the whole busy_timeout, in paced tries
        assert store.read("a.md")[0] == b"one\n"


def test_pending_migrations_run_in_order_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memfs.store import sqlite_schema

    path = tmp_path / "m.db"
    with open_store(str(path)) as store:
        store.write("keep", b"kept", author=A)

    def add_notes(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE notes (x)")

    def half_then_fail(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half (x)")
        db.execute("INSERT INTO missing_table VALUES (1)")  # fails: nothing may remain

    current = list(sqlite_schema.MIGRATIONS)
    n = len(current)
    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", [*current, add_notes, half_then_fail])
    monkeypatch.setattr(sqlite_schema, "SCHEMA_VERSION", n + 2)
    with pytest.raises(StoreUnavailable, match="missing_table"):
        open_store(str(path))
    assert pragma(path, "user_version") == n
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    assert "notes" not in tables and "half" not in tables

    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", [*current, add_notes])
    monkeypatch.setattr(sqlite_schema, "SCHEMA_VERSION", n + 1)
    with open_store(str(path)) as store:
        assert store.read("keep")[0] == b"kept"
    assert pragma(path, "user_version") == n + 1


def test_the_benchmark_script_runs(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    args = ["--files", "20", "--dirs", "2", "--threads", "2", "--scale", "0.02"]
    result = subprocess.run(
        [sys.executable, "scripts/bench_store.py", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    operations = (
        "stat", "read 1 KiB", "write 1 KiB", "create 1 KiB", "rename", "atomic save", "listdir",
        "stat query",
    )  # fmt: skip
    for operation in operations:
        line = next(x for x in result.stdout.splitlines() if x.startswith(operation))
        assert float(line.split()[-1]) > 0
    assert list(tmp_path.iterdir()) == []  # its temporary directory is gone


def test_a_new_store_is_private_and_leaves_no_scaffolding(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "memory.db"
    with open_store(str(db)) as store:
        store.write("a.md", b"private\n", author=A)
    assert os.stat(db).st_mode & 0o777 == 0o600
    # The store is built beside its final name and linked into place: nothing else stays.
    assert sorted(p.name for p in db.parent.iterdir()) == ["memory.db"]


def _fill(store: Store, n: int) -> None:
    # 1,200 writes of ~5 KiB: well past SQLite's 1,000-page autocheckpoint threshold.
    for i in range(n):
        store.write(f"f{i % 50}", random.randbytes(5000), author=A)


def test_writes_checkpoint_by_themselves_by_default(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(str(db)) as store:
        before = os.path.getsize(db)
        _fill(store, 1200)
        assert os.path.getsize(db) > before + 200_000  # a write copied the WAL back


def test_deferred_maintenance_moves_checkpoints_to_maintain(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(str(db)) as store:
        store.defer_maintenance()
        before = os.path.getsize(db)
        other: list[BaseException] = []

        # Both kinds of connection must follow: one made after the call (this thread's)
        # and one that existed before it (the main thread's, from open_store).
        def writer() -> None:
            try:
                _fill(store, 600)
            except BaseException as e:
                other.append(e)

        t = threading.Thread(target=writer)
        t.start()
        t.join(60)
        assert not other
        _fill(store, 600)
        assert os.path.getsize(db) == before  # everything still in the WAL
        store.maintain()
        assert os.path.getsize(db) > before + 200_000
        assert len(store.listdir("")) == 50


def test_the_log_file_is_cut_back_when_the_log_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that holds its snapshot keeps the log from starting over, so it grows;
    once the reader is gone and a checkpoint has copied it back, the next commit starts
    the log over and cuts the -wal file back to the limit (not kept at its largest)."""
    limit = 256 << 10
    monkeypatch.setattr(memfs.store.sqlite_schema, "WAL_SIZE_LIMIT", limit)
    path = tmp_path / "memory.db"
    wal = Path(f"{path}-wal")
    with open_store(f"sqlite://{path}") as store:
        store.defer_maintenance()  # as a mount daemon: checkpoints only in maintain()
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM entries").fetchone()  # holds its snapshot
            for i in range(40):
                store.write(f"f{i}.md", os.urandom(32 << 10), author="test")
            store.maintain()
            assert wal.stat().st_size > 4 * limit
        finally:
            reader.close()
        store.maintain()  # copies all of the log back: nobody reads it now
        store.write("last.md", b"the log starts over\n", author="test")
        assert wal.stat().st_size <= limit
        assert store.read("f39.md")[1].size == 32 << 10
