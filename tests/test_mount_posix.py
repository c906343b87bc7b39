"""POSIX behaviours pjdfstest found wrong on the mount, each on a real daemon: a symlink
renamed over a created file, directory times on create, close after unlink with
--commit-on-close, and other users' entries through --allow-other."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfs.handler import MemoryHandler
from memfs.mount.options import MountOptions
from tests.fixtures.mount import MountHandle, wait_for

pytestmark = pytest.mark.fuse

MEMFS = str(Path(sys.executable).with_name("memfs"))
NOBODY = 65534


def clock_moves() -> None:
    """Let the clock pass 10 ms, so two times taken around a change can differ."""
    start = time.time_ns()
    wait_for(lambda: time.time_ns() > start + 10_000_000, 5, interval=0.005, what="the clock")


def test_a_symlink_renamed_over_a_created_file_can_be_removed(memfs_mount: MountHandle) -> None:
    root = memfs_mount.mountpoint
    fd = os.open(root / "file", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"data")
    os.symlink("target", root / "link")
    os.rename(root / "link", root / "file")
    assert os.readlink(root / "file") == "target"
    os.write(fd, b" more")  # the descriptor still names the replaced file
    os.close(fd)
    os.unlink(root / "file")
    assert not os.path.lexists(root / "file")
    fd = os.open(root / "file", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)


def test_directories_report_an_unknown_link_count_and_find_walks_them(
    memfs_mount: MountHandle,
) -> None:
    root = memfs_mount.mountpoint
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "leaf.txt").write_text("x")
    (root / "a" / "top.txt").write_text("y")
    assert os.stat(root / "a").st_nlink == 1  # not counted: never a wrong 2
    found = subprocess.run(
        ["find", str(root), "-type", "f"], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert sorted(Path(p).relative_to(root).as_posix() for p in found) == [
        "a/b/c/leaf.txt",
        "a/top.txt",
    ]


def test_creating_and_removing_a_file_moves_its_directorys_times(memfs_mount: MountHandle) -> None:
    d = memfs_mount.mountpoint / "d"
    d.mkdir()
    before = os.stat(d)
    clock_moves()
    (d / "new").write_bytes(b"x")  # not committed yet: the quiet period has not passed
    after_create = os.stat(d)
    assert after_create.st_mtime_ns > before.st_mtime_ns
    assert after_create.st_ctime_ns > before.st_ctime_ns
    clock_moves()
    os.unlink(d / "new")
    assert os.stat(d).st_mtime_ns > after_create.st_mtime_ns


def test_a_directory_mtime_set_after_writing_its_files_stays(memfs_mount: MountHandle) -> None:
    # rsync -a: write the files, then set the directory's mtime. The files' later commit
    # must not move it (it did, now and then, when the commit came after the utime).
    d = memfs_mount.mountpoint / "d"
    d.mkdir()
    (d / "f").write_bytes(b"pending until the quiet period ends")
    os.utime(d, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    store = memfs_mount.store()
    wait_for(lambda: store.read("d/f")[0], what="the file committed")
    assert store.stat("d").mtime_ns == 1_600_000_000 * 10**9
    assert os.stat(d).st_mtime_ns == 1_600_000_000 * 10**9


def test_close_after_unlink_or_replace_succeeds_with_commit_on_close(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory(options=MountOptions(commit_on_close=True))
    root = mount.mountpoint
    fd = os.open(root / "gone", os.O_RDWR | os.O_CREAT, 0o600)
    os.write(fd, b"tmp")
    os.unlink(root / "gone")
    os.write(fd, b" still")
    assert os.pread(fd, 100, 0) == b"tmp still"
    os.close(fd)  # used to answer ESTALE
    fd = os.open(root / "old", os.O_RDWR | os.O_CREAT, 0o600)
    (root / "new").write_bytes(b"replacement")
    os.rename(root / "new", root / "old")
    os.close(fd)
    # The handler's edits go through close too: they report what they did.
    handler = MemoryHandler(root)
    assert handler.execute({"command": "create", "path": "/memories/n.md", "file_text": "a\n"}) == (
        "File created successfully at: /memories/n.md",
        False,
    )
    content, is_error = handler.execute(
        {"command": "str_replace", "path": "/memories/n.md", "old_str": "a", "new_str": "b"}
    )
    assert not is_error, content
    assert mount.store().read("n.md")[0] == b"b\n"


def as_nobody(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a shell snippet as the unprivileged user ``nobody``."""

    def drop() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    return subprocess.run(
        ["sh", "-c", script],
        cwd=cwd,
        preexec_fn=drop,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def shared_dir(memfs_state_dir: Path) -> Iterator[Path]:
    """A directory every user can reach (pytest's own tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="memfs-shared-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    subprocess.run([MEMFS, "umount", str(d / "mnt")], capture_output=True, timeout=60)
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_allow_other_lets_other_users_in_and_their_files_are_theirs(shared_dir: Path) -> None:
    mp = shared_dir / "mnt"
    url = f"sqlite://{shared_dir / 'shared.db'}"

    def mount() -> None:
        done = subprocess.run(
            [MEMFS, "mount", str(mp), "--store", url, "--allow-other"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    mount()
    mp.chmod(0o1777)  # a shared directory, like /tmp
    (mp / "roots.txt").write_text("private\n")
    os.chmod(mp / "roots.txt", 0o600)
    made = as_nobody("echo hers > mine.txt && mkdir dir", cwd=mp)
    assert made.returncode == 0, made.stderr
    for name in ("mine.txt", "dir"):
        st = os.stat(mp / name)
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), name
    denied = as_nobody("cat roots.txt", cwd=mp)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    assert as_nobody("cat mine.txt", cwd=mp).stdout == "hers\n"
    # Ownership is in the store: it survives the daemon.
    stopped = subprocess.run([MEMFS, "umount", str(mp)], capture_output=True, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    mount()
    assert os.stat(mp / "mine.txt").st_uid == NOBODY
    assert os.stat(mp / "roots.txt").st_uid == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_without_allow_other_another_user_is_refused(shared_dir: Path) -> None:
    mp = shared_dir / "mnt"
    done = subprocess.run(
        [MEMFS, "mount", str(mp), "--store", f"sqlite://{shared_dir / 'private.db'}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert as_nobody("ls /", cwd=Path("/")).returncode == 0  # nobody can run ls at all
    probe = as_nobody(f"ls {mp}", cwd=Path("/"))
    assert probe.returncode != 0 and "Permission denied" in probe.stderr
