"""History in operations, end to end: real programs through a real mount, on SQLite and
PostgreSQL. Each program's run is one operation by "USER (PROGRAM)"; atomic saves are
one edit with no temporary name anywhere; one undo takes a whole run back."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memfs.store.base import Store
from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.postgres import PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))
USER = pwd.getpwuid(os.getuid()).pw_name

pytestmark = pytest.mark.fuse


@pytest.fixture(params=["sqlite", "postgresql"])
def mount(
    request: pytest.FixtureRequest, mount_factory: Callable[..., MountHandle]
) -> Iterator[MountHandle]:
    if request.param == "sqlite":
        yield mount_factory()
        return
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    yield mount_factory(store_url=cluster.url())


def sh(*args: str, cwd: Path | None = None, **env: str) -> str:
    """Run one command as a shell runs a command line: in a process group of its own
    (the mount tells one run of a program from the next by it)."""
    done = subprocess.run(
        list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
        process_group=0,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def memfs(m: MountHandle, *args: str) -> str:
    return sh(MEMFS, *args, "--store", m.store_url)


def ops(m: MountHandle, *args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in memfs(m, "log", "--json", *args).splitlines()]


def settled(m: MountHandle, store: Store, path: str, data: bytes) -> None:
    """Wait until the mount committed ``path`` holding ``data``."""

    def there() -> bool:
        try:
            return store.read(path)[0] == data
        except Exception:
            return False

    wait_for(there, 10, what=f"{path} committed")


def newest(m: MountHandle, program: str) -> dict[str, Any]:
    """The newest operation of ``program``, once its last buffered write is committed."""
    return wait_for(
        lambda: next((o for o in ops(m, "--limit", "20") if o["label"] == program), None),
        10,
        what=f"an operation of {program}",
    )


@pytest.mark.timeout(360)  # 5,000 unlinks, then 5,000 files back, on a loaded machine
def test_rm_rf_of_5000_files_is_one_operation_undone_whole(mount: MountHandle) -> None:
    store = mount.store()
    with store.batch():
        for i in range(5000):
            mode = 0o640 if i % 2 else 0o600
            store.write(f"many/d{i % 10}/f{i}.md", b"%d\n" % i, author="x", parents=True, mode=mode)
    wait_for(lambda: (mount.mountpoint / "many" / "d9" / "f4999.md").exists(), 10)
    sh("rm", "-rf", str(mount.mountpoint / "many"))
    op = newest(mount, "rm")
    assert op["actor"] == f"{USER} (rm)" and op["detail"].startswith("pid ")
    assert op["summary"] == "rm: deleted 5,000 files, removed 11 directories in many/"
    text = memfs(mount, "log", "--limit", "1")
    assert f"  {USER} (rm)  rm: deleted 5,000 files, removed 11 directories in many/" in text
    memfs(mount, "undo", str(op["id"]))
    wait_for(lambda: (mount.mountpoint / "many" / "d9" / "f4999.md").exists(), 10)
    back = sorted(str(p.relative_to(mount.mountpoint)) for p in mount.mountpoint.rglob("*.md"))
    assert len(back) == 5000
    assert (mount.mountpoint / "many/d3/f123.md").read_bytes() == b"123\n"
    assert (mount.mountpoint / "many/d3/f123.md").stat().st_mode & 0o777 == 0o640
    assert (mount.mountpoint / "many/d4/f124.md").stat().st_mode & 0o777 == 0o600


def test_atomic_saves_are_one_edit_and_leave_no_temporary_name(mount: MountHandle) -> None:
    store = mount.store()
    f = mount.mountpoint / "notes.md"
    f.write_text("alpha\nbeta\n")
    settled(mount, store, "notes.md", b"alpha\nbeta\n")
    saves = [
        ("sed", ["sed", "-i", "s/alpha/ALPHA/", str(f)], b"ALPHA\nbeta\n"),
        ("vim", ["vim", "-es", "-u", "NONE", "-c", "%s/beta/BETA/", "-c", "wq", str(f)],
         b"ALPHA\nBETA\n"),
        ("python3", ["python3", "-c", (
            "import os,sys; p=sys.argv[1]; t=p+'.tmp'; open(t,'w').write('gamma\\n');"
            " os.replace(t,p)"), str(f)], b"gamma\n"),
    ]  # fmt: skip
    for program, argv, after in saves:
        sh(*argv)
        settled(mount, store, "notes.md", after)
        op = newest(mount, program)
        assert op["summary"] == f"{program}: edited notes.md", op
        assert [c["path"] for c in op["changes"]] == ["notes.md"]
    # No temporary name in the log, the history, a diff or secrets --history.
    every = memfs(mount, "log", "--files")
    assert "sed" not in every.replace("sed:", "").replace("(sed)", "")
    assert ".tmp" not in every and "~" not in every and "4913" not in every
    for entry in store.walk():
        assert entry.path == "notes.md"
    assert "sedX" not in memfs(mount, "secrets", "--history")
    # One undo takes back the last save whole, and leaves no temporary file either.
    op = newest(mount, "python3")
    memfs(mount, "undo", str(op["id"]))
    wait_for(lambda: f.read_text() == "ALPHA\nBETA\n", 10, what="the save undone")
    assert sorted(p.name for p in mount.mountpoint.iterdir()) == ["notes.md"]


def test_cp_r_and_rsync_a_are_one_operation_each(mount: MountHandle, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for i in range(30):
        (src / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (src / f"d{i % 3}" / f"f{i}.txt").write_text(f"{i}\n")
    store = mount.store()
    sh("cp", "-r", str(src), str(mount.mountpoint / "copy"))
    for i in range(30):  # every file's buffer committed: the operation is whole
        settled(mount, store, f"copy/d{i % 3}/f{i}.txt", f"{i}\n".encode())
    op = newest(mount, "cp")
    assert op["summary"] == "cp: made 4 directories, created 30 files in copy/"
    sh("rsync", "-a", f"{src}/", f"{mount.mountpoint / 'synced'}/")
    for i in range(30):
        settled(mount, store, f"synced/d{i % 3}/f{i}.txt", f"{i}\n".encode())
    op = newest(mount, "rsync")
    # rsync writes each file to a temporary name and renames it: folded away.
    assert op["summary"] == "rsync: made 4 directories, created 30 files in synced/"
    assert all(".f" not in c["path"].rsplit("/", 1)[-1][:2] for c in op["changes"])


def test_git_checkout_is_one_operation_and_undo_brings_the_work_tree_back(
    mount: MountHandle,
) -> None:
    repo = mount.mountpoint / "repo"
    repo.mkdir()
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    sh("git", "init", "-q", "-b", "main", cwd=repo, **git)
    store = mount.store()
    (repo / "a.md").write_text("main a\n")
    (repo / "b.md").write_text("main b\n")
    settled(mount, store, "repo/b.md", b"main b\n")
    sh("git", "add", ".", cwd=repo, **git)
    sh("git", "commit", "-qm", "main", cwd=repo, **git)
    sh("git", "checkout", "-qb", "other", cwd=repo, **git)
    (repo / "a.md").write_text("other a\n")
    (repo / "b.md").unlink()
    (repo / "c.md").write_text("other c\n")
    # the work tree's edits committed first, so that "main a" below is the checkout's
    settled(mount, store, "repo/a.md", b"other a\n")
    settled(mount, store, "repo/c.md", b"other c\n")
    sh("git", "add", "-A", cwd=repo, **git)
    sh("git", "commit", "-qm", "other", cwd=repo, **git)
    sh("git", "checkout", "-q", "main", cwd=repo, **git)
    assert (repo / "b.md").read_text() == "main b\n"
    settled(mount, store, "repo/a.md", b"main a\n")
    settled(mount, store, "repo/b.md", b"main b\n")  # the checkout whole, then its undo
    checkout = newest(mount, "git")
    assert checkout["actor"] == f"{USER} (git)"
    memfs(mount, "undo", str(checkout["id"]))
    wait_for(lambda: (repo / "a.md").read_text() == "other a\n", 10, what="the checkout undone")
    assert not (repo / "b.md").exists()
    assert (repo / "c.md").read_text() == "other c\n"
    assert sh("git", "status", "--porcelain", cwd=repo, **git) == ""


def test_history_follows_a_directory_rename(mount: MountHandle) -> None:
    store = mount.store()
    plan = mount.mountpoint / "projects" / "alpha" / "plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("v1\n")
    settled(mount, store, "projects/alpha/plan.md", b"v1\n")
    sh("sh", "-c", f"echo v2 >> {plan}")
    settled(mount, store, "projects/alpha/plan.md", b"v1\nv2\n")
    sh("mv", str(mount.mountpoint / "projects/alpha"), str(mount.mountpoint / "projects/beta"))
    wait_for(lambda: store.stat("projects/beta/plan.md"), 10)
    followed = memfs(mount, "history", "projects/beta/plan.md", "--follow").splitlines()
    assert len(followed) == 3  # the arrival, then the two saves under the old name
    assert followed[1].endswith("(as projects/alpha/plan.md)")
    old = followed[2].split("  ")[0]
    shown = memfs(mount, "history", "projects/beta/plan.md", "--follow", "--show", old)
    assert shown == "v1\n"
    assert memfs(mount, "diff", "projects/beta/plan.md") == (
        f"--- a/projects/alpha/plan.md@{old}\n+++ b/projects/beta/plan.md\n"
        "@@ -1 +1,2 @@\n v1\n+v2\n"
    )
    moved = newest(mount, "mv")
    assert moved["summary"] == "mv: renamed projects/alpha -> projects/beta"
    logged = memfs(mount, "log", "projects/beta/plan.md", "--follow").splitlines()
    assert len(logged) >= 3
