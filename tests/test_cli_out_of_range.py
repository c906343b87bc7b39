"""Numbers and times past what a store keeps, through the real ``memfs`` command: one
line saying so, exit 2, never "failed unexpectedly" (the shared parse of
:mod:`memfs.history.when`); and a diff too large to show, as its summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memfs.store import open_store
from tests.fixtures.mount import sqlite_url

MEMFS = str(Path(sys.executable).with_name("memfs"))
HUGE = "99999999999999999999"
CLOCK = "memfs's clock counts from 1677-09-22 to 2262-04-11"
RANGE = "is not in the range 1<=x<=9223372036854775807."


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with open_store(sqlite_url(path)) as store:
        store.write("a.md", b"one\n", author="me")
        store.write("a.md", b"two\n", author="me")
    return path


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["log", "--since", "9999-12-31T23:59"],
            f"Error: Invalid value for --since: '9999-12-31T23:59' is out of range: {CLOCK}",
        ),
        (
            ["log", "--until", "0001-01-01T00:00"],
            f"Error: Invalid value for --until: '0001-01-01T00:00' is out of range: {CLOCK}",
        ),
        (
            ["log", "--since", "100000000000w"],
            f"Error: Invalid value for --since: '100000000000w' is out of range: {CLOCK}",
        ),
        (
            ["log", "--since", HUGE],
            f"Error: Invalid value for --since: revision {HUGE} is out of range"
            " (0 to 9223372036854775807)",
        ),
        (["undo", HUGE, "--dry-run"], f"Error: Invalid value for '[ID]': {HUGE} {RANGE}"),
        (["history", "a.md", "--show", HUGE], f"Error: Invalid value for '--rev': {HUGE} {RANGE}"),
        (["diff", "a.md", "1", HUGE], f"Error: Invalid value for 'REV': {HUGE} {RANGE}"),
        (
            ["diff", "a.md", "--rev", "1", "--rev", HUGE],
            f"Error: Invalid value for '--rev': {HUGE} {RANGE}",
        ),
    ],
)
def test_out_of_range_is_one_line_and_exit_2(db: Path, args: list[str], error: str) -> None:
    done = subprocess.run(
        [MEMFS, *args, "--store", sqlite_url(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == error
    assert "unexpectedly" not in done.stderr and "Traceback" not in done.stderr


def test_a_diff_too_large_to_show_is_its_summary(db: Path) -> None:
    lines = 200_000
    old = b"".join(b"line %d\n" % i for i in range(2 * lines))
    new = b"".join(b"line %d\n" % i if i % 2 else b"changed %d\n" % i for i in range(2 * lines))
    with open_store(sqlite_url(db)) as store:
        rev = store.write("big.md", old, author="me").rev
        store.write("big.md", new, author="me")
    done = subprocess.run(
        [MEMFS, "diff", "big.md", "--store", sqlite_url(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith(f"memfs: the diff of a/big.md@{rev} and b/big.md is too large to show")
    assert f"{len(old):,} -> {len(new):,} bytes" in first
    assert "400,000 -> 400,000 lines, +200,000 -200,000" in first
    assert second.startswith("memfs: print either side with: memfs history big.md --show REV")
