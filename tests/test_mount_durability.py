"""The write path's promises, each on a real daemon and a real SQLite file: what a call
acknowledged survives kill -9; what the store would refuse is refused by the call;
a failure after the fact keeps the data and says so; one revision per save per writer.

Each test is a reproduction of a loss that happened before the write path had one owner
(memfs/mount/writes.py).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.errors import MountError
from memfs.mount import state
from memfs.program import command
from tests.fixtures.disks import fill
from tests.fixtures.mount import MY_ACTOR, MountHandle, made_by, sqlite_url, wait_for

pytestmark = pytest.mark.fuse

MEMFS = str(Path(sys.executable).with_name("memfs"))


def test_closed_files_survive_kill9_without_fsync(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory()
    for i in range(200):
        (mount.mountpoint / f"n{i:03d}.txt").write_bytes(f"note {i}\n".encode() * (i + 1))
    mount.kill9()
    shown = subprocess.run([MEMFS, "status"], capture_output=True, text=True, timeout=60)
    assert (
        "Writes a stopped memfs daemon acknowledged are waiting in 1 journal(s) for "
        f"{mount.store_url}; mount that store again to save them: "
        f"{command('mount', '--store', mount.store_url)}"
    ) in shown.stdout.splitlines()
    mount.restart()
    shown = subprocess.run([MEMFS, "status"], capture_output=True, text=True, timeout=60)
    assert "journal" not in shown.stdout
    store = mount.store()
    for i in range(200):
        assert store.read(f"n{i:03d}.txt")[0] == f"note {i}\n".encode() * (i + 1)
    # Attributed to the program that wrote them, not to the recovery. (Committed before
    # the kill, a revision says the writer's pid; saved from the journal, that it was.)
    made = [made_by(store, "n007.txt", r.rev) for r in store.history("n007.txt")]
    details = {f"pid {os.getpid()}", "saved from the journal of a stopped daemon"}
    assert made and all(actor == MY_ACTOR and d in details for actor, d in made), made


def test_acknowledged_writes_in_place_and_truncates_survive_kill9(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory()
    f = mount.mountpoint / "log.md"
    f.write_bytes(b"a" * 10_000)
    with open(f, "rb+") as fh:
        os.fsync(fh.fileno())
    with open(f, "rb+") as fh:
        fh.seek(4000)
        fh.write(b"MIDDLE")
        fh.flush()
        fh.truncate(6000)
        fh.seek(8000)
        fh.write(b"past the end")  # leaves a hole
        fh.flush()
        expected = f.read_bytes()
        mount.kill9()
    mount.restart()
    assert mount.store().read("log.md")[0] == expected
    assert (mount.mountpoint / "log.md").read_bytes() == expected


def test_a_rename_that_would_carry_a_file_past_the_gate_is_refused_and_loses_nothing(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory()
    root = mount.mountpoint
    deep = root.joinpath(*[f"l{i}" for i in range(1, 19)])
    deep.mkdir(parents=True)
    (root / "x" / "y").mkdir(parents=True)
    (root / "x" / "y" / "f").write_text("hello\n")
    os.sync()
    with pytest.raises(OSError) as info:
        os.rename(root / "x", deep / "x")
    assert info.value.errno == errno.ENAMETOOLONG
    with open(root / "x" / "y" / "f", "a") as fh:
        fh.write("more\n")
    (root / "keep.txt").write_text("important\n")
    mount.stop()  # raises if anything could not be saved
    mount.restart()
    assert (root / "keep.txt").read_text() == "important\n"
    assert (root / "x" / "y" / "f").read_text() == "hello\nmore\n"


def test_names_and_paths_over_the_limits_answer_enametoolong(memfs_mount: MountHandle) -> None:
    root = memfs_mount.mountpoint
    with pytest.raises(OSError) as info:
        (root / ("n" * 256)).write_text("x")
    assert info.value.errno == errno.ENAMETOOLONG
    with pytest.raises(OSError) as info:
        root.joinpath(*[f"d{i}" for i in range(21)]).mkdir(parents=True)
    assert info.value.errno == errno.ENAMETOOLONG
    for probe in (os.stat, os.chmod):
        with pytest.raises(OSError) as info:
            probe(root / ("n" * 256), *(() if probe is os.stat else (0o600,)))
        assert info.value.errno == errno.ENAMETOOLONG
    with pytest.raises(OSError) as info:
        os.stat(root / "short-and-missing")
    assert info.value.errno == errno.ENOENT
    with pytest.raises(OSError) as info:
        (root / "CON").write_text("x")  # refused by the gate, but not for its length
    assert info.value.errno == errno.EINVAL


def test_a_directory_whose_only_entry_is_pending_is_not_empty(memfs_mount: MountHandle) -> None:
    root = memfs_mount.mountpoint
    (root / "a").mkdir()
    (root / "b").mkdir()
    (root / "a" / "same.txt").write_text("from a\n")
    (root / "b" / "same.txt").write_text("from b, just written\n")
    with pytest.raises(OSError) as info:
        os.rename(root / "a", root / "b")
    assert info.value.errno == errno.ENOTEMPTY
    with pytest.raises(OSError) as info:
        (root / "b").rmdir()
    assert info.value.errno == errno.ENOTEMPTY
    assert (root / "b" / "same.txt").read_text() == "from b, just written\n"
    assert (root / "a" / "same.txt").read_text() == "from a\n"


def test_a_save_by_another_program_is_its_own_revision(memfs_mount: MountHandle) -> None:
    root = memfs_mount.mountpoint
    # Within the quiet period: the second program's truncate must not fold into the first.
    subprocess.run(
        ["sh", "-c", "echo one > f; sh -c 'echo two > f'"], cwd=root, check=True, timeout=30
    )
    wait_for(lambda: memfs_mount.store().read("f")[0] == b"two\n", 10, what="commit")
    history = memfs_mount.store().history("f")
    assert [memfs_mount.store().read_revision("f", r.rev) for r in history] == [
        b"two\n",
        b"one\n",
    ]
    # Two revisions of one operation: the command line is one run of sh.
    assert {r.author for r in history} == {f"{MY_ACTOR.split()[0]} (sh)"}


def test_vim_saving_right_after_a_shell_write_keeps_both(memfs_mount: MountHandle) -> None:
    root = memfs_mount.mountpoint
    vim = (
        "vim.tiny"
        if subprocess.run(["which", "vim.tiny"], capture_output=True).returncode == 0
        else "vim"
    )
    subprocess.run(
        ["sh", "-c", f"echo one > f; {vim} -u NONE -es -c '%s/one/two/' -c wq f"],
        cwd=root,
        check=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    wait_for(lambda: memfs_mount.store().read("f")[0] == b"two\n", 10, what="vim's save")
    contents = [
        memfs_mount.store().read_revision("f", r.rev) for r in memfs_mount.store().history("f")
    ]
    assert contents[0] == b"two\n" and b"one\n" in contents[1:]


# --- a store whose disk fills after the mount acknowledged ----------------------------


def test_a_commit_that_fails_after_the_fact_keeps_the_data_and_says_so(
    mount_factory: Callable[..., MountHandle], small_disk: Path, memfs_state_dir: Path
) -> None:
    mount = mount_factory(store_url=sqlite_url(small_disk / "memory.db"))
    root = mount.mountpoint
    (root / "before.txt").write_text("committed\n")
    wait_for(lambda: mount.store().read("before.txt")[0] == b"committed\n", 10, what="commit")
    filler = fill(small_disk)
    data = os.urandom(256 << 10)
    (root / "late.bin").write_bytes(data)  # acknowledged: it is in the journal
    record = wait_for(
        lambda: (r := state.lookup(root)) is not None and "late.bin" in r.unsaved and r,
        15,
        what="the daemon to report late.bin unsaved",
    )
    copy = Path(record.recovery_dir) / "late.bin"
    assert copy.read_bytes() == data
    assert (root / "late.bin").read_bytes() == data  # still readable through the mount
    with pytest.raises(OSError) as info, open(root / "late.bin", "ab") as fh:
        fh.write(b"more")
        fh.flush()
    assert info.value.errno == errno.ENOSPC
    log = state.log_path(root).read_text()
    assert "could not save late.bin" in log
    shown = subprocess.run(
        [MEMFS, "status"], capture_output=True, text=True, timeout=60, check=False
    )
    assert "late.bin" in shown.stdout, shown.stdout
    # Unmounting while the disk is still full: memfs umount fails and names the file.
    with pytest.raises(MountError, match=r"late\.bin"):
        mount.stop()
    filler.unlink()
    mount.restart()  # the journal is replayed into the store, which has room again
    assert mount.store().read("late.bin")[0] == data
    assert mount.store().read("before.txt")[0] == b"committed\n"


def test_a_failed_commit_is_retried_once_there_is_room(
    mount_factory: Callable[..., MountHandle], small_disk: Path
) -> None:
    mount = mount_factory(store_url=sqlite_url(small_disk / "memory.db"))
    root = mount.mountpoint
    filler = fill(small_disk)
    (root / "wait.txt").write_bytes(b"w" * (300 << 10))

    def unsaved() -> tuple[str, ...] | None:
        record = state.lookup(root)
        return None if record is None else record.unsaved

    wait_for(lambda: unsaved() == ("wait.txt",), 15, what="wait.txt reported unsaved")
    filler.unlink()
    wait_for(lambda: mount.store().read("wait.txt")[0] == b"w" * (300 << 10), 15, what="retry")
    wait_for(lambda: unsaved() == (), 10, what="the report to clear")
    mount.stop()
