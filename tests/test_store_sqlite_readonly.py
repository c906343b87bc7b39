"""An SQLite store opened read-only (``open_store(url, readonly=True)``) where it cannot
be written: a read-only file system (a bind mount), a directory or file another user
cannot write (a forked child that drops to ``nobody``), with and without a live writer,
with a write-ahead log left by a killed one; and files it refuses, untouched."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfs.errors import CorruptStore, ReadOnlyStore, StoreUnavailable
from memfs.store import open_store
from memfs.store import sqlite_schema as schema
from tests.fixtures.bad_stores import damage, read_only_view

A = "tester"


def fingerprint(directory: Path) -> dict[str, str]:
    """Every file in ``directory`` and its hash: what a read-only open must not change."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def test_nothing_is_created_where_there_is_no_store(tmp_path: Path) -> None:
    for name in ("missing.db", "sub/missing.db"):
        with pytest.raises(StoreUnavailable, match="there is no store at") as caught:
            open_store(tmp_path / name, readonly=True)
        assert "\n" not in str(caught.value)
    (tmp_path / "empty.db").write_bytes(b"")
    db = sqlite3.connect(tmp_path / "blank.db")
    db.execute("CREATE TABLE t (x)")
    db.execute("DROP TABLE t")
    db.commit()
    db.close()
    before = fingerprint(tmp_path)
    with pytest.raises(StoreUnavailable, match="there is no store"):
        open_store(tmp_path / "empty.db", readonly=True)
    with pytest.raises(StoreUnavailable, match="holds no memfs store yet"):
        open_store(tmp_path / "blank.db", readonly=True)
    assert fingerprint(tmp_path) == before and not (tmp_path / "sub").exists()


def _schema(path: Path, version: int) -> None:
    """A store as the memfs of schema ``version`` left it."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    for step in schema.MIGRATIONS[:version]:
        step(db)
    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    db.execute(f"PRAGMA user_version = {version}")
    db.execute("COMMIT")
    db.close()


def test_an_older_store_is_refused_untouched_and_reads_once_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _schema(path, 4)
    before = fingerprint(tmp_path)
    with pytest.raises(StoreUnavailable) as caught:
        open_store(path, readonly=True)
    message = str(caught.value)
    assert f"older memfs (schema 4; this memfs reads schema {schema.SCHEMA_VERSION})" in message
    assert "open it once with write access to upgrade it" in message and "\n" not in message
    assert fingerprint(tmp_path) == before
    with open_store(path) as store:  # a writable open migrates it
        store.write("a.md", b"now\n", author=A)
    with open_store(path, readonly=True) as store:
        assert store.read("a.md")[0] == b"now\n"


def test_a_newer_or_damaged_store_is_refused_read_only(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    with open_store(newer) as store:
        store.write("a.md", b"x", author=A)
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreUnavailable, match="newer memfs"):
        open_store(newer, readonly=True)
    broken = tmp_path / "broken.db"
    damage(broken)
    with pytest.raises(CorruptStore, match="is damaged"):
        open_store(broken, readonly=True)


def test_a_store_on_a_read_only_file_system(read_only_store: Path) -> None:
    # Closed cleanly: no -wal, no -shm, and none can be made here.
    assert sorted(p.name for p in read_only_store.parent.iterdir()) == ["memory.db"]
    with pytest.raises(StoreUnavailable, match="for writing"):
        open_store(read_only_store)
    with open_store(read_only_store, readonly=True) as store:
        assert store.read("a.md")[0] == b"kept\n"
        assert [r.author for r in store.history("a.md")] == ["t"]
        assert [h.path for h in store.search("kept")] == ["a.md"]
        with pytest.raises(ReadOnlyStore):
            store.write("b.md", b"x", author=A)
    assert sorted(p.name for p in read_only_store.parent.iterdir()) == ["memory.db"]


def _killed_writer(path: Path, content: bytes) -> None:
    """A process that commits ``content`` and dies before it can fold its WAL in."""
    code = (
        "import os, sys\n"
        "from memfs.store import open_store\n"
        "store = open_store(sys.argv[1])\n"
        "store.defer_maintenance()\n"  # nothing checkpoints: the commit stays in the WAL
        "store.write('a.md', sys.argv[2].encode(), author='writer')\n"
        "os._exit(0)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(path), content.decode()], check=True, timeout=60
    )


def test_a_killed_writers_log_on_a_read_only_file_system(tmp_path: Path) -> None:
    source = tmp_path / "rw"
    source.mkdir()
    path = source / "memory.db"
    with open_store(path) as store:
        store.write("a.md", b"in the file\n", author=A)
    _killed_writer(path, b"only in the log\n")
    assert (source / "memory.db-wal").stat().st_size > 0
    # The -shm the writer left lets SQLite read its log without writing anything.
    with (
        read_only_view(source, tmp_path / "ro") as view,
        open_store(view / "memory.db", readonly=True) as store,
    ):
        assert store.read("a.md")[0] == b"only in the log\n"
    (source / "memory.db-shm").unlink()
    with read_only_view(source, tmp_path / "ro2") as view:
        with pytest.raises(StoreUnavailable) as caught:
            open_store(view / "memory.db", readonly=True)
        message = str(caught.value)
        assert f"its write-ahead log {view}/memory.db-wal holds changes" in message
        assert "open it once where it can be written" in message and "\n" not in message
    with open_store(path) as store:  # opened where it can be written: the log is kept
        assert store.read("a.md")[0] == b"only in the log\n"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory only root may write, that ``nobody`` can reach and read."""
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    top = Path(tempfile.mkdtemp(prefix="memfs-ro-"))
    try:
        top.chmod(0o755)
        yield top
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)


