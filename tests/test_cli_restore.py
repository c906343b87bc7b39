"""``memfs restore``, ``undo``, ``checkpoint`` and ``redact`` through click's CliRunner
on exact output, and a tree restore seen at once through a live mount."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.errors import Redacted
from memfs.history.operations import operations
from memfs.store import Store, open_store
from tests.fixtures.mount import MountHandle, wait_for
from tests.store_contract.common import tree

ME = "memfs {} (user "  # the start of the author the commands give their changes


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "m.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with open_store(db) as store:
        yield store


def run(db: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--store", str(db)])


def ok(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def again(db: Path, *args: str) -> str:
    """The hint memfs prints for running a command on this store again."""
    return " ".join([Path(sys.executable).with_name("memfs").as_posix(), *args, "--store", str(db)])


# --- one file ------------------------------------------------------------------------
def test_restore_puts_a_revision_back_as_a_new_one(db: Path, store: Store) -> None:
    first = store.write("a.md", b"v1", author="alice").rev
    store.write("a.md", b"v2", author="bob")
    assert ok(run(db, "restore", "a.md", "--rev", str(first))) == [
        f"restored a.md from revision {first} as revision {first + 2};"
        f" undo it with: {again(db, 'undo', '3')}"
    ]
    assert store.read("a.md")[0] == b"v1"
    assert store.history("a.md")[0].author.startswith(ME.format("restore"))


def test_restore_brings_back_a_deleted_file_and_one_renamed_away(db: Path, store: Store) -> None:
    gone = store.write("d/gone.md", b"gone", author="a", parents=True).rev
    store.delete("d", author="a", recursive=True)
    moved = store.write("was.md", b"was", author="a").rev
    store.rename("was.md", "now.md", author="a")
    ok(run(db, "restore", "d/gone.md", "--rev", str(gone)))
    ok(run(db, "restore", "was.md", "--rev", str(moved)))
    assert tree(store) == {
        "d": ("dir", None),
        "d/gone.md": ("file", b"gone"),
        "now.md": ("file", b"was"),
        "was.md": ("file", b"was"),
    }


def test_restore_usage_errors(db: Path, store: Store) -> None:
    for args, message in [
        (("restore", "a.md"), "give either PATH --rev REV or --to WHEN [PATH]"),
        (("restore", "--rev", "3"), "--rev needs the PATH of the file to restore"),
        (("restore", "a.md", "--rev", "1", "--dry-run"), "--dry-run goes with --to"),
    ]:
        result = run(db, *args)
        assert result.exit_code == 2 and message in result.stderr, result.stderr
    result = run(db, "restore", "nope.md", "--rev", "1")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: no entry and no retained history at 'nope.md' (in the store {db})\n"
    )


# --- the tree ------------------------------------------------------------------------------
@pytest.fixture
def agent_day(store: Store) -> Store:
    """A checkpointed tree, then an agent's changes on top of it."""
    store.write("notes/keep.md", b"keep", author="alice", parents=True)
    store.write("notes/edit.md", b"before", author="alice")
    store.set_checkpoint("morning", author="alice")
    store.write("notes/edit.md", b"after", author="agent:bob")
    store.write("notes/new.md", b"new", author="agent:bob")
    store.mkdir("scratch", author="agent:bob")
    store.delete("notes/keep.md", author="agent:bob")
    return store


