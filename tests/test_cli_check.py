"""``memfs check`` through click's CliRunner, on exact output: a sound store, damaged
bytes made for real with SQL, --json, the three ways to name the store, and stores it
must not create or cannot use."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.store import Store, open_store
from tests.fixtures.mount import MountHandle, wait_for

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z

pytestmark = pytest.mark.usefixtures("utc")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "m.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with open_store(db) as store:
        ticks = iter(range(100))
        store.clock = lambda: (T0 + 60 * next(ticks)) * 10**9
        store.write("notes/a.md", b"v1\n", author="alice", parents=True)  # rev 2
        store.write("notes/a.md", b"v2\n", author="bob")  # rev 3
        store.write("b.md", b"v1\n", author="carol")  # rev 4: the same bytes as rev 2
        store.write("c.md", b"fine\n", author="dave")  # rev 5
        yield store


def damage(db: Path, content: bytes) -> None:
    """Overwrite the stored bytes of ``content``, keeping its recorded SHA-256."""
    conn = sqlite3.connect(db)
    try:
        conn.execute(
            "UPDATE blobs SET codec = 0, content = x'00' WHERE id ="
            " (SELECT blob_id FROM blob_refs WHERE sha256 = ?)",
            (sha(content),),
        )
        conn.commit()
    finally:
        conn.close()


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["check", *args])


def test_a_sound_store_is_one_line_and_exit_0(db: Path, store: Store) -> None:
    result = run("--store", str(db))
    assert (result.exit_code, result.output) == (
        0,
        "All 4 retained revisions match their SHA-256.\n",
    )


def test_each_damaged_revision_is_one_line_and_exit_1(db: Path, store: Store) -> None:
    damage(db, b"v1\n")
    short = sha(b"v1\n")[:12]
    result = run("--store", str(db))
    assert result.exit_code == 1
    assert result.stdout == (
        f"b.md  rev 4  2023-11-14T22:15:20+00:00  carol  3  {short}\n"
        f"notes/a.md  rev 2  2023-11-14T22:13:20+00:00  alice  3  {short}\n"
    )
    assert result.stderr == (
        "Error: 2 of 4 retained revisions (2 files) are damaged: their bytes no longer match"
        " their SHA-256\n"
    )
    # The commands that read it say so in one line, naming the revision.
    shown = CliRunner().invoke(main, ["history", "b.md", "--store", str(db), "--show", "4"])
    assert shown.exit_code == 1
    assert shown.stderr.startswith("Error: revision 4 of 'b.md' is damaged: its stored bytes")
    assert shown.stderr.count("\n") == 1 and "Traceback" not in shown.output


def test_json_lists_each_damaged_revision_and_a_summary(db: Path, store: Store) -> None:
    damage(db, b"fine\n")
    result = run("--store", str(db), "--json")
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == [
        {
            "path": "c.md",
            "rev": 5,
            "sha256": sha(b"fine\n"),
            "size": 5,
            "author": "dave",
            "time_ns": (T0 + 180) * 10**9,
        },
        {"checked": 4, "damaged": 1},
    ]
    sound = run("--store", str(tmp_store_copy(db)), "--json")
    assert sound.exit_code == 0 and json.loads(sound.stdout) == {"checked": 0, "damaged": 0}


def tmp_store_copy(db: Path) -> Path:
    """An empty store beside ``db``."""
    other = db.with_name("empty.db")
    open_store(other).close()
    return other


def test_the_store_is_named_by_path_or_by_the_mount_around_the_cwd(
    db: Path, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(str(db)).output == "All 4 retained revisions match their SHA-256.\n"
    assert run(f"sqlite://{db}").exit_code == 0
    both = run(str(db), "--store", str(db))
    assert both.exit_code == 2 and "give PATH or --store, not both" in both.output
    monkeypatch.setenv("MEMFS_STORE", str(db))
    monkeypatch.chdir(tmp_path)
    assert run().output == "All 4 retained revisions match their SHA-256.\n"


@pytest.mark.fuse
def test_a_mount_is_checked_through_its_store(memfs_mount: MountHandle) -> None:
    (memfs_mount.mountpoint / "m.md").write_bytes(b"in the mount\n")
    store = memfs_mount.store()
    wait_for(lambda: [r.rev for r in store.history("m.md")], what="the commit")
    result = run(str(memfs_mount.mountpoint))
    assert (result.exit_code, result.output) == (
        0,
        "The 1 retained revision matches its SHA-256.\n",  # not "All 1 ... revisions",
    )


def test_no_store_is_created_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = run("--store", str(missing))
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: no store at {missing}; give another --store URL\n",
    )
    assert not missing.exists()
    text = tmp_path / "notes.txt"
    text.write_text("not a store\n")
    bad = run(str(text))
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1
    assert "is not a memfs store" in bad.stderr and "Traceback" not in bad.output


def test_a_read_only_store_is_checked(read_only_store: Path) -> None:
    result = run(str(read_only_store))
    assert (result.exit_code, result.output) == (
        0,
        "The 1 retained revision matches its SHA-256.\n",  # not "All 1 ... revisions",
    )
    assert sorted(os.listdir(read_only_store.parent)) == ["memory.db"]


def test_one_damaged_revision_is_said_in_the_singular(db: Path, store: Store) -> None:
    damage(db, b"fine\n")
    result = run("--store", str(db))
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: 1 of 4 retained revisions (1 file) is damaged: its bytes no longer match its"
        " SHA-256\n",
    )
