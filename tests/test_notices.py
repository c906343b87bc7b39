"""Change notices: folding a real SQLite store's change feed, the snapshot fallback for a
plain directory, and the one-block wording the model reads."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.notices import (
    ChangeFeed,
    Notice,
    SnapshotWatcher,
    format_notices,
)
from memfs.store import Store, open_store

VIM = "vim (pid 812)"
CODE = "code (pid 90)"
AGENT_PID = 4242
AGENT = f"python3 (pid {AGENT_PID})"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'memory.db'}")
    try:
        yield s
    finally:
        s.close()


def _seed(store: Store) -> None:
    store.write("todo.md", b"- milk\n", author=VIM)
    store.write("old.md", b"old\n", author=VIM)
    store.mkdir("notes", author=VIM)
    store.write("notes/a.md", b"a\n", author=VIM)


def test_nothing_changed_gives_no_notice(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    assert feed.poll() == []
    assert format_notices(feed.poll()) == ""


def test_since_none_starts_now_and_each_poll_reports_once(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    store.write("todo.md", b"- milk\n- eggs\n", author=VIM)
    assert feed.poll() == [Notice("edited", "/memories/todo.md", authors=(VIM,))]
    assert feed.poll() == []


def test_coalescing_per_path(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    store.write("ideas.md", b"1\n", author=CODE)  # created ...
    store.write("ideas.md", b"1\n2\n", author=CODE)  # ... then edited: still created
    store.write("tmp.md", b"x\n", author=VIM)  # created then deleted: nothing
    store.delete("tmp.md", author=VIM)
    store.delete("old.md", author=VIM)
    store.rename("notes/a.md", "notes/b.md", author=VIM)
    assert feed.poll() == [
        Notice("created", "/memories/ideas.md", authors=(CODE,)),
        Notice("renamed", "/memories/notes/b.md", "/memories/notes/a.md", (VIM,)),
        Notice("deleted", "/memories/old.md", authors=(VIM,)),
    ]


def test_editor_saves_are_edits_not_creations(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    # An atomic save: a hidden temporary file renamed over the original.
    store.write(".todo.md.tmp", b"- bread\n", author=CODE)
    store.rename(".todo.md.tmp", "todo.md", author=CODE, overwrite=True)
    # vim's save: original renamed to a backup, new file written, backup removed.
    store.rename("old.md", "old.md~", author=VIM)
    store.write("old.md", b"new\n", author=VIM)
    store.delete("old.md~", author=VIM)
    assert feed.poll() == [
        Notice("edited", "/memories/todo.md", authors=(CODE,)),
        Notice("edited", "/memories/old.md", authors=(VIM,)),
    ]


def test_own_changes_are_excluded_by_pid_and_reset_what_others_did(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store, exclude=AGENT_PID)
    store.write("agent.md", b"mine\n", author=AGENT)
    store.write("todo.md", b"changed\n", author=VIM)
    store.write("draft.md", b"d\n", author=VIM)
    store.delete("draft.md", author=AGENT)  # the agent knows draft.md is gone
    assert feed.poll() == [Notice("edited", "/memories/todo.md", authors=(VIM,))]
    # A pid that merely ends with the same digits is someone else.
    store.write("x.md", b"x\n", author="sh (pid 14242)")
    assert [n.path for n in feed.poll()] == ["/memories/x.md"]
    # A callable works as well, per poll.
    store.write("y.md", b"y\n", author=CODE)
    assert feed.poll(exclude=lambda author: author.startswith("code ")) == []


def test_directory_moves_and_recursive_deletes_are_one_notice(store: Store) -> None:
    _seed(store)
    store.write("notes/b.md", b"b\n", author=VIM)
    feed = ChangeFeed(store)
    store.rename("notes", "archive", author=CODE)
    assert feed.poll() == [Notice("renamed", "/memories/archive", "/memories/notes", (CODE,))]
    store.delete("archive", author=CODE, recursive=True)
    assert feed.poll() == [Notice("deleted", "/memories/archive", authors=(CODE,))]


def test_rename_then_edit_and_rename_back(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    store.rename("todo.md", "tasks.md", author=VIM)
    store.write("tasks.md", b"more\n", author=CODE)
    notice = Notice("renamed", "/memories/tasks.md", "/memories/todo.md", (VIM, CODE), True)
    assert feed.poll() == [notice]
    store.rename("tasks.md", "t.md", author=VIM)
    store.rename("t.md", "tasks.md", author=VIM)
    assert feed.poll() == []


def test_hidden_entries_are_left_out(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    store.write(".todo.md.swp", b"swap", author=VIM)
    assert feed.poll() == []


def test_subdirectory_root_maps_to_memories(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store, root="notes")
    store.write("notes/c.md", b"c\n", author=VIM)
    store.write("outside.md", b"o\n", author=VIM)
    assert feed.poll() == [Notice("created", "/memories/c.md", authors=(VIM,))]


def test_format_wording_and_cap() -> None:
    notices = [
        Notice("edited", "/memories/todo.md", authors=(VIM,)),
        Notice("created", "/memories/ideas.md", authors=(CODE,)),
        Notice("deleted", "/memories/old.md"),
        Notice("renamed", "/memories/b.md", "/memories/a.md"),
    ]
    assert format_notices(notices) == (
        "Since your last turn, people changed /memories: "
        "edited /memories/todo.md (by vim (pid 812)); "
        "created /memories/ideas.md (by code (pid 90)); "
        "deleted /memories/old.md; "
        "renamed /memories/a.md -> /memories/b.md."
    )
    many = [Notice("created", f"/memories/n{i}.md") for i in range(23)]
    text = format_notices(many)
    assert text.endswith("; created /memories/n19.md; and 3 more.")
    assert text.count("created ") == 20


def test_snapshot_watcher_on_a_plain_directory(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    (root / "notes").mkdir(parents=True)
    (root / "todo.md").write_text("- milk\n")
    (root / "old.md").write_text("old\n")
    (root / "notes" / "a.md").write_text("a\n")
    watcher = SnapshotWatcher(root)
    assert watcher.poll() == []

    with open(root / "todo.md", "a") as f:
        f.write("- eggs\n")
    (root / "ideas.md").write_text("1\n")
    (root / "old.md").unlink()
    os.rename(root / "notes", root / "archive")
    (root / ".swap").write_text("hidden\n")
    assert sorted(watcher.poll(), key=lambda n: n.path) == [
        Notice("renamed", "/memories/archive", "/memories/notes"),
        Notice("created", "/memories/ideas.md"),
        Notice("deleted", "/memories/old.md"),
        Notice("edited", "/memories/todo.md"),
    ]
    assert watcher.poll() == []

    # What happens between poll and own_changes_done is the agent's own work.
    (root / "agent.md").write_text("mine\n")
    watcher.own_changes_done()
    assert watcher.poll() == []


def test_a_conflict_copy_is_named_as_one(tmp_path: Path) -> None:
    from memfs.notices import Notice, format_notices

    copy = "/memories/notes/app.conflict-20261201-093005-vim.md"
    text = format_notices([Notice("created", copy, authors=("root (vim)",))])
    assert text == (
        "Since your last turn, people changed /memories: kept"
        f" {copy} as a conflict copy beside /memories/notes/app.md (by root (vim))."
    )
    plain = format_notices([Notice("created", "/memories/conflict-notes.md")])
    assert plain.endswith("created /memories/conflict-notes.md.")