def as_nobody(work: Callable[[], object]) -> object:
    """``work()``'s JSON-able result, run in a forked child that became ``nobody``
    (memfs is already imported: the child reads no file of this root-owned venv)."""
    import memfs.store.sqlite  # noqa: F401  (imported before the fork, see above)

    user = pwd.getpwnam("nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            try:
                answer = {"ok": work()}
            except Exception as e:
                answer = {"error": type(e).__name__, "message": str(e)}
            os.write(write, json.dumps(answer).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, data
    result: dict[str, object] = json.loads(data)
    if "error" in result:
        return (result["error"], result["message"])
    return result["ok"]


def _read(path: Path) -> Callable[[], object]:
    def work() -> object:
        with open_store(path, readonly=True) as store:
            refused = False
            try:
                store.write("x.md", b"x", author="nobody")
            except ReadOnlyStore:
                refused = True
            return [store.read("a.md")[0].decode(), refused]

    return work


def test_a_directory_another_user_cannot_write(shared_dir: Path) -> None:
    path = shared_dir / "memory.db"
    with open_store(path) as store:
        store.write("a.md", b"first\n", author=A)
    path.chmod(0o644)
    # No process has it open: nobody cannot make -shm here, and the file holds it all.
    assert as_nobody(_read(path)) == ["first\n", True]
    assert sorted(p.name for p in shared_dir.iterdir()) == ["memory.db"]
    # A live writer (another process: no connection may cross the fork): its -shm and
    # -wal are there, readable, and its latest commit is only in the log; a read-only
    # open must see it, not the file's older state.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memfs.store import open_store\n"
        "store = open_store(sys.argv[1])\n"
        "store.defer_maintenance()\n"
        "store.write('a.md', b'second, in the log\\n', author='writer')\n"
        "for suffix in ('-wal', '-shm'):\n"
        "    Path(sys.argv[1] + suffix).chmod(0o644)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
        "store.close()\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        assert Path(f"{path}-wal").stat().st_size > 0
        assert as_nobody(_read(path)) == ["second, in the log\n", True]
    finally:
        writer.communicate(timeout=60)
    assert writer.returncode == 0


def test_a_file_another_user_cannot_write_in_a_directory_it_can(shared_dir: Path) -> None:
    place = shared_dir / "open"
    place.mkdir()
    path = place / "memory.db"
    with open_store(path) as store:
        store.write("a.md", b"read me\n", author=A)
    path.chmod(0o444)
    place.chmod(0o777)  # SQLite may make -shm beside it, as nobody
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    assert as_nobody(_read(path)) == ["read me\n", True]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    with open_store(path, readonly=True) as store:
        assert store.read("a.md")[0] == b"read me\n"