def test_restore_to_a_checkpoint_dry_run_then_for_real(db: Path, agent_day: Store) -> None:
    planned = [
        "would delete  notes/new.md",
        "would remove directory  scratch",
        "would put back  notes/edit.md",
        "would put back  notes/keep.md",
        "4 changes would return the tree to morning",
    ]
    assert ok(run(db, "restore", "--to", "morning", "--dry-run")) == planned
    as_json = [
        json.loads(line)
        for line in ok(run(db, "restore", "--to", "morning", "--dry-run", "--json"))
    ]
    assert [(r["action"], r["path"]) for r in as_json] == [
        ("delete", "notes/new.md"),
        ("rmdir", "scratch"),
        ("write", "notes/edit.md"),
        ("write", "notes/keep.md"),
    ]
    assert "scratch" in tree(agent_day)  # a dry run changes nothing
    done = ok(run(db, "restore", "--to", "morning"))
    op = agent_day.operations(limit=1)[0]
    assert op.actor.startswith(ME.format("restore")) and op.label == "memfs restore"
    assert done == [line.removeprefix("would ") for line in planned[:-1]] + [
        "returned the tree to morning with 4 changes;"
        f" undo it with: {again(db, 'undo', str(op.id))}"
    ]
    assert tree(agent_day) == {
        "notes": ("dir", None),
        "notes/keep.md": ("file", b"keep"),
        "notes/edit.md": ("file", b"before"),
    }
    assert ok(run(db, "restore", "--to", "morning")) == ["the tree is already as it was at morning"]
    # The restore was one operation: one undo takes the agent's state back whole.
    ok(run(db, "undo", str(op.id)))
    assert tree(agent_day)["notes/new.md"] == ("file", b"new") and "scratch" in tree(agent_day)


def test_restore_a_subtree_to_a_revision_leaves_the_rest(db: Path, agent_day: Store) -> None:
    agent_day.write("other.md", b"untouched", author="agent:bob")
    rev = agent_day.history("notes/edit.md")[1].rev  # "before"
    lines = ok(run(db, "restore", "--to", str(rev), "notes"))
    assert lines[-1].startswith(f"returned notes to {rev} with 3 changes")
    snapshot = tree(agent_day)
    assert snapshot["other.md"] == ("file", b"untouched") and "scratch" in snapshot
    assert snapshot["notes/edit.md"] == ("file", b"before") and "notes/new.md" not in snapshot


# --- undo --------------------------------------------------------------------------------------
def test_undo_takes_one_operation_back_whole_or_changes_nothing(db: Path, agent_day: Store) -> None:
    agent_day.write("notes/new.md", b"a person's edit", author="carol")
    ops = {op.summary: op.id for op in operations(agent_day, limit=1000)}
    new = ops["agent:bob: created notes/new.md"]
    refused = run(db, "undo", str(new))
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        f"memfs undo: operation {new} (agent:bob: created notes/new.md) cannot be taken"
        " back whole:",
        "  'notes/new.md' was changed since",
        "Error: nothing was changed; take back what can be with --force",
    ]
    assert agent_day.read("notes/new.md")[0] == b"a person's edit"
    edit = ops["agent:bob: edited notes/edit.md"]
    lines = ok(run(db, "undo", str(edit)))
    undone = agent_day.operations(limit=1)[0]
    assert lines == [
        f"undid operation {edit} (agent:bob: edited notes/edit.md) as operation {undone.id};"
        f" undo it with: {again(db, 'undo', str(undone.id))}"
    ]
    assert agent_day.read("notes/edit.md")[0] == b"before"
    assert undone.label == "memfs undo" and undone.detail == f"undo of operation {edit}"
    # Undoing the undo redoes.
    ok(run(db, "undo", str(undone.id)))
    assert agent_day.read("notes/edit.md")[0] == b"after"


def test_undo_of_the_last_operations_by_an_actor(db: Path, agent_day: Store) -> None:
    lines = ok(run(db, "undo", "--actor", "agent:bob", "--last", "2"))
    assert lines[0].startswith("undid operation ")
    assert tree(agent_day)["notes/keep.md"] == ("file", b"keep")  # the delete undone
    assert "scratch" not in tree(agent_day)  # the mkdir undone
    assert tree(agent_day)["notes/new.md"] == ("file", b"new")  # not chosen: stays


