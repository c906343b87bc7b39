"""The live mirror: editor save patterns, bursts, directories, both directions at once.

Every test runs a real Mirror (watchdog observer on a real directory, real SQLite store)
on a background thread and waits on conditions with deadlines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memfs.store.base import Change
from tests.fixtures.sync import SyncRig, wait_for


def changes_after(rig: SyncRig, seq: int) -> list[Change]:
    return rig.store.changes(since=seq)


def one_edit(rig: SyncRig, path: str, before: int, content: bytes) -> None:
    """The save ended as exactly one new store revision of ``path``, by the mirror."""
    wait_for(lambda: rig.remote_has(path, content), what=f"{path} in the store")
    rig.settle()
    feed = changes_after(rig, before)
    assert [(c.kind, c.path) for c in feed] == [("modify", path)], feed
    assert rig.mirror is not None
    assert feed[0].author == rig.mirror.author
    assert "sync mirror" in feed[0].author and str(rig.dir) in feed[0].author
    assert rig.remote() == rig.synced_files()  # and no temp file reached the store
    assert set(rig.remote()) == {path}


@pytest.fixture
def synced_note(sync_rig: SyncRig) -> tuple[SyncRig, int]:
    """A rig with notes.md synced at one revision; returns the feed position after it."""
    sync_rig.store.write("notes.md", b"old text\n", author="agent")
    sync_rig.start()
    wait_for(lambda: sync_rig.disk_has("notes.md", b"old text\n"))
    sync_rig.settle()
    return sync_rig, sync_rig.store.last_seq()


def test_in_place_write_in_chunks_is_one_revision(synced_note: tuple[SyncRig, int]) -> None:
    rig, seq = synced_note
    with open(rig.dir / "notes.md", "wb") as f:  # VS Code style: truncate and write
        f.write(b"new ")
        f.flush()
        f.write(b"text\n")
    one_edit(rig, "notes.md", seq, b"new text\n")


def test_shell_redirect(synced_note: tuple[SyncRig, int]) -> None:
    rig, seq = synced_note
    subprocess.run(["sh", "-c", "echo 'from echo' > notes.md"], cwd=rig.dir, check=True)
    one_edit(rig, "notes.md", seq, b"from echo\n")


def test_jetbrains_safe_write(synced_note: tuple[SyncRig, int]) -> None:
    rig, seq = synced_note
    d = rig.dir
    (d / "notes.md___jb_tmp___").write_bytes(b"jetbrains\n")
    os.rename(d / "notes.md", d / "notes.md___jb_old___")
    os.rename(d / "notes.md___jb_tmp___", d / "notes.md")
    os.unlink(d / "notes.md___jb_old___")
    one_edit(rig, "notes.md", seq, b"jetbrains\n")


def test_gedit_goutputstream(synced_note: tuple[SyncRig, int]) -> None:
    rig, seq = synced_note
    tmp = rig.dir / ".goutputstream-K2X9QZ"
    tmp.write_bytes(b"gedit\n")
    os.rename(tmp, rig.dir / "notes.md")
    one_edit(rig, "notes.md", seq, b"gedit\n")


def test_vim_rename_save_with_swap_probe_and_backup(synced_note: tuple[SyncRig, int]) -> None:
    rig, seq = synced_note
    d = rig.dir
    swap = d / ".notes.md.swp"
    swap.write_bytes(b"\0" * 4096)  # vim opens the file: swap file
    (d / "4913").write_bytes(b"")  # :w probes whether it may create files
    os.unlink(d / "4913")
    os.rename(d / "notes.md", d / "notes.md~")  # backup by rename (backupcopy=no)
    (d / "notes.md").write_bytes(b"vim\n")
    os.unlink(d / "notes.md~")
    swap.unlink()
    one_edit(rig, "notes.md", seq, b"vim\n")


def test_real_vim(synced_note: tuple[SyncRig, int]) -> None:
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    rig, seq = synced_note
    subprocess.run(
        ["vim", "-u", "NONE", "-i", "NONE", "-N", "-es", "-c",
         "set backup writebackup backupcopy=no swapfile", "-c", "%s/old/vim/", "-c", "wq",
         "notes.md"],
        cwd=rig.dir, check=True, timeout=30, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    one_edit(rig, "notes.md", seq, b"vim text\n")


def test_sed_in_place(synced_note: tuple[SyncRig, int]) -> None:
    rig, seq = synced_note
    subprocess.run(["sed", "-i", "s/old/sed/", "notes.md"], cwd=rig.dir, check=True)
    one_edit(rig, "notes.md", seq, b"sed text\n")


def test_new_file_and_store_change_land_on_the_other_side(sync_rig: SyncRig) -> None:
    sync_rig.start()
    sync_rig.write("person.md", "by a person")
    sync_rig.store.write("agent.md", b"by the agent", author="agent")
    wait_for(lambda: sync_rig.remote_has("person.md", b"by a person"))
    wait_for(lambda: sync_rig.disk_has("agent.md", b"by the agent"))
    sync_rig.settle()
    assert (
        sync_rig.remote()
        == sync_rig.disk()
        == {
            "person.md": b"by a person",
            "agent.md": b"by the agent",
        }
    )
    # The mirror's own write into DIR was not echoed back as a new revision.
    assert [r.author for r in sync_rig.store.history("agent.md")] == ["agent"]


def test_both_directions_at_once(sync_rig: SyncRig) -> None:
    sync_rig.store.write("a.md", b"a0", author="agent")
    sync_rig.store.write("b.md", b"b0", author="agent")
    sync_rig.start()
    wait_for(sync_rig.converged)
    for i in range(1, 21):
        sync_rig.write("a.md", f"a{i}")
        sync_rig.store.write("b.md", f"b{i}".encode(), author="agent")
    wait_for(lambda: sync_rig.remote_has("a.md", b"a20") and sync_rig.disk_has("b.md", b"b20"))
    sync_rig.settle()
    assert sync_rig.disk() == sync_rig.remote() == {"a.md": b"a20", "b.md": b"b20"}


def test_a_burst_of_100_rewrites_all_lands(sync_rig: SyncRig) -> None:
    for i in range(100):
        sync_rig.store.write(f"f{i:03}.md", b"v1", author="agent", parents=True)
    sync_rig.start()
    wait_for(sync_rig.converged)
    for i in range(100):
        sync_rig.write(f"f{i:03}.md", f"v2 of {i}")
    expected = {f"f{i:03}.md": f"v2 of {i}".encode() for i in range(100)}
    wait_for(lambda: sync_rig.remote() == expected, what="all 100 rewrites in the store")
    sync_rig.settle()
    assert sync_rig.disk() == expected
    assert all(len(sync_rig.store.history(p)) == 2 for p in expected)


def test_git_checkout_of_many_files(sync_rig: SyncRig, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    d = sync_rig.dir

    def git(*args: str) -> None:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
        subprocess.run(["git", *args], cwd=d, check=True, env=env, capture_output=True)

    git("init", "-q", "-b", "main")
    for i in range(60):
        sync_rig.write(f"docs/page{i}.md", f"one {i}\n")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    git("checkout", "-q", "-b", "two")
    for i in range(60):
        sync_rig.write(f"docs/page{i}.md", f"two {i}\n")
    git("commit", "-q", "-am", "two")
    git("checkout", "-q", "main")
    sync_rig.start()
    wait_for(lambda: len(sync_rig.remote()) == 60)
    git("checkout", "-q", "two")
    expected = {f"docs/page{i}.md": f"two {i}\n".encode() for i in range(60)}
    wait_for(lambda: sync_rig.remote() == expected, what="the checkout in the store")
    sync_rig.settle()
    assert not any(p.startswith(".git") for p in sync_rig.remote())


def test_rm_r_of_a_subdirectory_is_a_real_delete(sync_rig: SyncRig) -> None:
    for i in range(6):
        sync_rig.write(f"keep/k{i}.md", "keep")
    for i in range(3):
        sync_rig.write(f"old/deep/o{i}.md", "old")
    sync_rig.start()
    wait_for(lambda: len(sync_rig.remote()) == 9)
    shutil.rmtree(sync_rig.dir / "old")
    wait_for(lambda: "old" not in sync_rig.remote_dirs(), what="old/ gone from the store")
    sync_rig.settle()
    assert set(sync_rig.remote()) == {f"keep/k{i}.md" for i in range(6)}
    assert not (sync_rig.dir / "old").exists()


def test_renaming_a_directory_is_a_store_rename(sync_rig: SyncRig) -> None:
    for i in range(3):
        sync_rig.write(f"drafts/d{i}.md", f"draft {i}")
    sync_rig.write("other.md", "x")
    sync_rig.start()
    wait_for(lambda: len(sync_rig.remote()) == 4)
    sync_rig.settle()
    seq = sync_rig.store.last_seq()
    os.rename(sync_rig.dir / "drafts", sync_rig.dir / "final")
    wait_for(lambda: "final" in sync_rig.remote_dirs() and "drafts" not in sync_rig.remote_dirs())
    sync_rig.settle()
    assert sync_rig.remote() == {
        **{f"final/d{i}.md": f"draft {i}".encode() for i in range(3)},
        "other.md": b"x",
    }
    feed = changes_after(sync_rig, seq)
    assert [(c.kind, c.old_path, c.path) for c in feed] == [("rename", "drafts", "final")]
    # History travelled with the files.
    assert sync_rig.store.history("final/d0.md")[0].author == sync_rig.mirror.author  # type: ignore[union-attr]


def test_renaming_a_file(sync_rig: SyncRig) -> None:
    sync_rig.write("a.md", "content")
    sync_rig.start()
    wait_for(lambda: sync_rig.remote_has("a.md", b"content"))
    sync_rig.settle()
    seq = sync_rig.store.last_seq()
    os.rename(sync_rig.dir / "a.md", sync_rig.dir / "b.md")
    wait_for(lambda: sync_rig.remote() == {"b.md": b"content"})
    sync_rig.settle()
    assert [c.kind for c in changes_after(sync_rig, seq)] == ["rename"]


def test_store_side_directory_operations_reach_disk(sync_rig: SyncRig) -> None:
    sync_rig.start()
    sync_rig.store.write("proj/a/x.md", b"x", author="agent", parents=True)
    wait_for(lambda: sync_rig.disk_has("proj/a/x.md", b"x"))
    sync_rig.store.rename("proj/a", "proj/b", author="agent")
    wait_for(lambda: sync_rig.disk() == {"proj/b/x.md": b"x"})
    sync_rig.store.delete("proj", author="agent", recursive=True)
    wait_for(lambda: not (sync_rig.dir / "proj").exists(), what="proj/ removed from disk")
    sync_rig.settle()
    assert sync_rig.remote() == {} and sync_rig.disk() == {}


def test_empty_directories_are_mirrored(sync_rig: SyncRig) -> None:
    sync_rig.start()
    (sync_rig.dir / "empty").mkdir()
    sync_rig.store.mkdir("from-store", author="agent")
    wait_for(lambda: "empty" in sync_rig.remote_dirs() and (sync_rig.dir / "from-store").is_dir())
    (sync_rig.dir / "empty").rmdir()
    wait_for(lambda: "empty" not in sync_rig.remote_dirs())
    sync_rig.settle()
    assert sync_rig.remote_dirs() == sync_rig.disk_dirs() == {"from-store"}


def test_live_conflict_keeps_both(sync_rig: SyncRig) -> None:
    sync_rig.store.write("plan.md", b"base", author="agent")
    # A long quiet period holds the person's save while the agent writes, so both sides
    # have changed when the mirror looks: deterministic, not a race.
    mirror = sync_rig.start(quiet=1.0)
    wait_for(lambda: sync_rig.disk_has("plan.md", b"base"))
    sync_rig.settle()
    sync_rig.write("plan.md", "person's plan")
    sync_rig.store.write("plan.md", b"agent's plan", author="agent")
    wait_for(lambda: len(sync_rig.remote()) == 2, what="the conflict copy in the store")
    sync_rig.settle()
    remote = sync_rig.remote()
    assert remote["plan.md"] == b"agent's plan"
    (copy,) = set(remote) - {"plan.md"}
    assert copy.startswith("plan.conflict-") and copy.endswith("-local.md")
    assert remote[copy] == b"person's plan"
    assert sync_rig.disk() == remote
    assert mirror.author in {r.author for r in sync_rig.store.history(copy)}
