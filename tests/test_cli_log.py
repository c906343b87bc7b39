"""``memfs log`` and ``memfs diff`` through click's CliRunner, on exact output."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.store import Store, open_store

pytestmark = pytest.mark.usefixtures("utc")

# A day ago, on a whole minute: recent enough that nothing has left history yet.
T0 = (int(time.time()) // 60 - 24 * 60) * 60


def at(minute: int) -> str:
    """How the CLI prints the time ``minute`` minutes after T0 (in UTC)."""
    return datetime.fromtimestamp(T0 + 60 * minute, UTC).isoformat(timespec="seconds")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "m.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    """A small history, one call a minute from T0 (a write making its parent is one)."""
    with open_store(db) as store:
        ticks = iter(range(100))
        store.clock = lambda: (T0 + 60 * next(ticks)) * 10**9
        store.write("notes/a.md", b"one\ntwo\n", author="alice", parents=True)  # 0: seq 1, 2
        store.write("notes/a.md", b"one\nTWO\nthree\n", author="agent:bob")  # 1: seq 3
        store.set_checkpoint("start", author="alice")  # 2
        store.write("notes/b.md", b"bee\n", author="agent:bob")  # 3: seq 4
        store.rename("notes/a.md", "notes/c.md", author="agent:bob")  # 4: seq 5
        store.delete("notes/b.md", author="alice")  # 5: seq 6
        yield store


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


A2, A3, B = sha(b"one\ntwo\n"), sha(b"one\nTWO\nthree\n"), sha(b"bee\n")
# One line per operation, newest first: id, time, actor, what it did.
LOG = [
    f"5  {at(5)}  alice  deleted notes/b.md",
    f"4  {at(4)}  agent:bob  renamed notes/a.md -> notes/c.md",
    f"3  {at(3)}  agent:bob  created notes/b.md",
    f"2  {at(1)}  agent:bob  edited notes/a.md",
    f"1  {at(0)}  alice  made directory notes, created notes/a.md",
]


def lines(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_log_lists_every_operation_newest_first(db: Path, store: Store) -> None:
    assert lines(run("log", "--store", str(db))) == LOG


def test_log_filters_by_path_actor_limit_since_and_until(db: Path, store: Store) -> None:
    assert lines(run("log", "notes/c.md", "--store", str(db))) == [LOG[1]]
    assert lines(run("log", "notes/a.md", "--store", str(db))) == [LOG[1], LOG[3], LOG[4]]
    assert lines(run("log", "--actor", "bob", "--limit", "2", "--store", str(db))) == LOG[1:3]
    assert lines(run("log", "--author", "bob", "--limit", "2", "--store", str(db))) == LOG[1:3]
    assert lines(run("log", "--since", "start", "--store", str(db))) == LOG[:3]
    assert lines(run("log", "--since", at(3), "--store", str(db))) == LOG[:2]  # after it
    assert lines(run("log", "--until", at(3), "--store", str(db))) == LOG[2:]


def test_log_follows_a_file_across_its_renames(db: Path, store: Store) -> None:
    followed = lines(run("log", "notes/c.md", "--follow", "--store", str(db)))
    assert followed == [LOG[1], LOG[3], LOG[4]]
    result = run("log", "--follow", "--store", str(db))
    assert result.exit_code == 2 and "--follow needs the PATH" in result.stderr


def test_log_files_lists_each_operations_changes(db: Path, store: Store) -> None:
    shown = lines(run("log", "--files", "--limit", "2", "--store", str(db)))
    assert shown == [
        LOG[0],
        "    delete  notes/b.md",
        LOG[1],
        "    rename  notes/a.md -> notes/c.md  (revision 5)",
    ]


def test_log_since_a_duration_counts_back_from_now(db: Path, store: Store) -> None:
    store.clock = lambda: time.time_ns() - 30 * 60 * 10**9  # half an hour ago
    store.write("recent.md", b"r", author="carol")
    shown = lines(run("log", "--since", "2h", "--store", str(db)))
    assert shown == [shown[0]] and shown[0].endswith("carol  created recent.md")


def test_log_json_has_the_fields_scripts_use(db: Path, store: Store) -> None:
    records = [json.loads(line) for line in lines(run("log", "--json", "--store", str(db)))]
    assert records[1] == {
        "id": 4,
        "actor": "agent:bob",
        "detail": "",
        "label": "",
        "command": "",  # a door's, not one of memfs's own commands
        "time": T0 + 240.0,
        "start_ns": (T0 + 240) * 10**9,
        "end_ns": (T0 + 240) * 10**9,
        "summary": "agent:bob: renamed notes/a.md -> notes/c.md",
        "counts": {"rename": 1},
        "top": "notes",
        "changes": [{"path": "notes/c.md", "action": "rename", "rev": 5, "old_path": "notes/a.md"}],
    }
    assert [r["id"] for r in records] == [5, 4, 3, 2, 1]
    assert records[4]["changes"] == [
        {"path": "notes", "action": "mkdir", "rev": 1},
        {"path": "notes/a.md", "action": "create", "rev": 2},
    ]


def test_a_bad_since_is_a_usage_error(db: Path, store: Store) -> None:
    result = run("log", "--since", "yesterday", "--store", str(db))
    assert result.exit_code == 2
    assert "'yesterday' is neither a checkpoint, a revision number, an ISO time" in result.stderr


def test_diff_of_a_file_against_its_previous_revision(db: Path, store: Store) -> None:
    store.write("notes/c.md", b"one\nTWO\nthree\nfour\n", author="carol")
    assert run("diff", "notes/c.md", "--store", str(db)).output == (
        "--- a/notes/c.md@5\n+++ b/notes/c.md\n@@ -1,3 +1,4 @@\n one\n TWO\n three\n+four\n"
    )


def test_diff_between_two_revisions_and_in_colour(db: Path, store: Store) -> None:
    first = store.write("d.md", b"one\ntwo\n", author="x").rev
    second = store.write("d.md", b"one\nTWO\nthree\n", author="x").rev
    store.write("d.md", b"later\n", author="x")
    revs = (str(first), str(second))
    out = run("diff", "d.md", *revs, "--store", str(db)).output
    assert out.splitlines() == [
        f"--- a/d.md@{first}",
        f"+++ b/d.md@{second}",
        "@@ -1,2 +1,3 @@",
        " one",
        "-two",
        "+TWO",
        "+three",
    ]
    coloured = run("diff", "d.md", *revs, "--color", "--store", str(db)).output
    assert "\x1b[31m-two\x1b[0m" in coloured and "\x1b[32m+TWO\x1b[0m" in coloured


def test_diff_since_a_checkpoint_shows_the_tree_changes(db: Path, store: Store) -> None:
    out = run("diff", "--since", "start", "--store", str(db)).output
    assert out.splitlines() == [
        "--- a/notes/a.md",
        "+++ /dev/null",
        "@@ -1,3 +0,0 @@",
        "-one",
        "-TWO",
        "-three",
        "--- /dev/null",
        "+++ b/notes/c.md",
        "@@ -0,0 +1,3 @@",
        "+one",
        "+TWO",
        "+three",
    ]
    # Under a path that did not change: nothing.
    store.mkdir("other", author="x")
    assert run("diff", "--since", "start", "other", "--store", str(db)).output == ""


def test_diff_says_binary_files_differ(db: Path, store: Store) -> None:
    store.write("bin", b"\0\1", author="x")
    store.write("bin", b"\0\2", author="x")
    assert run("diff", "bin", "--store", str(db)).output == (
        "Binary files a/bin@6 and b/bin differ\n"
    )


def test_diff_usage_errors(db: Path, store: Store) -> None:
    result = run("diff", "--store", str(db))
    assert result.exit_code == 2 and "give a PATH, or --since WHEN" in result.stderr
    result = run("diff", "notes/c.md", "1", "2", "3", "--store", str(db))
    assert result.exit_code == 2 and "at most two revisions" in result.stderr