def test_undo_dry_run_and_json_change_nothing(db: Path, agent_day: Store) -> None:
    seq = agent_day.last_seq()
    last = agent_day.operations(limit=1)[0]
    assert ok(run(db, "undo", "--dry-run")) == [
        f"would undo operation {last.id} (agent:bob: deleted notes/keep.md): 1 change",
        "  delete  notes/keep.md",
    ]
    record = json.loads(ok(run(db, "undo", "--dry-run", "--json", "--last", "2"))[0])
    assert record["would_undo"] == [last.id, last.id - 1] and record["done"] is False
    assert agent_day.last_seq() == seq


def test_undo_of_a_recursive_delete_brings_every_file_back(db: Path, store: Store) -> None:
    store.write("d/a", b"a", author="x", parents=True, mode=0o640)
    store.write("d/e/b", b"b", author="x", parents=True)
    before = tree(store)
    store.delete("d", author="agent", recursive=True)  # one operation, four records
    ok(run(db, "undo"))
    assert tree(store) == before
    assert store.stat("d/a").mode == 0o640


def test_undo_of_an_unknown_operation_is_one_line(db: Path, store: Store) -> None:
    store.write("a", b"a", author="x")
    result = run(db, "undo", "999")
    assert result.exit_code == 1
    assert result.stderr == f"Error: there is no operation 999 (in the store {db})\n"


# --- checkpoints and redaction -----------------------------------------------------------------
def test_checkpoints_are_made_listed_and_forgotten(db: Path, store: Store) -> None:
    store.write("a", b"1", author="x")
    assert ok(run(db, "checkpoint", "v1")) == [
        f"checkpoint v1 at change 1; return to it with: {again(db, 'restore', '--to', 'v1')}"
    ]
    listed = ok(run(db, "checkpoint", "--list"))
    assert len(listed) == 1 and listed[0].startswith("v1  ") and listed[0].endswith("  change 1")
    again_made = run(db, "checkpoint", "v1")
    assert again_made.exit_code == 1
    assert (
        again_made.stderr == f"Error: a checkpoint named 'v1' already exists (in the store {db})\n"
    )
    assert run(db, "checkpoint", "12").exit_code == 2  # digits are revisions
    assert ok(run(db, "checkpoint", "v1", "--delete")) == ["forgot checkpoint v1"]
    assert ok(run(db, "checkpoint", "--list")) == []


def test_redact_removes_a_secret_for_good_and_says_who(db: Path, store: Store) -> None:
    leaked = store.write("keys.md", b"AKIA-not-really-a-key", author="agent").rev
    refused = run(db, "redact", "keys.md", "--rev", str(leaked))
    assert refused.exit_code == 1 and "change or delete that file first" in refused.stderr
    store.write("keys.md", b"(removed)", author="alice")
    lines = ok(run(db, "redact", "keys.md", "--rev", str(leaked)))
    assert lines == [
        f"redacted keys.md revision {leaked} (by {ME.format('redact')}{lines[0][-6:]}",
        "purged: nothing else held it (no mount, journal or recovered copy of this store here)",
    ]
    with pytest.raises(Redacted):
        store.read_revision("keys.md", leaked)
    assert b"AKIA-not-really-a-key" not in db.read_bytes()
    history = CliRunner().invoke(main, ["history", "keys.md", "--store", str(db)]).output
    assert history.splitlines()[1].split("  ")[5].startswith("redacted by memfs redact (user ")


