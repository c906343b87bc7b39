"""One reading of durations for every command that takes one (memfs.history.when):
``m`` alone is refused as ambiguous (a minute or a month?) in one line that suggests
``min`` or days, on ``expire`` (which deletes by it) and on every other command alike;
``min`` is minutes. Through the installed command and a real SQLite store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memfs.store import open_store

MEMFS = str(Path(sys.executable).with_name("memfs"))


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home), "MEMFS_STORE": ""},
    )  # fmt: skip


@pytest.fixture
def url(tmp_path: Path) -> str:
    with open_store(tmp_path / "memory.db") as store:
        store.write("notes.md", b"keep me\n", author="alice (vim)")
    return f"sqlite:///{tmp_path / 'memory.db'}"


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``Error:`` line of a usage error (click's usage lines above it)."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("args", "option", "span"),
    [
        (["expire", "--unused-for", "1m"], "--unused-for", "1m"),
        (["expire", "--unused-for", "1d2m", "--dry-run"], "--unused-for", "1d2m"),
        (["mount", "--expire-unused-for", "30m", "MNT"], "--expire-unused-for", "30m"),
    ],
)
def test_m_alone_is_refused_where_a_duration_is_the_option(
    tmp_path: Path, url: str, args: list[str], option: str, span: str
) -> None:
    args = [str(tmp_path / "mnt") if a == "MNT" else a for a in args]
    number = span.rstrip("m").rpartition("d")[2]
    assert error_line(run(tmp_path, *args, "--store", url)) == (
        f"Error: Invalid value for {option}: '{span}' is ambiguous (minutes or months?):"
        f" write {number}min for minutes, or days for months (30d)"
    )
    with open_store(url) as store:  # nothing deleted, nothing mounted
        assert store.read("notes.md")[0] == b"keep me\n"
    assert not (tmp_path / "mnt").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["log", "--since", "90m"],
        ["restore", "--to", "90m", "--dry-run"],
        ["diff", "--since", "90m"],
        ["undo", "--since", "90m", "--dry-run"],
        ["log", "--until", "90m"],
    ],
)
def test_m_alone_is_refused_where_a_point_in_time_is_taken(
    tmp_path: Path, url: str, args: list[str]
) -> None:
    line = error_line(run(tmp_path, *args, "--store", url))
    assert line.endswith(
        "'90m' is ambiguous (minutes or months?): write 90min for minutes, or days for months (30d)"
    ), line


def test_min_is_minutes_everywhere(tmp_path: Path, url: str) -> None:
    done = run(tmp_path, "expire", "--unused-for", "90min", "--dry-run", "--store", url)
    assert (done.returncode, done.stderr) == (0, "")
    done = run(tmp_path, "log", "--since", "90min", "--store", url)
    assert done.returncode == 0, done.stderr
    assert "alice (vim)" in done.stdout  # written just now: inside the last 90 minutes
    done = run(tmp_path, "log", "--since", "1d12h", "--store", url)
    assert done.returncode == 0 and "alice (vim)" in done.stdout


def test_a_checkpoint_may_not_be_named_like_a_refused_span(tmp_path: Path, url: str) -> None:
    line = error_line(run(tmp_path, "checkpoint", "90m", "--store", url))
    assert "'90m' reads as a duration" in line
