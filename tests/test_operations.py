"""The operations API (memfs.history.operations) on real stores: what an operation is
(its actor, detail and summary from its folded steps), filters and paging, an undo that
takes back a 5,000-file ``rm -rf`` made through a real mount (every file back with its
bytes and mode), an undo of the undo that redoes, a conflict that refuses and changes
nothing; and history followed across renames (memfs.history.follow.lineage) from the
records' own priors, and from the feed for a store the previous release made."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.errors import NotFound
from memfs.history.follow import lineage
from memfs.history.operations import (
    operation,
    operation_changes,
    operation_steps,
    operations,
    undo_operation,
)
from memfs.store import open_store
from memfs.store.base import Act, Store
from tests.fixtures.mount import MountHandle, wait_for

FIXTURES = Path(__file__).parent / "fixtures" / "stores"
ME = pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path}/m.db")
    with s.acting(Act("alice (vim)", detail="pid 12", label="vim")):
        s.write("notes/a.md", b"one\n", author="alice (vim)", parents=True)
    s.write("notes/a.md", b"two\n", author="agent:planner")
    with s.acting(Act("alice (cp)", detail="pid 3", label="cp")):
        for i in range(5):
            s.write(f"many/{i}.md", b"x", author="alice (cp)", parents=True)
    with s.acting(Act("alice (rm)", detail="pid 4", label="rm")):
        s.delete("many", author="alice (rm)", recursive=True)
    yield s
    s.close()


def test_an_operation_has_its_actor_detail_and_summary(store: Store) -> None:
    ops = operations(store)
    assert [o.actor for o in ops] == ["alice (rm)", "alice (cp)", "agent:planner", "alice (vim)"]
    rm = ops[0]
    assert (rm.detail, rm.label, rm.top) == ("pid 4", "rm", "many")
    assert rm.counts == {"delete": 5, "rmdir": 1}
    assert rm.summary == "rm: deleted 5 files, removed 1 directory in many/"
    assert ops[2].summary == "agent:planner: edited notes/a.md"
    assert ops[3].summary == "vim: made directory notes, created notes/a.md"  # few: named
    assert [c.path for c in operation_changes(store, rm.id)][-1] == "many"
    assert [s.action for s in operation_steps(store, rm.id)][-1] == "rmdir"
    assert operation(store, rm.id) == rm
    assert rm.as_json()["id"] == rm.id


def test_filters_and_pages(store: Store) -> None:
    first = operations(store, limit=2)
    rest = operations(store, before=first[-1].id, limit=2)
    assert [o.label or o.actor for o in first + rest] == ["rm", "cp", "agent:planner", "vim"]
    assert [o.actor for o in operations(store, path="notes/a.md")] == [
        "agent:planner",
        "alice (vim)",
    ]
    assert [o.actor for o in operations(store, path="many")] == ["alice (rm)", "alice (cp)"]
    assert [o.actor for o in operations(store, actor="planner")] == ["agent:planner"]
    newest = first[0].start_ns
    assert [o.actor for o in operations(store, since_ns=newest)] == ["alice (rm)"]
    assert "alice (rm)" not in [o.actor for o in operations(store, until_ns=newest - 1)]


def test_an_unknown_id_is_not_found(store: Store) -> None:
    for bad in (0, 99, operations(store)[0].id + 1):
        with pytest.raises(NotFound):
            operation(store, bad)
        with pytest.raises(NotFound):
            undo_operation(store, bad, actor="tester")


def test_a_conflict_refuses_and_changes_nothing_unless_forced(store: Store) -> None:
    (vim,) = operations(store, actor="vim")
    last = store.last_seq()
    result = undo_operation(store, vim.id, actor="tester")
    assert result.conflicts == ["'notes/a.md' was changed since"]
    assert not result.done and result.new_op is None and store.last_seq() == last
    assert store.read("notes/a.md")[0] == b"two\n"


# --- through a real mount ----------------------------------------------------------------


def _mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o7777


def _files(mnt: Path) -> dict[str, tuple[bytes, int]]:
    found = {}
    for dirpath, _, names in os.walk(mnt / "many"):
        for name in names:
            path = Path(dirpath) / name
            found[str(path.relative_to(mnt))] = (path.read_bytes(), _mode(path))
    return found


@pytest.mark.fuse
def test_undo_of_rm_rf_of_5000_files_gives_every_file_back_and_undoing_the_undo_redoes(
    memfs_mount: MountHandle,
) -> None:
    mnt = memfs_mount.mountpoint
    store = memfs_mount.store()
    made = {
        f"many/d{i % 10}/{i}.md": (f"file {i}\n".encode() * (1 + i % 3), 0o600 | (i % 2) * 0o44)
        for i in range(5000)
    }
    with store.batch():  # made through the store: quick, and what the mount then shows
        for path, (data, mode) in made.items():
            store.write(path, data, author="seed", mode=mode, parents=True)
    wait_for(lambda: len(os.listdir(mnt / "many" / "d9")) == 500, what="the files on the mount")
    assert _files(mnt) == made

    subprocess.run(["rm", "-rf", str(mnt / "many")], check=True, timeout=300)
    wait_for(lambda: not (mnt / "many").exists(), what="rm -rf")
    (rm,) = operations(store, actor="(rm)")
    assert (rm.actor, rm.summary) == (
        f"{ME} (rm)",
        "rm: deleted 5,000 files, removed 11 directories in many/",
    )

    undone = undo_operation(store, rm.id, actor="tester")
    assert undone.done and undone.conflicts == [] and undone.new_op is not None
    assert undone.made == 5011
    # Visible through the live mount at once, every file with its bytes and mode.
    wait_for(lambda: len(os.listdir(mnt / "many" / "d9")) == 500, what="the files back")
    assert _files(mnt) == made
    assert operation(store, undone.new_op).detail == f"undo of operation {rm.id}"

    # Someone edits a file that came back: undoing the undo now conflicts, changes nothing.
    edited = mnt / "many" / "d3" / "13.md"
    subprocess.run(["sh", "-c", 'echo changed > "$1"', "sh", str(edited)], check=True)
    wait_for(lambda: store.read("many/d3/13.md")[0] == b"changed\n", what="the edit")
    last = store.last_seq()
    refused = undo_operation(store, undone.new_op, actor="tester")
    assert refused.conflicts == ["'many/d3/13.md' was changed since"] and not refused.done
    assert store.last_seq() == last and edited.read_bytes() == b"changed\n"

    # The edit taken back, the undo of the undo redoes the rm -rf.
    (sh,) = operations(store, actor="(sh)")
    assert undo_operation(store, sh.id, actor="tester").done
    wait_for(lambda: edited.read_bytes() == made["many/d3/13.md"][0], what="the edit undone")
    redone = undo_operation(store, undone.new_op, actor="tester")
    assert redone.done and redone.conflicts == []
    wait_for(lambda: not (mnt / "many").exists(), what="the rm -rf redone")
    with pytest.raises(NotFound):
        store.stat("many")


@pytest.mark.fuse
def test_history_follows_a_directory_move_and_a_save_keeps_the_path_s_own(
    memfs_mount: MountHandle,
) -> None:
    mnt = memfs_mount.mountpoint
    store = memfs_mount.store()
    (mnt / "projects" / "alpha").mkdir(parents=True)
    plan = mnt / "projects" / "alpha" / "plan.md"
    subprocess.run(["sh", "-c", 'echo one > "$1"', "sh", str(plan)], check=True)
    subprocess.run(["sh", "-c", 'echo two >> "$1"', "sh", str(plan)], check=True)
    wait_for(lambda: store.read("projects/alpha/plan.md")[0] == b"one\ntwo\n", what="writes")
    subprocess.run(["mv", str(mnt / "projects/alpha"), str(mnt / "projects/beta")], check=True)
    moved = mnt / "projects" / "beta" / "plan.md"
    subprocess.run(["sed", "-i", "s/two/three/", str(moved)], check=True)  # a save over it
    wait_for(lambda: store.read("projects/beta/plan.md")[0] == b"one\nthree\n", what="sed")
    revisions = lineage(store, "projects/beta/plan.md")
    shown = [(r.path, store.read_revision(r.path, r.rev)) for r in revisions]
    assert shown == [
        ("projects/beta/plan.md", b"one\nthree\n"),  # sed's save: no temporary name
        ("projects/beta/plan.md", b"one\ntwo\n"),  # the arrival by the move
        ("projects/alpha/plan.md", b"one\ntwo\n"),
        ("projects/alpha/plan.md", b"one\n"),
    ]
    # A file's own move onto a free name (its record says nothing was there) is followed.
    subprocess.run(["mv", str(moved), str(mnt / "projects" / "final.md")], check=True)
    wait_for(lambda: store.read("projects/final.md")[0] == b"one\nthree\n", what="mv")
    assert [r.path for r in lineage(store, "projects/final.md")] == [
        "projects/final.md",
        *[path for path, _ in shown],
    ]


def test_history_follows_a_rename_of_the_previous_release_from_the_feed(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "release-2026-12-01.db", path)
    with open_store(path) as store:
        (rename,) = [c for c in store.changes() if c.kind == "rename"]
        assert rename.prior_kind == "?"  # not recorded then: the feed says
        revisions = lineage(store, "notes/plan-v2.md")
    assert [r.path for r in revisions] == ["notes/plan-v2.md", "notes/plan.md"]