# --- a live mount follows -----------------------------------------------------------------------
@pytest.mark.fuse
def test_a_live_mount_shows_the_restored_tree_at_once(memfs_mount: MountHandle) -> None:
    mnt = memfs_mount.mountpoint
    (mnt / "plan.md").write_text("v1\n")
    store = memfs_mount.store()
    wait_for(lambda: store.read("plan.md")[0] == b"v1\n", what="the first save committed")
    memfs = Path(sys.executable).with_name("memfs")
    url = memfs_mount.store_url
    subprocess.run([memfs, "checkpoint", "good", "--store", url], check=True, timeout=60)
    (mnt / "plan.md").write_text("broken\n")
    (mnt / "junk.md").write_text("junk\n")
    wait_for(lambda: store.stat("junk.md"), what="the agent's edits committed")
    wait_for(lambda: store.read("plan.md")[0] == b"broken\n", what="the edit committed")
    done = subprocess.run(
        [memfs, "restore", "--to", "good", "--store", url],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines()[-1].startswith("returned the tree to good with 2 changes")
    wait_for(lambda: not (mnt / "junk.md").exists(), what="the mount dropping junk.md")
    wait_for(lambda: (mnt / "plan.md").read_text() == "v1\n", what="the mount showing v1")
    # Inside the mount, the log needs no --store: it is the mount's.
    shown = subprocess.run(
        [memfs, "log", "--limit", "2"],
        cwd=mnt,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    first = shown.stdout.splitlines()[0].split("  ")
    assert first[2].startswith("memfs restore (user ")
    assert first[3] == "memfs restore: edited plan.md, deleted junk.md"


def test_redact_names_what_it_cannot_purge_and_deletes_recovered_copies(
    db: Path, store: Store
) -> None:
    from memfs.mount import state

    secret = b"ghp_not-really-a-token-0123456789abcdef\n"
    leaked = store.write("keys.md", secret, author="agent").rev
    store.write("keys.md", b"(removed)", author="alice")
    where = state.mark_journal(store.url)
    (where / "recovered" / "notes").mkdir(parents=True)
    (where / "recovered" / "notes" / "keys.md").write_bytes(secret)
    (where / "recovered" / "notes" / "other.md").write_bytes(b"keep me")
    (where / "recovered" / "m.rescued-20260101-000000.db").write_bytes(b"a whole store")
    (where / "123-0.failed-20260101-000000").write_bytes(b"a journal that would not replay")
    lines = ok(run(db, "redact", "keys.md", "--rev", str(leaked)))
    assert lines[1:] == [
        "purged: 1 recovered copy deleted",
        f"not purged: 1 journal memfs could not replay, set aside in {where} (*.failed-*);"
        " read them, then delete them",
        f"not purged: 1 whole store rescued in {where / 'recovered'} (*.rescued-*) may hold"
        " it; delete them once you no longer need them",
    ]
    assert not (where / "recovered" / "notes" / "keys.md").exists()
    assert (where / "recovered" / "notes" / "other.md").read_bytes() == b"keep me"


# --- what the commands record ------------------------------------------------------------
@pytest.mark.parametrize("command", ["restore", "undo"])
def test_a_write_older_than_a_restore_or_undo_is_kept_beside_it(
    db: Path, store: Store, command: str
) -> None:
    from memfs.store.rebase import Shape, land

    first = store.write("a.md", b"v1\n", author="alice").rev
    second = store.write("a.md", b"v2\n", author="bob").rev
    args = ["restore", "a.md", "--rev", str(first)] if command == "restore" else ["undo"]
    ok(run(db, *args))
    assert store.read("a.md")[0] == b"v1\n"
    # The operation says which command it is, in a field no door sets.
    newest = store.operations(limit=1)[0]
    assert (newest.command, newest.label) == (command, f"memfs {command}")
    assert store.commands_since("a.md", second) == {command}
    shown = json.loads(run(db, "log", "--json", "--limit", "1").output)
    assert (shown["command"], shown["actor"].startswith(ME.format(command))) == (command, True)
    # A whole save built on v2 before the command (a mount's pending write) does not
    # revert it: it is kept as a conflict copy beside it.
    landing = land(store, "a.md", b"mine\n", base_rev=second, shape=Shape.WHOLE, author="vim")
    assert landing.outcome == "conflict" and landing.copy is not None
    assert store.read("a.md")[0] == b"v1\n" and store.read(landing.copy)[0] == b"mine\n"
