"""Every command memfs suggests works pasted into a shell: ``memfs`` when PATH finds this
very program, else its path (a venv's .venv/bin/memfs run by path, as ``make run`` does;
another memfs earlier on PATH). Each hint is run through ``sh -c`` as printed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfs import host
from memfs.mount import daemon, state
from tests.fixtures.mount import sqlite_url

pytestmark = pytest.mark.fuse

MEMFS = str(Path(sys.executable).with_name("memfs"))
VENV_BIN = str(Path(MEMFS).parent)
OTHER_DIRS = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != VENV_BIN]

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run(tmp_path: Path, memfs_state_dir: Path) -> Iterator[Callable[..., Run]]:
    """``run(path_dirs)(argv | shell line)``: memfs with exactly that PATH."""

    def with_path(dirs: list[str]) -> Run:
        env = {**os.environ, state.STATE_DIR_ENV: str(memfs_state_dir)}
        env["PATH"] = os.pathsep.join(dirs)

        def go(cmd: list[str] | str) -> subprocess.CompletedProcess[str]:
            argv = ["sh", "-c", cmd] if isinstance(cmd, str) else cmd
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)

        return go

    yield with_path
    for record in state.scan()[0]:
        daemon.stop(record.mountpoint, timeout=10)


def hints(stdout: str) -> tuple[str, str]:
    """The agent and stop commands of `memfs mount`'s message, as printed."""
    agent = stdout.splitlines()[1].split("or run: ", 1)[1]
    stop = stdout.splitlines()[2].removeprefix("Stop with: ")
    return agent, stop


def mount_and_stop_by_the_hint(run: Run, tmp_path: Path) -> tuple[str, str]:
    mp = tmp_path / "my memories"  # a space: the hint must quote it
    done = run([MEMFS, "mount", str(mp), "--store", sqlite_url(tmp_path / "s.db")])
    assert done.returncode == 0, done.stderr
    agent, stop = hints(done.stdout)
    stopped = run(stop)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"Unmounted {mp}.\n"
    assert host.mount_entry(mp) is None
    return agent, stop


def test_hints_name_memfs_by_its_path_when_path_does_not_find_it(
    run: Callable[..., Run], tmp_path: Path
) -> None:
    agent, stop = mount_and_stop_by_the_hint(run(OTHER_DIRS), tmp_path)
    mp = tmp_path / "my memories"
    assert stop == f"{MEMFS} umount '{mp}'"
    assert agent == f"{MEMFS} agent --root '{mp}' \"...\""


def test_hints_say_memfs_when_path_finds_this_memfs(
    run: Callable[..., Run], tmp_path: Path
) -> None:
    _agent, stop = mount_and_stop_by_the_hint(run([VENV_BIN, *OTHER_DIRS]), tmp_path)
    assert stop == f"memfs umount '{tmp_path / 'my memories'}'"


def test_another_memfs_earlier_on_path_is_not_the_one_named(
    run: Callable[..., Run], tmp_path: Path
) -> None:
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "memfs").write_text("#!/bin/sh\necho 'not this memfs' >&2; exit 3\n")
    (other / "memfs").chmod(0o755)
    _agent, stop = mount_and_stop_by_the_hint(run([str(other), VENV_BIN, *OTHER_DIRS]), tmp_path)
    assert stop.startswith(f"{MEMFS} umount ")


def test_the_agent_names_memfs_by_its_path_too(run: Callable[..., Run], tmp_path: Path) -> None:
    go = run(OTHER_DIRS)
    env_line = f"ANTHROPIC_API_KEY=x MEMFS_MOUNTPOINT='{tmp_path / 'none'}'"
    done = go(f"{env_line} {MEMFS} agent Hi")
    assert done.returncode == 1  # a set-up problem: the one error edge
    assert f"run `{MEMFS} mount` or pass --root DIR" in done.stderr
