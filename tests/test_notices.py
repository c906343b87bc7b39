"""Change notices: a real store's change feed told in operations (one notice per
operation, summed up by its net steps), the snapshot fallback for a plain directory, the
one-block wording the model reads, and real programs through a real mount: ``rm -rf`` of
5,000 files is one line, ``sed -i`` and ``vim`` saves are one edit with no temporary
name, ``cp -r`` and ``mv`` one line each."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from memfs.errors import NotFound
from memfs.notices import (
    ChangeFeed,
    Notice,
    SnapshotWatcher,
    format_notices,
)
from memfs.store import Store, open_store
from memfs.store.base import Act
from tests.fixtures.mount import MountHandle, wait_for

VIM = "alice (vim)"
CODE = "bob (code)"
AGENT_PID = 4242
START = "Since your last turn, people changed /memories: "


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'memory.db'}")
    try:
        yield s
    finally:
        s.close()


def acting(store: Store, actor: str, pid: int = 812) -> AbstractContextManager[None]:
    """One operation by ``actor``, as the mount makes one of a process's burst."""
    return store.acting(Act(actor, detail=f"pid {pid}", label=actor.partition("(")[2][:-1]))


def _seed(store: Store) -> None:
    store.write("todo.md", b"- milk\n", author="seed")
    store.write("old.md", b"old\n", author="seed")
    store.mkdir("notes", author="seed")
    store.write("notes/a.md", b"a\n", author="seed")


