"""The mount daemon's life through ``memfs mount/umount/status``: start, report, stop,
signals, crash recovery, and every way a person can get the arguments wrong."""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeAlias

import pytest
from click.testing import CliRunner, Result

from memfs import host
from memfs.cli import main
from memfs.history.author import author_for
from memfs.mount import daemon, state
from memfs.mount import journal as jr
from memfs.mount.ops import MountOptions
from memfs.program import command
from memfs.store import open_store, shown_url
from tests.fixtures.mount import MountHandle, daemon_gone, require_fuse, sqlite_url, wait_for

pytestmark = pytest.mark.fuse

MEMFS = str(Path(sys.executable).with_name("memfs"))
PATH_WITHOUT_VENV = os.pathsep.join(
    p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != Path(MEMFS).parent
)
Cli: TypeAlias = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(
    tmp_path: Path, memfs_state_dir: Path
) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """Run the installed ``memfs`` as a person would; whatever it mounted under
    ``tmp_path`` is torn down afterwards, whether the test passed or not."""
    require_fuse()
    # PATH without this venv: the hints memfs prints must then name it by its path.
    env = {**os.environ, state.STATE_DIR_ENV: str(memfs_state_dir), "PATH": PATH_WITHOUT_VENV}

    def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMFS, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )

    yield run
    live, _stale = state.scan()
    for record in live:
        try:
            daemon.stop(record.mountpoint, timeout=10)
        finally:
            if state.pid_alive(record.pid):
                os.kill(record.pid, signal.SIGKILL)
    for entry in host.mounts():
        if Path(entry.mountpoint).is_relative_to(tmp_path):
            host.fusermount(entry.mountpoint, lazy=True)


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _one_line_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def _nothing_mounted(tmp_path: Path) -> None:
    assert state.records() == []
    for path in tmp_path.iterdir():
        assert host.mount_entry(path) is None, f"{path} is mounted"


# --- the happy path, as a person runs it ---------------------------------------------


def test_mount_status_umount_through_the_installed_cli(tmp_path: Path, cli: Cli) -> None:
    mp = tmp_path / "fresh" / "memories"  # missing: mount creates it
    url = sqlite_url(tmp_path / "s.db")

    done = cli("mount", str(mp), "--store", url)
    assert done.returncode == 0, done.stderr
    record = state.lookup(mp)
    assert record is not None
    assert done.stdout.splitlines() == [
        f"Mounted {url} at {mp} (pid {record.pid}).",
        f'Open it in an editor, grep it, or run: {MEMFS} agent --root {mp} "..."',
        f"Stop with: {MEMFS} umount {mp}",
    ]
    assert done.stderr == f"Created a new store at {tmp_path / 's.db'}.\n"
    entry = host.mount_entry(mp)
    assert entry is not None and entry.is_memfs
    (mp / "note.md").write_text("hello\n")

    columns = ["MOUNTPOINT", "STORE", "PID", "STATE", "UP", "FILES", "SIZE", "LOG"]

    def listed() -> list[str] | None:
        shown = cli("status")
        assert shown.returncode == 0, shown.stderr
        header, row = shown.stdout.splitlines()
        assert header.split() == columns
        cells = row.split()
        return cells if cells[5] == "1" else None

    # Unfsynced, the note is committed after the 0.1 s quiet period, not by close.
    cells = wait_for(listed, 10, what="status to count the note once it is committed")
    assert cells[:4] == [str(mp), url, str(record.pid), "mounted"]
    assert cells[5:8] == ["1", "6", "B"]
    assert cells[8] == record.log_path and Path(record.log_path).exists()

    gone = cli("umount", str(mp))
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout == f"Unmounted {mp}.\n"
    assert host.mount_entry(mp) is None
    assert not state.pid_alive(record.pid)
    assert state.records() == []
    assert list(mp.iterdir()) == []  # the content lives in the store, not under the mount
    assert cli("status").stdout == "No memfs mounts.\n"


def test_commit_on_close_makes_close_the_commit(tmp_path: Path, cli: Cli) -> None:
    mp = tmp_path / "memories"
    db = tmp_path / "s.db"
    done = cli("mount", str(mp), "--store", sqlite_url(db), "--commit-on-close")
    assert done.returncode == 0, done.stderr
    store = open_store(sqlite_url(db))
    try:
        for i in range(5):
            # No fsync: only the close can have committed it, well inside the 0.1 s
            # quiet period that would commit it otherwise.
            with open(mp / f"n{i}.md", "w") as f:
                f.write(f"note {i}\n")
            assert store.read(f"n{i}.md")[0] == f"note {i}\n".encode()
    finally:
        store.close()
    assert cli("umount", str(mp)).returncode == 0


