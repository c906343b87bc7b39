"""``memfs mount --subtree PATH``: one directory of the store as the mount's root.

Real FUSE mounts of a real SQLite store: what is written through the mount lands under
the directory in the store, the rest of the tree cannot be seen or reached (not by
``..``, not by a symlink, not by a rename), other writers' changes inside show through
the mount, and the history commands see a path of the mount as its store path.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.errors import MountError, NotFound, PathError
from memfs.mount import daemon, state
from memfs.store import open_store
from memfs.store.subtree import SubtreeStore
from tests.fixtures.mount import MY_ACTOR, MountHandle, sqlite_url, wait_for

pytestmark = pytest.mark.fuse

SUB = "claude-code/team-repo"


@pytest.fixture
def seeded(tmp_path: Path) -> str:
    """A store holding files inside and outside the subtree."""
    url = sqlite_url(tmp_path / "s.db")
    with open_store(url) as store:
        store.write(f"{SUB}/MEMORY.md", b"- [a](a.md)\n", author="seed", parents=True)
        store.write("secret/outside.md", b"not yours\n", author="seed", parents=True)
        store.write("claude-code/other-repo/MEMORY.md", b"other\n", author="seed", parents=True)
    return url


def test_writes_land_under_the_subtree(
    mount_factory: Callable[..., MountHandle], seeded: str
) -> None:
    m = mount_factory("mnt", seeded, subtree=SUB)
    mp = m.mountpoint
    assert sorted(os.listdir(mp)) == ["MEMORY.md"]
    assert (mp / "MEMORY.md").read_text() == "- [a](a.md)\n"
    (mp / "notes").mkdir()
    (mp / "notes" / "b.md").write_text("b\n")
    with open(mp / "MEMORY.md", "a") as f:
        f.write("- [b](notes/b.md)\n")
        f.flush()
        os.fsync(f.fileno())
    m.stop()
    with open_store(seeded) as store:
        assert store.read(f"{SUB}/notes/b.md")[0] == b"b\n"
        assert store.read(f"{SUB}/MEMORY.md")[0] == b"- [a](a.md)\n- [b](notes/b.md)\n"
        with pytest.raises(NotFound):
            store.stat("notes")
        assert store.read("secret/outside.md")[0] == b"not yours\n"
        # The mount's writes are a person's, named as through any mount.
        op = store.operations(path=f"{SUB}/notes/b.md", limit=1)[0]
        assert op.actor == MY_ACTOR


def test_the_rest_of_the_tree_is_out_of_reach(
    mount_factory: Callable[..., MountHandle], seeded: str, tmp_path: Path
) -> None:
    m = mount_factory("mnt", seeded, subtree=SUB)
    mp = m.mountpoint
    # ".." at the mount's root is the directory the mount sits in, not the store.
    assert sorted(os.listdir(mp / "..")) == sorted(os.listdir(tmp_path))
    assert not (mp / ".." / "secret").exists()
    # A symlink is data: following it leads out of the mount, never into the store.
    os.symlink("../../secret/outside.md", mp / "link")
    assert not (mp / "link").exists()
    # Moving a file out of the mount crosses file systems: the kernel refuses it.
    (mp / "x.md").write_text("x\n")
    with pytest.raises(OSError) as caught:
        os.rename(mp / "x.md", tmp_path / "x.md")
    assert caught.value.errno == errno.EXDEV
    m.stop()
    with open_store(seeded) as store:
        # The symlink is stored inside the subtree with its text as written.
        assert store.stat(f"{SUB}/link").target == "../../secret/outside.md"
        assert store.read("secret/outside.md")[0] == b"not yours\n"
        assert [e.path for e in store.listdir("")] == ["claude-code", "secret"]


def test_the_view_refuses_dot_segments(seeded: str) -> None:
    with open_store(seeded) as base:
        view = SubtreeStore(base, SUB)
        for bad in ("..", "../secret/outside.md", "a/../../secret", "./MEMORY.md", "/x"):
            with pytest.raises(PathError):
                view.stat(bad)
            with pytest.raises(PathError):
                view.write(bad, b"x", author="t", parents=True)
        with pytest.raises(PathError):
            SubtreeStore(base, "a/../b")
        with pytest.raises(PathError):
            SubtreeStore(base, "/")
        assert [e.path for e in view.listdir("")] == ["MEMORY.md"]
        assert view.stat("").path == ""


def test_other_writers_changes_show_through(
    mount_factory: Callable[..., MountHandle], seeded: str
) -> None:
    m = mount_factory("mnt", seeded, subtree=SUB)
    mp = m.mountpoint
    assert os.listdir(mp) == ["MEMORY.md"]
    store = m.store()
    store.write(f"{SUB}/new.md", b"from elsewhere\n", author="other")
    wait_for(lambda: (mp / "new.md").exists(), what="another writer's file in the mount")
    # Changes outside move the feed without showing anything in the mount.
    for i in range(5):
        store.write(f"secret/more-{i}.md", b"x", author="other")
    store.rename(f"{SUB}/new.md", "secret/moved-out.md", author="other")
    wait_for(lambda: not (mp / "new.md").exists(), what="a file moved out to disappear")
    store.rename("secret/outside.md", f"{SUB}/moved-in.md", author="other")
    wait_for(lambda: (mp / "moved-in.md").exists(), what="a file moved in to appear")
    assert sorted(os.listdir(mp)) == ["MEMORY.md", "moved-in.md"]


def test_a_missing_subtree_is_made_and_a_file_refused(
    mount_factory: Callable[..., MountHandle], seeded: str, tmp_path: Path
) -> None:
    m = mount_factory("fresh", seeded, subtree="claude-code/new-repo")
    assert os.listdir(m.mountpoint) == []
    with open_store(seeded) as store:
        assert store.stat("claude-code/new-repo").is_dir
    with pytest.raises(MountError, match=r"secret/outside\.md"):
        daemon.start(tmp_path / "onfile", seeded, subtree="secret/outside.md")
    assert state.lookup(tmp_path / "onfile") is None


def test_status_and_history_commands_see_the_subtree(
    mount_factory: Callable[..., MountHandle], seeded: str
) -> None:
    m = mount_factory("mnt", seeded, subtree=SUB)
    record = state.lookup(m.mountpoint)
    assert record is not None and record.subtree == SUB
    runner = CliRunner()
    shown = runner.invoke(main, ["status"])
    assert shown.exit_code == 0, shown.output
    assert f"({SUB}/)" in shown.output
    assert f"serves the store's directory {SUB}/ as its root" in shown.output
    as_json = json.loads(runner.invoke(main, ["status", "--json"]).output)
    assert [x["subtree"] for x in as_json["mounts"]] == [SUB]
    f = m.mountpoint / "MEMORY.md"
    with open(f, "a") as out:
        out.write("- more\n")
        out.flush()
        os.fsync(out.fileno())
    # A path in the mount is its store path to `memfs history`.
    hist = runner.invoke(main, ["history", str(f)])
    assert hist.exit_code == 0, hist.output
    assert MY_ACTOR in hist.output and "seed" in hist.output


def test_a_non_empty_mountpoint_is_refused_with_what_to_do(
    tmp_path: Path, memfs_state_dir: Path, seeded: str
) -> None:
    target = tmp_path / "full"
    target.mkdir()
    (target / "MEMORY.md").write_text("mine\n")
    result = CliRunner().invoke(main, ["mount", str(target), "--store", seeded])
    assert result.exit_code == 1
    assert "is not empty" in result.output
    assert "import" in result.output and "claude-code enable" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_command_line_mounts_a_subtree(
    tmp_path: Path, memfs_state_dir: Path, seeded: str
) -> None:
    mp = tmp_path / "cli-mnt"
    runner = CliRunner()
    try:
        done = runner.invoke(main, ["mount", str(mp), "--store", seeded, "--subtree", f"/{SUB}/"])
        assert done.exit_code == 0, done.output
        assert done.output.startswith(f"Mounted {SUB}/ of ")
        assert os.listdir(mp) == ["MEMORY.md"]
        bad = runner.invoke(
            main, ["mount", str(tmp_path / "x"), "--store", seeded, "--subtree", "a/../b"]
        )
        assert bad.exit_code == 1 and "the subtree 'a/../b' is not a directory" in bad.output
    finally:
        gone = runner.invoke(main, ["umount", str(mp)])
    assert gone.exit_code == 0, gone.output
