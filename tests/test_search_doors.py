"""The search index after writes through every door: a real FUSE mount (shell tools and
the handler on it), the watchdog mirror, and ``memfs search`` itself, in CliRunner and
as the installed program."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.handler import MemoryHandler
from memfs.store import Store, open_store
from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.sync import SyncRig

ROOT = Path(__file__).resolve().parent.parent
A = "tester"


def _found(store: Store, query: str) -> set[str]:
    return {h.path for h in store.search(query, limit=100)}


def _settled(store: Store, query: str, expected: set[str]) -> bool:
    return _found(store, query) == expected and store.search_index_problems() == []  # type: ignore[attr-defined]


@pytest.mark.fuse
def test_writes_through_a_mount_are_searchable(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory()
    store = mount.store()
    mnt = mount.mountpoint
    (mnt / "notes").mkdir()
    (mnt / "notes" / "a.md").write_text("apple pie recipe\n")
    wait_for(lambda: _settled(store, "apple", {"notes/a.md"}), what="a created file")
    with open(mnt / "notes" / "a.md", "a") as f:
        f.write("with banana\n")
    wait_for(lambda: _settled(store, "banana", {"notes/a.md"}), what="an appended line")
    os.truncate(mnt / "notes" / "a.md", 5)
    wait_for(lambda: _settled(store, "banana", set()), what="a truncate")
    assert _found(store, "apple") == {"notes/a.md"}
    os.rename(mnt / "notes", mnt / "kept")
    wait_for(lambda: _settled(store, "apple", {"kept/a.md"}), what="a directory rename")
    # An editor's atomic save: a temp file renamed over the original.
    (mnt / "kept" / ".a.md.swp").write_text("cherry tart\n")
    os.replace(mnt / "kept" / ".a.md.swp", mnt / "kept" / "a.md")
    wait_for(lambda: _settled(store, "cherry", {"kept/a.md"}), what="a rename over a file")
    assert _found(store, "apple") == set()
    handler = MemoryHandler(mnt)
    assert not handler.create("/memories/kept/b.md", "durian notes\n").is_error
    assert not handler.str_replace("/memories/kept/b.md", "durian", "elderberry").is_error
    wait_for(lambda: _settled(store, "elderberry", {"kept/b.md"}), what="the handler's edit")
    assert _found(store, "durian") == set()
    assert not handler.delete("/memories/kept").is_error
    wait_for(lambda: _settled(store, "cherry", set()), what="a recursive delete")
    # memfs search on a path inside the mount prints the mount's paths.
    (mnt / "x.md").write_text("fig\n")
    wait_for(lambda: _settled(store, "fig", {"x.md"}), what="one more file")
    result = CliRunner().invoke(main, ["search", "fig", str(mnt)])
    assert (result.exit_code, result.output) == (0, f"{mnt}/x.md:1:fig\n")


def test_writes_through_the_mirror_are_searchable(sync_rig: SyncRig) -> None:
    sync_rig.start()
    sync_rig.write("plans/q3.md", "grape harvest\n")
    sync_rig.settle()
    wait_for(lambda: _settled(sync_rig.store, "grape", {"plans/q3.md"}), what="a mirrored file")
    (sync_rig.dir / "plans" / "q3.md").write_text("kiwi harvest\n")
    sync_rig.settle()
    wait_for(lambda: _settled(sync_rig.store, "kiwi", {"plans/q3.md"}), what="a mirrored edit")
    os.rename(sync_rig.dir / "plans", sync_rig.dir / "done")
    sync_rig.settle()
    wait_for(lambda: _settled(sync_rig.store, "kiwi", {"done/q3.md"}), what="a mirrored move")
    (sync_rig.dir / "done" / "q3.md").unlink()
    sync_rig.settle()
    wait_for(lambda: _settled(sync_rig.store, "kiwi", set()), what="a mirrored delete")


# --- memfs search -------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with open_store(path) as store:
        store.write("notes/a.md", b"# Notes\nCall Alice about parse_rel\n", author=A, parents=True)
        store.write("notes/b.md", "Zürich trip\nparse_rel again\n".encode(), author=A)
        store.write("c.md", b"nothing here\n", author=A)
    return path


def _search(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["search", *args])
    return result.exit_code, result.output


def test_cli_prints_grep_lines_best_first(db: Path) -> None:
    code, out = _search("parse_rel", "--store", str(db))
    assert code == 0
    assert sorted(out.splitlines()) == [
        "notes/a.md:2:Call Alice about parse_rel",
        "notes/b.md:2:parse_rel again",
    ]
    assert _search("zürich", "/memories/notes", "--store", str(db)) == (
        0,
        "notes/b.md:1:Zürich trip\n",
    )
    assert _search("parse_rel", "notes/a.md", "--store", str(db)) == (
        0,
        "notes/a.md:2:Call Alice about parse_rel\n",
    )
    assert _search("p.rse_rel a", "--regex", "--store", str(db)) == (
        0,
        "notes/b.md:2:parse_rel again\n",
    )


def test_cli_json_limit_and_no_match(db: Path) -> None:
    code, out = _search("alice", "--json", "--store", str(db))
    assert code == 0
    (hit,) = [json.loads(line) for line in out.splitlines()]  # one object per file
    assert hit["path"] == hit["file"] == "notes/a.md"
    assert hit["lines"] == [{"line": 2, "text": "Call Alice about parse_rel"}]
    assert isinstance(hit["score"], float)
    code, out = _search("parse_rel", "--limit", "1", "--json", "--store", str(db))
    assert len(out.splitlines()) == 1
    assert _search("nowhere", "--store", str(db)) == (1, "")
    assert _search("nowhere", "--json", "--store", str(db)) == (1, "")


def test_cli_errors_are_one_line(db: Path, tmp_path: Path) -> None:
    assert _search("(", "--regex", "--store", str(db)) == (
        1,
        "Error: not a valid regular expression: missing ), unterminated subpattern at position 0\n",
    )
    assert _search("x", "missing", "--store", str(db)) == (
        1,
        f"Error: no entry at 'missing' (in the store {db})\n",
    )
    assert _search("x", "--store", str(tmp_path / "none.db")) == (
        1,
        f"Error: no store at {tmp_path / 'none.db'}; give another --store URL\n",
    )
    assert not (tmp_path / "none.db").exists()


def test_installed_program_indexes_an_old_store_quietly_off_a_terminal(db: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM search_text")
    conn.execute("DELETE FROM search_docs")
    conn.execute("INSERT INTO search_stale (id) SELECT id FROM entries WHERE kind = 'file'")
    conn.commit()
    conn.close()
    out = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "memfs"), "search", "alice", "--store", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout, out.stderr) == (
        0,
        "notes/a.md:2:Call Alice about parse_rel\n",
        "",
    )
    with open_store(db) as store:
        assert store.search_index_pending() == 0
        assert store.search_index_problems() == []  # type: ignore[attr-defined]