def test_foreground_mount_stops_on_ctrl_c(tmp_path: Path, cli: Cli, memfs_state_dir: Path) -> None:
    mp = tmp_path / "mnt"
    url = sqlite_url(tmp_path / "s.db")
    env = {**os.environ, state.STATE_DIR_ENV: str(memfs_state_dir)}
    proc = subprocess.Popen(
        [MEMFS, "mount", str(mp), "--store", url, "--foreground"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        # Printed once the mount is up; select bounds the wait so a silent daemon fails.
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "memfs mount --foreground printed nothing within 20 s"
        first = proc.stdout.readline()
        assert first == f"Mounted {url} at {mp} (pid {proc.pid}).\n"
        record = state.lookup(mp)
        assert record is not None and record.pid == proc.pid
        (mp / "a.txt").write_text("written in the foreground\n")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == f"Unmounted {mp}."
    assert host.mount_entry(mp) is None
    assert state.records() == []
    from memfs.store import open_store

    with open_store(url) as store:
        assert store.read("a.txt")[0] == b"written in the foreground\n"


# --- signals: each one unmounts cleanly and loses no buffered write -----------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_unmounts_and_commits_buffered_write(memfs_mount: MountHandle, signum: int) -> None:
    data = os.urandom(100_000)
    # Written and closed but never fsynced: whatever the daemon still buffers must be
    # committed before it lets the mount go.
    fd = os.open(memfs_mount.mountpoint / "unsynced.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for i in range(0, len(data), 4096):
            os.write(fd, data[i : i + 4096])
    finally:
        os.close(fd)
    pid = memfs_mount.pid
    os.kill(pid, signum)
    wait_for(lambda: daemon_gone(pid), 15, what="daemon exit")
    assert host.mount_entry(memfs_mount.mountpoint) is None
    assert state.records() == []
    assert memfs_mount.store().read("unsynced.bin")[0] == data


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
def test_a_signal_ignored_by_the_caller_still_unmounts(
    tmp_path: Path, cli: Cli, memfs_state_dir: Path, signum: int
) -> None:
    # `nohup memfs mount` (or `nohup make test`) hands the daemon SIGHUP as ignored; a
    # script's background job gets SIGINT so. The daemon must still unmount on them.
    mp = tmp_path / "mnt"
    env = {**os.environ, state.STATE_DIR_ENV: str(memfs_state_dir)}
    ignore = f'trap "" {signal.Signals(signum).name[3:]}; exec "$0" "$@"'
    done = subprocess.run(
        ["sh", "-c", ignore, MEMFS, "mount", str(mp), "--store", sqlite_url(tmp_path / "s.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    record = state.lookup(mp)
    assert record is not None
    os.kill(record.pid, signum)
    wait_for(lambda: not state.pid_alive(record.pid), 15, what="the daemon to exit")
    assert host.mount_entry(mp) is None
    assert state.records() == []


# --- crash recovery ---------------------------------------------------------------------


@pytest.fixture
def dead_mount(mount_factory: Callable[..., MountHandle]) -> MountHandle:
    """A mount whose daemon was killed with auto_unmount off: the kernel keeps a dead
    mount that answers ENOTCONN, as after a crash of a daemon without the helper."""
    mount = mount_factory(options=MountOptions(auto_unmount=False))
    (mount.mountpoint / "kept.md").write_text("before the crash\n")
    store = mount.store()
    wait_for(lambda: store.read("kept.md")[0] == b"before the crash\n", 10, what="commit")
    # The daemon notes the landing as done in its journal just after the store has it: a
    # kill in between leaves a journal that `memfs status` rightly names as pending.
    journals = [p for d in state.journal_dirs().values() for p in d.glob("*.journal")]
    assert journals
    wait_for(lambda: not any(jr.holds_pending(p) for p in journals), 10, what="journal done")
    mount.kill9()
    with pytest.raises(OSError) as info:
        os.statvfs(mount.mountpoint)  # stat may be answered from the attr cache
    # ECONNABORTED while the kernel is still failing the requests in flight, then ENOTCONN.
    assert info.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    return mount


def test_remount_recovers_a_stale_mount_after_kill9(dead_mount: MountHandle, cli: Cli) -> None:
    mp = dead_mount.mountpoint
    done = cli("mount", str(mp), "--store", dead_mount.store_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Recovered a stale memfs mount at {mp} (its daemon had died)."
    assert lines[1].startswith(f"Mounted {dead_mount.store_url} at {mp} (pid ")
    assert (mp / "kept.md").read_text() == "before the crash\n"
    record = state.lookup(mp)
    assert record is not None and record.pid != dead_mount.pid
    dead_mount.pid = record.pid  # so the fixture tears the new daemon down


def test_kill9_leaves_a_mount_that_fails_writes(memfs_mount: MountHandle) -> None:
    # The default has no auto_unmount: a write after the crash must fail, not land in
    # the bare directory under the mount where no store would ever see it.
    (memfs_mount.mountpoint / "kept.md").write_text("before the crash\n")
    store = memfs_mount.store()
    wait_for(lambda: store.read("kept.md")[0] == b"before the crash\n", 10, what="commit")
    memfs_mount.kill9()
    with pytest.raises(OSError) as info, open(memfs_mount.mountpoint / "log.txt", "a") as f:
        f.write("two\n")
    assert info.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    assert host.mount_entry(memfs_mount.mountpoint) is not None
    assert memfs_mount.restart() == [
        f"Recovered a stale memfs mount at {memfs_mount.mountpoint} (its daemon had died)."
    ]
    assert (memfs_mount.mountpoint / "kept.md").read_text() == "before the crash\n"
    assert not (memfs_mount.mountpoint / "log.txt").exists()


def test_status_reports_a_dead_daemon_and_umount_cleans_it(dead_mount: MountHandle) -> None:
    mp = dead_mount.mountpoint
    shown = _invoke("status")
    assert shown.exit_code == 0
    lines = shown.stdout.splitlines()
    assert lines[1].split()[3] == "dead", shown.stdout
    again = command("mount", mp, "--store", shown_url(dead_mount.store_url))
    assert lines[2] == (
        f"{mp}: its daemon (pid {dead_mount.pid}) died; the mount fails every access until"
        f" you run (it saves what the daemon journaled and mounts again): {again}"
    )
    assert _invoke("status").stdout == shown.stdout  # named until it is cleared
    gone = _invoke("umount", str(mp))
    assert gone.exit_code == 0, gone.output
    assert gone.stdout == (
        f"Removed a stale memfs mount at {mp} (its daemon had died).\nUnmounted {mp}.\n"
    )
    assert host.mount_entry(mp) is None


def test_files_written_after_a_manual_unmount_are_saved_by_mount(
    dead_mount: MountHandle, memfs_state_dir: Path
) -> None:
    # Someone cleared the dead mount by hand, and a program went on writing into the
    # bare directory: acknowledged writes that no daemon saw.
    mp = dead_mount.mountpoint
    host.fusermount(mp, lazy=True)
    wait_for(lambda: host.mount_entry(mp) is None, 30, what="the manual unmount")
    (mp / "log.txt").write_text("two\n")
    (mp / "notes").mkdir()
    (mp / "notes" / "a.md").write_text("new a\n")
    (mp / "kept.md").write_text("written while unmounted\n")

    shown = _invoke("status")
    assert shown.exit_code == 0, shown.output
    again = command("mount", mp, "--store", shown_url(dead_mount.store_url))
    assert (
        f"{mp}: its daemon (pid {dead_mount.pid}) died; 3 files were written into the "
        f"directory while it was not mounted (kept.md, log.txt, notes/a.md); this saves "
        f"them to the store and mounts again: {again}"
    ) in shown.stdout.splitlines()
    assert _invoke("status").stdout == shown.stdout  # named until they are saved

    notes = dead_mount.restart()
    assert len(notes) == 1 and notes[0].startswith(
        f"Saved 3 files written into {mp} while it was not mounted to the store as one "
        "operation (memfs undo takes it back); the originals are in "
    )
    moved = Path(notes[0].rsplit(" ", 1)[1].rstrip("."))
    assert sorted(p.relative_to(moved).as_posix() for p in moved.rglob("*")) == [
        "kept.md",
        "log.txt",
        "notes",
        "notes/a.md",
    ]
    store = dead_mount.store()
    assert store.read("log.txt")[0] == b"two\n"
    assert store.read("notes/a.md")[0] == b"new a\n"
    assert (mp / "log.txt").read_text() == "two\n"  # through the new mount
    # kept.md differed from the store's: merged as a save of unknown base, both kept.
    kept = b"".join(store.read(e.path)[0] for e in store.walk() if e.path.startswith("kept"))
    assert b"before the crash\n" in kept and b"written while unmounted\n" in kept
    op = store.operations(limit=1)[0]
    assert op.actor == author_for("mount") and op.label == "memfs mount"
    assert {c.path for c in store.changes(since=op.first_seq - 1)} >= {
        "log.txt",
        "notes",
        "notes/a.md",
    }
    assert "not mounted" not in _invoke("status").stdout


# --- bad input: one line, exit 1, nothing mounted, nothing lost ------------------------------


def test_non_empty_mountpoint_is_refused(tmp_path: Path, memfs_state_dir: Path) -> None:
    require_fuse()
    mp = tmp_path / "busy"
    mp.mkdir()
    (mp / "mine.txt").write_text("keep me\n")
    line = _one_line_error(_invoke("mount", str(mp), "--store", sqlite_url(tmp_path / "s.db")))
    assert line == (
        f"Error: {mp} is not empty; mount on an empty directory so no files are hidden "
        f"under the mount, or put what it holds into the store first: {command('import', mp)}"
        f" (for a Claude Code memory directory: {command('claude-code', 'enable')} in the"
        " repository imports and mounts it)."
    )
    assert (mp / "mine.txt").read_text() == "keep me\n"
    _nothing_mounted(tmp_path)


def test_a_file_as_mountpoint_is_refused(tmp_path: Path, memfs_state_dir: Path) -> None:
    require_fuse()
    target = tmp_path / "file.txt"
    target.write_text("not a directory\n")
    line = _one_line_error(_invoke("mount", str(target), "--store", sqlite_url(tmp_path / "s.db")))
    assert line == f"Error: {target} is not a directory; choose a directory to mount on."
    assert target.read_text() == "not a directory\n"
    _nothing_mounted(tmp_path)


def test_corrupt_store_is_refused_and_left_untouched(tmp_path: Path, memfs_state_dir: Path) -> None:
    require_fuse()
    db = tmp_path / "broken.db"
    junk = b"this is not an SQLite database\n" + bytes(range(256)) * 40
    db.write_bytes(junk)
    mp = tmp_path / "mnt"
    line = _one_line_error(_invoke("mount", str(mp), "--store", sqlite_url(db)))
    assert str(db) in line
    assert db.read_bytes() == junk
    assert not (tmp_path / "broken.db-wal").exists()
    _nothing_mounted(tmp_path)


def test_unknown_store_scheme_is_refused(tmp_path: Path, memfs_state_dir: Path) -> None:
    require_fuse()
    line = _one_line_error(_invoke("mount", str(tmp_path / "mnt"), "--store", "nosuch://x/y"))
    assert "nosuch://" in line and "sqlite://" in line
    _nothing_mounted(tmp_path)


def test_mounting_twice_names_the_running_daemon(memfs_mount: MountHandle) -> None:
    line = _one_line_error(
        _invoke("mount", str(memfs_mount.mountpoint), "--store", memfs_mount.store_url)
    )
    mp = memfs_mount.mountpoint
    assert line == (
        f"Error: {mp} is already mounted by memfs (pid {memfs_mount.pid}, store "
        f"{memfs_mount.store_url}); unmount it first with: {command('umount', mp)}"
    )
    record = state.lookup(mp)
    assert record is not None and record.pid == memfs_mount.pid


def test_umount_of_a_plain_directory_is_refused(tmp_path: Path, memfs_state_dir: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    line = _one_line_error(_invoke("umount", str(plain)))
    assert line == f"Error: {plain} is not a memfs mount; `{command('status')}` lists the mounts."


def test_status_without_mounts(memfs_state_dir: Path) -> None:
    result = _invoke("status")
    assert result.exit_code == 0
    assert result.stdout == "No memfs mounts.\n"


def test_an_uncreatable_mountpoint_is_refused(tmp_path: Path, memfs_state_dir: Path) -> None:
    require_fuse()
    target = Path("/proc/memfs-cannot-be-here")
    line = _one_line_error(_invoke("mount", str(target), "--store", sqlite_url(tmp_path / "s.db")))
    assert line == (
        f"Error: Cannot create or read the mountpoint {target}: No such file or directory; "
        "choose a directory you can write to."
    )
    assert state.records() == []


def test_a_dead_daemons_mount_taken_away_while_start_looks_is_not_a_live_one(
    tmp_path: Path, memfs_state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kill -9, then mount at once: the killed daemon's fusermount3 (auto_unmount) may
    # unmount between start's look at the mount table and its statfs, which then
    # answers for the plain directory. That is a free mount point, not a live daemon.
    require_fuse()
    mp = tmp_path / "mnt"
    mp.mkdir()
    looks = [host.MountEntry(str(mp), "fuse.memfs", "memfs"), None]
    monkeypatch.setattr(host, "mount_entry", lambda path: looks.pop(0) if looks else None)
    monkeypatch.setattr(host, "is_dead", lambda path: False)
    url = sqlite_url(tmp_path / "s.db")
    assert daemon._prepare(mp, url, lambda note: None) == url
    assert looks == []
