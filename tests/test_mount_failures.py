"""The daemon's own failure paths: a child that cannot mount or does not come up, a
frozen or busy daemon on stop, and the test suite's FUSE gate."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from memfs import host
from memfs.errors import MountError
from memfs.mount import daemon, spawn, state
from memfs.program import command
from tests.fixtures.mount import MountHandle, daemon_gone, require_fuse, sqlite_url, wait_for

pytestmark = pytest.mark.fuse


def _nothing_mounted(tmp_path: Path) -> None:
    assert state.records() == []
    for path in tmp_path.iterdir():
        assert host.mount_entry(path) is None, f"{path} is mounted"


def _daemons_serving(mountpoint: Path) -> list[int]:
    """Live processes whose command line names ``mountpoint`` as a daemon's."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not state.pid_alive(int(entry.name)):
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"memfs.mount.daemon" in argv and str(mountpoint).encode() in argv:
            found.append(int(entry.name))
    return found


# --- the daemon's own failure paths ---------------------------------------------------------


def test_a_child_that_cannot_mount_reports_why(tmp_path: Path, memfs_state_dir: Path) -> None:
    require_fuse()
    mp = tmp_path / "mnt"
    mp.mkdir()
    (mp / "late.txt").write_text("appeared after the checks\n")
    # Skip start()'s checks, as a file appearing between the checks and the mount would.
    with pytest.raises(MountError) as info:
        spawn.spawn(mp, sqlite_url(tmp_path / "s.db"), debug=False, options=None, timeout=10)
    assert "not empty" in str(info.value) and "\n" not in str(info.value)
    _nothing_mounted(tmp_path)


def test_a_child_that_does_not_come_up_in_time_is_cleaned_up(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    require_fuse()
    mp = tmp_path / "mnt"
    mp.mkdir()
    with pytest.raises(MountError) as info:
        spawn.spawn(mp, sqlite_url(tmp_path / "s.db"), debug=False, options=None, timeout=0)
    message = str(info.value)
    first, *tail = message.splitlines()
    assert first == (
        f"The memfs daemon for {mp} did not come up within 0 s; its log {state.log_path(mp)} ends:"
    )
    assert tail and tail[0].startswith("  --- memfs daemon starting at ")
    _nothing_mounted(tmp_path)
    assert _daemons_serving(mp) == []


def test_stop_unmounts_even_when_the_daemon_is_frozen(memfs_mount: MountHandle) -> None:
    mp, pid = memfs_mount.mountpoint, memfs_mount.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        notes: list[str] = []
        with pytest.raises(MountError) as info:
            daemon.stop(mp, timeout=0.5, on_note=notes.append)
        assert str(info.value) == (
            f"The memfs daemon (pid {pid}) did not exit after unmounting {mp}; "
            f"stop it with: kill -9 {pid}"
        )
        assert notes == []  # the plain unmount worked: nothing was busy
        assert host.mount_entry(mp) is None
    finally:
        os.kill(pid, signal.SIGCONT)
    # Woken up, it finds its SIGTERM and its mount gone, and exits cleanly on its own.
    wait_for(lambda: daemon_gone(pid), 15, what="daemon exit")
    assert state.records() == []


def test_stop_detaches_a_busy_mount_of_a_frozen_daemon_with_a_warning(
    memfs_mount: MountHandle,
) -> None:
    mp, pid = memfs_mount.mountpoint, memfs_mount.pid
    squatter = subprocess.Popen(["sleep", "60"], cwd=mp)  # a shell sitting in the mount
    os.kill(pid, signal.SIGSTOP)
    try:
        notes: list[str] = []
        with pytest.raises(MountError):
            daemon.stop(mp, timeout=0.5, on_note=notes.append)
        assert notes == [
            f"Warning: {mp} was busy and has been detached lazily; it disappears when "
            "the last process using it lets go."
        ]
        assert host.mount_entry(mp) is None
    finally:
        os.kill(pid, signal.SIGCONT)
        squatter.kill()
        squatter.wait(10)
    wait_for(lambda: daemon_gone(pid), 15, what="daemon exit")


# --- the FUSE gate of the test suite itself ----------------------------------------------------


def test_missing_fuse_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = host.fuse_problem(device="/nonexistent/fuse")
    assert problem == (
        "/nonexistent/fuse does not exist, so FUSE cannot mount here; load the fuse module "
        f"(modprobe fuse) or run {command('sync')} DIR instead."
    )
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="FUSE unavailable"):
        require_fuse(problem)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="FUSE is required in CI"):
        require_fuse(problem)