def test_nothing_changed_gives_no_notice(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    assert feed.poll() == []
    assert format_notices(feed.poll()) == ""


def test_since_none_starts_now_and_each_poll_reports_once(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    with acting(store, VIM):
        store.write("todo.md", b"- milk\n- eggs\n", author=VIM)
    (notice,) = feed.poll()
    assert notice == Notice(
        "edited", "/memories/todo.md", None, VIM, "edited /memories/todo.md", notice.op
    )
    assert notice.op == store.operations(limit=1)[0].id
    assert feed.poll() == []


def test_one_notice_per_operation_with_its_net_effect(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    with acting(store, CODE, 90):
        store.write("ideas.md", b"1\n", author=CODE)  # created ...
        store.write("ideas.md", b"1\n2\n", author=CODE)  # ... then edited: created
        store.write("tmp.md", b"x\n", author=CODE)  # created then deleted: nothing
        store.delete("tmp.md", author=CODE)
    with acting(store, VIM):
        store.delete("old.md", author=VIM)
    with acting(store, VIM, 813):
        store.rename("notes/a.md", "notes/b.md", author=VIM)
    with acting(store, CODE, 91):  # an operation that changed nothing for good
        store.write("scratch.md", b"x\n", author=CODE)
        store.delete("scratch.md", author=CODE)
    assert format_notices(feed.poll()) == (
        f"{START}bob (code) created /memories/ideas.md; "
        "alice (vim) deleted /memories/old.md; "
        "alice (vim) renamed /memories/notes/a.md -> /memories/notes/b.md."
    )


def test_editor_saves_are_one_edit_without_their_temporary_names(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    with acting(store, CODE, 90):  # an atomic save: a temporary file renamed over the original
        store.write("todo.md.tmp-8e1f", b"- bread\n", author=CODE)
        store.rename("todo.md.tmp-8e1f", "todo.md", author=CODE, overwrite=True)
    with acting(store, VIM):  # vim's: the original renamed to a backup, a new file, no backup
        store.rename("old.md", "old.md~", author=VIM)
        store.write("old.md", b"new\n", author=VIM)
        store.delete("old.md~", author=VIM)
    notices = feed.poll()
    assert [(n.kind, n.path, n.actor) for n in notices] == [
        ("edited", "/memories/todo.md", CODE),
        ("edited", "/memories/old.md", VIM),
    ]
    text = format_notices(notices)
    assert "tmp" not in text and "~" not in text


def test_own_operations_are_left_out_by_feed_number_pid_or_actor(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store, exclude=AGENT_PID)
    with acting(store, "root (python3)", AGENT_PID):
        store.write("agent.md", b"mine\n", author="root (python3)")
    with acting(store, VIM):
        store.write("todo.md", b"changed\n", author=VIM)
    with acting(store, VIM, 813):
        store.write("draft.md", b"d\n", author=VIM)
    with acting(store, "root (python3)", AGENT_PID):
        store.delete("draft.md", author="root (python3)")  # the agent knows it is gone
    assert [n.summary for n in feed.poll()] == ["edited /memories/todo.md"]
    # A pid that merely ends with the same digits is someone else.
    with acting(store, "root (sh)", 14242):
        store.write("x.md", b"x\n", author="root (sh)")
    assert [n.path for n in feed.poll()] == ["/memories/x.md"]
    # A callable on the actor works as well, per poll.
    with acting(store, CODE, 90):
        store.write("y.md", b"y\n", author=CODE)
    assert feed.poll(exclude=lambda actor: actor.startswith("bob ")) == []
    # The handler's own feed numbers: whoever it says it is.
    store.write("z.md", b"z\n", author="agent")
    own = set(store.appended())
    feed.own_seqs = lambda: own
    assert feed.poll() == []


def test_directory_moves_and_recursive_deletes_are_one_notice(store: Store) -> None:
    _seed(store)
    store.write("notes/b.md", b"b\n", author="seed")
    feed = ChangeFeed(store)
    with acting(store, CODE, 90):
        store.rename("notes", "archive", author=CODE)
    assert feed.poll() == [
        Notice(
            "renamed",
            "/memories/archive",
            "/memories/notes",
            CODE,
            "renamed /memories/notes -> /memories/archive",
            store.operations(limit=1)[0].id,
        )
    ]
    with acting(store, "root (rm)", 29402):
        store.delete("archive", author="root (rm)", recursive=True)
    (notice,) = feed.poll()
    assert (notice.kind, notice.path) == ("changed", "/memories/archive")
    assert format_notices([notice]) == (
        f"{START}root (rm) deleted /memories/archive/b.md, deleted /memories/archive/a.md,"
        " removed directory /memories/archive."
    )


def test_a_rename_and_an_edit_in_one_operation_say_both(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    with acting(store, VIM):
        store.rename("todo.md", "tasks.md", author=VIM)
        store.write("tasks.md", b"more\n", author=VIM)
    (notice,) = feed.poll()
    assert notice.summary == "renamed /memories/todo.md -> /memories/tasks.md and edited it"
    with acting(store, VIM, 813):  # moved away and back: nothing for good
        store.rename("tasks.md", "t.md", author=VIM)
        store.rename("t.md", "tasks.md", author=VIM)
    assert feed.poll() == []


def test_hidden_entries_are_left_out_and_moves_across_the_line_are_new_or_gone(
    store: Store,
) -> None:
    _seed(store)
    feed = ChangeFeed(store)
    with acting(store, VIM):
        store.write(".todo.md.swp", b"swap", author=VIM)
    assert feed.poll() == []
    with acting(store, VIM, 813):
        store.rename(".todo.md.swp", "recovered.md", author=VIM)
    with acting(store, VIM, 814):
        store.rename("old.md", ".old.md", author=VIM)
    assert [n.summary for n in feed.poll()] == [
        "created /memories/recovered.md",
        "deleted /memories/old.md",
    ]


def test_subdirectory_root_maps_to_memories(store: Store) -> None:
    _seed(store)
    feed = ChangeFeed(store, root="notes")
    with acting(store, VIM):
        store.write("notes/c.md", b"c\n", author=VIM)
        store.write("outside.md", b"o\n", author=VIM)
    with acting(store, VIM, 813):
        store.write("elsewhere.md", b"e\n", author=VIM)
    assert [n.summary for n in feed.poll()] == ["created /memories/c.md"]


def test_format_wording_and_cap() -> None:
    notices = [
        Notice("edited", "/memories/todo.md", actor=VIM, summary="edited /memories/todo.md"),
        Notice(
            "changed",
            "/memories/many",
            actor="root (rm)",
            summary="deleted 5,000 files, removed 1 directory in /memories/many/",
        ),
        Notice("deleted", "/memories/old.md"),
        Notice("renamed", "/memories/b.md", "/memories/a.md"),
    ]
    assert format_notices(notices) == (
        f"{START}alice (vim) edited /memories/todo.md; "
        "root (rm) deleted 5,000 files, removed 1 directory in /memories/many/; "
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


def test_a_conflict_copy_is_named_as_one(store: Store) -> None:
    copy = "/memories/notes/app.conflict-20261201-093005-vim.md"
    text = format_notices([Notice("created", copy, actor="root (vim)")])
    assert text == (
        f"{START}root (vim) kept {copy} as a conflict copy beside /memories/notes/app.md."
    )
    plain = format_notices([Notice("created", "/memories/conflict-notes.md")])
    assert plain.endswith("created /memories/conflict-notes.md.")
    # From the feed: the operation that kept the copy says so beside what else it did.
    _seed(store)
    feed = ChangeFeed(store)
    with acting(store, VIM):
        store.write("notes/a.md", b"mine\n", author=VIM)
        store.write("notes/a.conflict-20261201-093005-vim.md", b"theirs\n", author=VIM)
    assert [n.summary for n in feed.poll()] == [
        "edited /memories/notes/a.md and kept"
        " /memories/notes/a.conflict-20261201-093005-vim.md as a conflict copy beside"
        " /memories/notes/a.md"
    ]


# --- real programs through a real mount ------------------------------------------------

ME = pwd.getpwuid(os.getuid()).pw_name


def _run(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(args, cwd=cwd, check=True, timeout=120, capture_output=True)


def _gone(store: Store, path: str) -> bool:
    try:
        store.stat(path)
    except NotFound:
        return True
    return False


@pytest.mark.fuse
def test_rm_rf_of_5000_files_through_the_mount_is_one_line(memfs_mount: MountHandle) -> None:
    mnt = memfs_mount.mountpoint
    store = memfs_mount.store()
    with store.batch():  # made through the store: quick, and what the mount then shows
        for i in range(5000):
            store.write(f"many/d{i % 10}/{i}.md", b"x\n", author="seed", parents=True)
    wait_for(lambda: len(os.listdir(mnt / "many" / "d9")) == 500, what="the files on the mount")
    feed = ChangeFeed(store)
    _run("rm", "-rf", str(mnt / "many"))
    wait_for(lambda: _gone(store, "many"), what="rm -rf committed")
    notices = feed.poll()
    assert format_notices(notices) == (
        f"{START}{ME} (rm) deleted 5,000 files, removed 11 directories in /memories/many/."
    )
    assert notices[0].kind == "changed" and notices[0].path == "/memories/many"


@pytest.mark.fuse
def test_sed_vim_cp_and_mv_through_the_mount_are_one_line_each(
    memfs_mount: MountHandle, tmp_path: Path
) -> None:
    mnt = memfs_mount.mountpoint
    store = memfs_mount.store()
    (mnt / "todo.md").write_text("- milk\n")
    (mnt / "plan.md").write_text("- plan\n")
    wait_for(lambda: store.read("plan.md")[0] == b"- plan\n", what="the files committed")
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    for i in range(30):
        (source / "sub" / f"{i}.md").write_text(f"{i}\n")
    feed = ChangeFeed(store)
    _run("sed", "-i", "s/milk/oat milk/", str(mnt / "todo.md"))
    wait_for(lambda: store.read("todo.md")[0] == b"- oat milk\n", what="sed's save")
    vim = shutil.which("vim") or shutil.which("vi")
    if vim is not None:
        edit = [vim, "-u", "NONE", "-i", "NONE", "-es", "-c", "%s/plan/better plan/", "-c", "wq"]
        subprocess.run(
            [*edit, str(mnt / "plan.md")], check=True, timeout=60, stdin=subprocess.DEVNULL
        )
        wait_for(lambda: store.read("plan.md")[0] == b"- better plan\n", what="vim's save")
    _run("cp", "-r", str(source), str(mnt / "copied"))
    wait_for(lambda: len(store.listdir("copied/sub")) == 30, what="cp -r")
    _run("mv", str(mnt / "copied"), str(mnt / "moved"))
    wait_for(lambda: _gone(store, "copied"), what="mv")
    lines = format_notices(feed.poll()).removeprefix(START).removesuffix(".").split("; ")
    expected = [f"{ME} (sed) edited /memories/todo.md"]
    if vim is not None:
        expected.append(f"{ME} ({Path(vim).name}) edited /memories/plan.md")
    expected += [
        f"{ME} (cp) made 2 directories, created 30 files in /memories/copied/",
        f"{ME} (mv) renamed /memories/copied -> /memories/moved",
    ]
    assert lines == expected
