"""Expiry: files neither written nor viewed by the model for a span are deleted (and
stay in history); a write that races the delete wins; the model's views through the
handler count as use, listings do not. CLI through click's runner and the installed
command, the daemon's schedule through a real mount."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.handler import MemoryHandler
from memfs.history.expire import expire
from memfs.mount import state
from memfs.mount.ops import MountOptions
from memfs.store import open_store
from memfs.store.base import Store
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for

DAY = 86_400 * 10**9
A = "test"
MEMFS = str(Path(sys.executable).with_name("memfs"))


def aged(url: str, files: dict[str, bytes], days_ago: int) -> None:
    """Write ``files`` with the store's clock set back ``days_ago`` days."""
    with open_store(url) as store:
        then = time.time_ns() - days_ago * DAY
        store.clock = lambda: then
        for path, data in files.items():
            store.write(path, data, author=A, parents=True)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(sqlite_url(tmp_path / "s.db"))
    yield s
    s.close()


def test_expire_deletes_what_is_unused_and_keeps_it_in_history(store: Store) -> None:
    now = time.time_ns()
    store.clock = lambda: now
    store.write("old/a.md", b"a", author=A, parents=True)
    store.write("old/deep/b.md", b"b", author=A, parents=True)
    store.write("keep/c.md", b"c", author=A, parents=True)
    store.write("keep/read.md", b"r", author=A)
    store.mkdir("empty", author=A)
    store.clock = lambda: now + 5 * DAY
    store.write("keep/c.md", b"c2", author=A)
    store.mark_used(["keep/read.md"])
    store.clock = lambda: now + 10 * DAY

    dry = expire(store, 7 * DAY, dry_run=True)
    assert [f.path for f in dry.deleted] == ["old/a.md", "old/deep/b.md"]
    assert dry.dirs == ["old/deep", "old"] and store.stat("old/a.md").is_file

    report = expire(store, 7 * DAY, author="memfs expire (user tester)")
    assert [f.path for f in report.deleted] == ["old/a.md", "old/deep/b.md"]
    assert report.dirs == ["old/deep", "old"] and report.skipped == []
    assert sorted(e.path for e in store.walk()) == [
        "empty",
        "keep",
        "keep/c.md",
        "keep/read.md",
    ]
    deletes = [c for c in store.changes() if c.kind in ("delete", "rmdir")]
    assert {c.author for c in deletes} == {"memfs expire (user tester)"}
    (kept,) = store.history("old/a.md")
    assert store.read_revision("old/a.md", kept.rev) == b"a"  # restore can bring it back


def test_a_write_after_the_file_was_found_unused_wins(store: Store) -> None:
    now = time.time_ns()
    store.clock = lambda: now
    store.write("a.md", b"old", author=A)
    store.clock = lambda: now + 10 * DAY

    def write_meanwhile(path: str) -> bool:
        store.write(path, b"new", author="someone")
        return False

    report = expire(store, DAY, keep=write_meanwhile)
    assert report.deleted == []
    assert report.skipped == [("a.md", "changed since it was found unused")]
    assert store.read("a.md")[0] == b"new"


def test_model_views_count_as_use_and_listings_do_not(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "dir"
    root.mkdir()
    now = time.time_ns()
    store.clock = lambda: now
    store.write("viewed.md", b"v", author=A)
    store.write("listed.md", b"l", author=A)
    store.clock = lambda: now + 10 * DAY
    (root / "viewed.md").write_text("v")
    (root / "listed.md").write_text("l")
    handler = MemoryHandler(root, store=store)
    assert not handler.view("/memories").is_error
    assert not handler.view("/memories/viewed.md").is_error
    assert [e.path for e in store.unused(now + 10 * DAY - 1)] == ["listed.md"]


def test_cli_expire_prints_what_it_deleted(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "s.db")
    aged(url, {"notes/old.md": b"old", "top.md": b"t"}, days_ago=40)
    aged(url, {"notes/new.md": b"new"}, days_ago=1)
    with open_store(url) as s:
        rev = s.stat("notes/old.md").rev
        top = s.stat("top.md").rev
    runner = CliRunner()
    dry = runner.invoke(main, ["expire", "--store", url, "--unused-for", "30d", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    lines = dry.output.splitlines()
    assert lines[:2] == [
        f"would delete notes/old.md (revision {rev}, 3 bytes)",
        f"would delete top.md (revision {top}, 1 byte)",  # not "1 bytes"
    ]
    assert lines[2].startswith("Dry run: 2 files unused since ")
    assert lines[2].endswith(" would be deleted; nothing was changed.") and len(lines) == 3
    done = runner.invoke(main, ["expire", "--store", url, "--unused-for", "30d", "--json"])
    assert done.exit_code == 0, done.output
    assert [json.loads(line) for line in done.output.splitlines()] == [
        {"action": "deleted", "path": "notes/old.md", "rev": rev, "size": 3},
        {"action": "deleted", "path": "top.md", "rev": top, "size": 1},
    ]
    again = runner.invoke(main, ["expire", "--store", url, "--unused-for", "30d"])
    assert again.exit_code == 0
    assert again.output.startswith("Nothing to expire: no file unused since ")
    bad = runner.invoke(main, ["expire", "--store", url, "--unused-for", "soon"])
    assert bad.exit_code == 2 and "'soon' is not a duration" in bad.output


def test_installed_memfs_expire_deletes_and_says_so(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "s.db")
    aged(url, {"d/old.md": b"old"}, days_ago=3)
    done = subprocess.run(
        [MEMFS, "expire", "--store", url, "--unused-for", "2d"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    with open_store(url) as s:
        rev = s.history("d/old.md")[0].rev
        assert [e.path for e in s.walk()] == []
        cutoff = datetime.fromtimestamp((time.time_ns() - 2 * DAY) / 1e9).astimezone()
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"deleted d/old.md (revision {rev}, 3 bytes)", "deleted d/ (left empty)"]
    assert lines[2].startswith(f"Deleted 1 file unused since {cutoff:%Y-%m-%d}")
    missing = subprocess.run(
        [MEMFS, "expire", "--store", sqlite_url(tmp_path / "none.db"), "--unused-for", "1d"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no store at ")
    assert not (tmp_path / "none.db").exists()


@pytest.mark.fuse
def test_the_daemon_expires_on_a_schedule(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    url = sqlite_url(tmp_path / "s.db")
    aged(url, {"old.md": b"old", "dir/older.md": b"older"}, days_ago=10)
    m = mount_factory(store_url=url, options=MountOptions(expire_unused_for_ns=7 * DAY))
    (m.mountpoint / "fresh.md").write_text("fresh")
    wait_for(lambda: sorted(p.name for p in m.mountpoint.iterdir()) == ["fresh.md"], 20)
    record = state.lookup(m.mountpoint)
    assert record is not None
    log = Path(record.log_path).read_text()
    assert "memfs: expired 2 file(s) unused for 604800s: dir/older.md, old.md" in log
    assert record.errors == 0
    store = m.store()
    assert {c.author for c in store.changes() if c.kind == "delete"} == {
        c.author for c in store.changes() if c.kind == "rmdir"
    }
