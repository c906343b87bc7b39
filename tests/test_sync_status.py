"""``memfs status`` lists running ``memfs sync`` mirrors (directory, store, pid, since
when), through the real CLI and a real mirror process: the record appears once the
mirror runs, goes when it stops, and a killed mirror is reported once, then cleaned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from memfs.store import open_store
from tests.fixtures.mount import wait_for

MEMFS = str(Path(sys.executable).with_name("memfs"))
VENV_BIN = str(Path(MEMFS).parent)


@pytest.fixture
def env(tmp_path: Path, memfs_state_dir: Path) -> dict[str, str]:
    # PATH finds this memfs, so its hints read "memfs ..." here.
    path = os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")])
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg"), "PATH": path}


@pytest.fixture
def mirrors(env: dict[str, str]) -> Iterator[Callable[[Path, str], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(directory: Path, url: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [MEMFS, "sync", str(directory), "--store", url],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


def status(env: dict[str, str]) -> list[str]:
    done = subprocess.run([MEMFS, "status"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


def test_a_running_mirror_is_listed_until_it_stops(
    tmp_path: Path, env: dict[str, str], mirrors: Callable[[Path, str], subprocess.Popen[bytes]]
) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    with open_store(url) as store:
        store.write("a.md", b"a\n", author="agent")
    directory = tmp_path / "mirror"
    before = time.time()
    proc = mirrors(directory, url)
    lines = wait_for(lambda: (out := status(env)) and len(out) > 1 and out, 15, what="a mirror row")
    assert (directory / "a.md").read_bytes() == b"a\n"  # listed once its first pass is done
    assert lines[:3] == ["No memfs mounts.", "", lines[2]]
    assert lines[2].split() == ["MIRROR", "STORE", "PID", "STATE", "SINCE"]
    cells = lines[3].split()
    assert cells[:4] == [str(directory), url, str(proc.pid), "syncing"]
    since = datetime.fromisoformat(cells[4]).timestamp()
    assert before - 1 <= since <= time.time()
    assert len(lines) == 4
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert status(env) == ["No memfs mounts."]


def test_a_killed_mirror_is_reported_once_then_cleaned(
    tmp_path: Path, env: dict[str, str], mirrors: Callable[[Path, str], subprocess.Popen[bytes]]
) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    directory = tmp_path / "mirror"
    proc = mirrors(directory, url)
    wait_for(lambda: len(status(env)) > 1, 15, what="a mirror row")
    proc.kill()
    proc.wait(10)
    lines = status(env)
    assert lines[3].split()[:4] == [str(directory), url, str(proc.pid), "dead"]
    assert lines[4] == (
        f"{directory}: its mirror (pid {proc.pid}) died; "
        f"restart it with: memfs sync {directory} --store {url}"
    )
    assert status(env) == ["No memfs mounts."]
