"""The state records that let any memfs process find the daemon and store behind a
directory (no FUSE needed: records are plain files naming processes)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from memfs.mount import state
from memfs.mount.state import MountRecord


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait(10)
    return proc.pid


def _record(mountpoint: Path, pid: int, url: str = "sqlite:///x.db") -> MountRecord:
    return MountRecord(str(state.normalize(mountpoint)), url, pid, "/dev/null", time.time())


def test_write_lookup_remove(tmp_path: Path, memfs_state_dir: Path) -> None:
    mp = tmp_path / "mnt"
    mp.mkdir()
    record = _record(mp, os.getpid())
    state.write(record)
    assert state.lookup(mp) == record
    assert state.lookup(tmp_path / "mnt" / "." / "notes" / "todo.md") == record  # inside
    assert state.lookup(tmp_path) is None  # the parent is not served
    assert state.lookup(tmp_path / "mnt-other") is None  # a prefix is not a parent
    assert state.records() == [record]
    state.remove(mp)
    assert state.lookup(mp) is None
    assert list(memfs_state_dir.glob("*.json")) == []


def test_lookup_resolves_symlinks_and_relative_paths(
    tmp_path: Path, memfs_state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mp = tmp_path / "real"
    mp.mkdir()
    os.symlink(mp, tmp_path / "alias")
    record = _record(mp, os.getpid())
    state.write(record)
    monkeypatch.chdir(tmp_path)
    assert state.lookup("alias/sub") == record
    assert state.lookup("real") == record


def test_the_deepest_mount_wins(tmp_path: Path, memfs_state_dir: Path) -> None:
    outer, inner = tmp_path / "a", tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    state.write(_record(outer, os.getpid(), "sqlite:///outer.db"))
    state.write(_record(inner, os.getpid(), "sqlite:///inner.db"))
    found = state.lookup(inner / "file.md")
    assert found is not None and found.store_url == "sqlite:///inner.db"
    found = state.lookup(outer / "file.md")
    assert found is not None and found.store_url == "sqlite:///outer.db"


def test_stale_and_unreadable_records_are_reported_once_and_cleaned(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    live = _record(tmp_path / "live", os.getpid())
    dead = _record(tmp_path / "dead", _dead_pid())
    state.write(live)
    state.write(dead)
    (memfs_state_dir / "garbage.json").write_text("{not json")
    assert state.lookup(tmp_path / "dead") is None
    assert state.lookup(tmp_path / "dead", include_stale=True) == dead
    assert state.scan() == ([live], [dead])
    assert state.scan() == ([live], [])
    assert sorted(p.name for p in memfs_state_dir.glob("*.json")) == [
        state.record_path(tmp_path / "live").name
    ]


def test_remove_with_a_pid_spares_a_successor(tmp_path: Path, memfs_state_dir: Path) -> None:
    mp = tmp_path / "mnt"
    state.write(_record(mp, os.getpid()))
    state.remove(mp, pid=os.getpid() + 1_000_000)  # an earlier daemon shutting down late
    assert state.lookup(mp) is not None
    state.remove(mp, pid=os.getpid())
    assert state.lookup(mp) is None


def test_zombies_count_as_dead() -> None:
    proc = subprocess.Popen(["true"])
    # Not reaped yet: the process is a zombie that still answers kill(pid, 0).
    deadline = time.monotonic() + 10
    while state.pid_alive(proc.pid):
        assert time.monotonic() < deadline, "a finished child still counts as alive"
        time.sleep(0.01)
    assert proc.wait(10) == 0
    assert not state.pid_alive(proc.pid)


def test_state_dir_and_default_mountpoint_follow_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(state.STATE_DIR_ENV, str(tmp_path / "s"))
    assert state.state_dir() == tmp_path / "s" and (tmp_path / "s").is_dir()
    monkeypatch.setenv(state.MOUNTPOINT_ENV, str(tmp_path / "m"))
    assert state.default_mountpoint() == tmp_path / "m"
    monkeypatch.delenv(state.MOUNTPOINT_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state.default_mountpoint() == tmp_path / "home" / "memories"


def test_a_reused_pid_does_not_make_a_dead_daemon_alive(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    # The record says the daemon started an hour ago; the process now holding that pid
    # (this one) started later, so it cannot be that daemon.
    old = MountRecord(str(tmp_path / "mnt"), "sqlite:///x.db", os.getpid(), "", time.time() - 3600)
    assert not old.alive
    state.write(old)
    assert state.scan() == ([], [old])
    fresh = MountRecord(str(tmp_path / "mnt"), "sqlite:///x.db", os.getpid(), "", time.time())
    assert fresh.alive
