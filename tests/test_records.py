"""The directory of per-process JSON records (memfs.records) that mount daemons and
mirrors share: where it is, what a record file is called, privacy, stale cleanup."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.errors import MountError, SyncError
from memfs.mount import state
from memfs.records import STATE_DIR_ENV, record_name
from memfs.sync import running


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait(timeout=10)
    return proc.pid


def _mount_record(mountpoint: Path, pid: int | None = None) -> state.MountRecord:
    return state.MountRecord(
        mountpoint=str(mountpoint),
        store_url="sqlite:///x.db",
        pid=os.getpid() if pid is None else pid,
        log_path="/dev/null",
        started=time.time(),
    )


def test_both_kinds_share_one_state_directory_and_never_see_each_other(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    state.write(_mount_record(tmp_path / "mnt"))
    mirror = running.new_record(tmp_path / "dir", "sqlite:///x.db")
    running.write(mirror)
    assert state.state_dir() == memfs_state_dir
    assert running.records_dir() == memfs_state_dir / "mirrors"
    assert [r.mountpoint for r in state.records()] == [str(tmp_path / "mnt")]
    assert running.scan() == ([mirror], [])
    running.remove(mirror)
    assert running.scan() == ([], [])
    assert len(state.records()) == 1


def test_record_files_keep_the_names_older_memfs_gave_them(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    """A newer memfs must find the record of a daemon an older one started."""
    mountpoint = state.normalize(tmp_path / "my memories")
    digest = hashlib.sha256(str(mountpoint).encode()).hexdigest()[:16]
    assert state.record_path(mountpoint) == memfs_state_dir / f"my_memories-{digest}.json"
    mirror = running.MirrorRecord(
        dir="/home/me/notes", store_url="sqlite:///m.db", pid=7, started=1
    )
    digest = hashlib.sha256(b"/home/me/notes\0sqlite:///m.db").hexdigest()[:16]
    assert running.record_path(mirror).name == f"notes-{digest}-7.json"
    assert record_name("/", "x").startswith("root-")


def test_records_are_private_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "fresh" / "state"
    monkeypatch.setenv(STATE_DIR_ENV, str(base))
    old = os.umask(0)
    try:
        running.write(running.new_record(tmp_path, "sqlite:///x.db"))
        state.write(_mount_record(tmp_path / "mnt"))
    finally:
        os.umask(old)
    for directory in (base, base / "mirrors"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = [*base.glob("*.json"), *(base / "mirrors").glob("*.json")]
    assert len(files) == 2
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


def test_a_stale_record_is_reported_once_and_an_unreadable_one_just_goes(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    dead = running.MirrorRecord(dir=str(tmp_path), store_url="u", pid=_dead_pid(), started=1)
    running.write(dead)
    torn = memfs_state_dir / "mirrors" / "torn-0-1.json"
    torn.write_text('{"dir": ')
    foreign = memfs_state_dir / "mirrors" / "foreign-0-2.json"
    foreign.write_text(json.dumps({"dir": "/x"}))  # no pid: not a record
    assert running.scan() == ([], [dead])
    assert not torn.exists() and not foreign.exists()
    assert running.scan() == ([], [])


def test_lookup_reads_stale_records_without_deleting_them(
    tmp_path: Path, memfs_state_dir: Path
) -> None:
    record = _mount_record(tmp_path / "mnt", pid=_dead_pid())
    state.write(record)
    assert state.lookup(tmp_path / "mnt") is None
    assert state.lookup(tmp_path / "mnt" / "a.md", include_stale=True) == record
    assert state.record_path(tmp_path / "mnt").exists()
    assert state.scan() == ([], [record])
    assert not state.record_path(tmp_path / "mnt").exists()


@pytest.mark.parametrize(
    ("kind", "error", "message"),
    [
        (state.state_dir, MountError, "Cannot create the memfs state directory"),
        (running.records_dir, SyncError, "cannot create the memfs state directory"),
    ],
)
def test_a_state_directory_that_cannot_be_made_is_each_kinds_own_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: Callable[[], Path],
    error: type[Exception],
    message: str,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(STATE_DIR_ENV, str(blocker / "state"))
    with pytest.raises(error) as caught:
        kind()
    assert str(caught.value).startswith(f"{message} {blocker / 'state'}")
    assert f"set {STATE_DIR_ENV} to a writable directory" in str(caught.value)


def test_without_the_variable_records_go_to_the_users_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STATE_DIR_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state.state_dir() == tmp_path / "xdg" / "memfs" / "mounts"
    assert running.records_dir() == tmp_path / "xdg" / "memfs" / "mirrors"
