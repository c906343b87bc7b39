"""``memfs sync`` as a command: click's runner for --once and errors, real processes for
signals and kill -9."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.store import open_store
from memfs.sync.names import ignored_path
from tests.fixtures.sync import SyncRig, wait_for


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sync", *args], env=env)
    return result.exit_code, result.output


def test_once_through_the_cli(sync_rig: SyncRig) -> None:
    sync_rig.store.write("from-store.md", b"s", author="agent")
    sync_rig.write("from-dir.md", "d")
    state_home = sync_rig.tmp / "xdg-state"
    code, out = run_cli(
        str(sync_rig.dir), "--store", sync_rig.url, "--once",
        env={"XDG_STATE_HOME": str(state_home)},
    )  # fmt: skip
    assert code == 0, out
    assert f"Synced {sync_rig.dir}" in out
    assert sync_rig.disk() == sync_rig.remote() == {"from-store.md": b"s", "from-dir.md": b"d"}
    # The state went to the user state dir, not into DIR.
    assert list((state_home / "memfs" / "sync").glob("*.json"))
    assert not any(p.startswith(".memfs") for p in sync_rig.disk())


def test_a_file_as_dir_is_one_line_and_exit_1(tmp_path: Path) -> None:
    target = tmp_path / "nope"
    target.write_text("I am a file")
    code, out = run_cli(str(target), "--store", f"sqlite://{tmp_path}/s.db", "--once")
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == f"Error: cannot sync {target}: it is not a directory"
    assert target.read_text() == "I am a file"


def test_a_missing_dir_is_created_and_filled_from_the_store(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    with open_store(url) as store:
        store.mkdir("notes", author="agent")
        store.write("notes/todo.md", b"- milk\n", author="agent")
    target = tmp_path / "new" / "mirror"
    code, out = run_cli(
        str(target), "--store", url, "--once", env={"XDG_STATE_HOME": str(tmp_path / "xdg")}
    )
    assert code == 0, out
    assert f"Created {target}." in out
    assert (target / "notes" / "todo.md").read_bytes() == b"- milk\n"
    assert target.stat().st_mode & 0o777 == 0o700


def test_bad_store_url_is_one_line_and_exit_1(tmp_path: Path) -> None:
    code, out = run_cli(str(tmp_path), "--store", "nosuch://x", "--once")
    assert code == 1
    assert len(out.strip().splitlines()) == 1 and "nosuch://" in out


@pytest.mark.parametrize("store", ["nosuch://x", "{tmp}/notes.txt"])
def test_a_bad_store_fails_before_dir_is_created(tmp_path: Path, store: str) -> None:
    (tmp_path / "notes.txt").write_text("a text file, not a store\n")
    target = tmp_path / "new" / "mirror"
    code, out = run_cli(str(target), "--store", store.format(tmp=tmp_path), "--once")
    assert code == 1
    assert out.startswith("Error: ") and len(out.splitlines()) == 1, out
    assert not (tmp_path / "new").exists()


# --- real processes ------------------------------------------------------------------
@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def spawn(rig: SyncRig, procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "from memfs.cli import main; main()", "sync", str(rig.dir),
         "--store", rig.url, "--state", str(rig.state_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    procs.append(proc)
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_flushes_and_exits_cleanly(
    sync_rig: SyncRig, procs: list[subprocess.Popen[bytes]], signum: int
) -> None:
    sync_rig.store.write("ready.md", b"r", author="agent")
    proc = spawn(sync_rig, procs)
    wait_for(lambda: sync_rig.disk_has("ready.md", b"r"), what="the first pass")
    sync_rig.write("last-words.md", "saved right before the signal")
    proc.send_signal(signum)
    assert proc.wait(30) == 0
    assert sync_rig.remote_has("last-words.md", b"saved right before the signal")
    assert sync_rig.state_path.exists()


def test_kill_9_mid_burst_then_restart_converges(
    sync_rig: SyncRig, procs: list[subprocess.Popen[bytes]]
) -> None:
    sync_rig.store.write("ready.md", b"r", author="agent")
    proc = spawn(sync_rig, procs)
    wait_for(lambda: sync_rig.disk_has("ready.md", b"r"), what="the first pass")
    expected: dict[str, bytes] = {"ready.md": b"r"}
    for i in range(300):
        path = f"burst/f{i % 40:02}.md"
        data = f"edit {i}\n".encode()
        sync_rig.write(path, data)
        expected[path] = data
        if i == 150:
            proc.kill()  # SIGKILL: no flush, no state save, maybe mid-write
            proc.wait(10)
        time.sleep(0.002)
    assert proc.returncode == -signal.SIGKILL
    sync_rig.once()
    assert sync_rig.remote() == expected
    assert {p: d for p, d in sync_rig.disk().items() if not ignored_path(p)} == expected
    assert not any(p.startswith(".memfs") or "/.memfs" in p for p in sync_rig.disk())
    # Nothing but the agent and this one mirror wrote to the store.
    authors = {c.author for c in sync_rig.store.changes()} - {"agent"}
    assert len(authors) == 1 and authors.pop().endswith(f":{sync_rig.dir})")


def test_nested_directories_bring_no_watchdog_warning(
    sync_rig: SyncRig, procs: list[subprocess.Popen[bytes]]
) -> None:
    # The mirror filling DIR with nested directories, and a person's mkdir -p, both made
    # watchdog register directories twice and warn "Callback with id ... already exists".
    for i in range(30):
        sync_rig.store.write(f"store{i}/a/b/c/f.md", b"s", author="agent", parents=True)
    log = sync_rig.tmp / "sync.stderr"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from memfs.cli import main; main()", "sync", str(sync_rig.dir),
             "--store", sync_rig.url, "--state", str(sync_rig.state_path)],
            stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    procs.append(proc)
    wait_for(lambda: sync_rig.disk_has("store29/a/b/c/f.md", b"s"), what="the first pass")
    for i in range(30):
        subprocess.run(["mkdir", "-p", str(sync_rig.dir / f"person{i}" / "x" / "y")], check=True)
        sync_rig.write(f"person{i}/x/y/n.md", f"n{i}")
    expected = {f"person{i}/x/y/n.md": f"n{i}".encode() for i in range(30)}
    wait_for(
        lambda: all(sync_rig.remote_has(path, data) for path, data in expected.items()),
        what="the person's files in new nested directories to reach the store",
    )
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    stderr = log.read_text()
    assert "Warning" not in stderr and "already exists" not in stderr, stderr[:2000]
