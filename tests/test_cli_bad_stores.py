"""A store that cannot be used ends ``memfs mount`` and ``sync`` with one line on stderr
saying what is wrong and what to do, exit status 1, and nothing mounted: here, a store
in a read-only place."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.mount import state


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def command(name: str, db: Path, tmp_path: Path) -> list[str]:
    url = f"sqlite://{db}"
    return {
        "mount": ["mount", str(tmp_path / "mnt"), "--store", url],
        "sync": ["sync", str(tmp_path / "mirror"), "--once", "--store", url],
    }[name]


def nothing_mounted(tmp_path: Path) -> None:
    assert not (tmp_path / "mnt").exists()
    assert state.records() == []


COMMANDS = [pytest.param("mount", marks=pytest.mark.fuse), "sync"]


# --- read-only places -------------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_a_new_store_in_a_read_only_directory(
    tmp_path: Path, memfs_state_dir: Path, read_only_dir: Path, name: str
) -> None:
    db = read_only_dir / "memory.db"
    line = one_line_error(invoke(*command(name, db, tmp_path)))
    assert line == (
        f"Error: cannot create the store {db}: {read_only_dir} is on a read-only file"
        " system; give another --store URL"
    )
    nothing_mounted(tmp_path)


@pytest.mark.parametrize("name", COMMANDS)
def test_an_existing_store_on_a_read_only_file_system(
    tmp_path: Path, memfs_state_dir: Path, read_only_store: Path, name: str
) -> None:
    line = one_line_error(invoke(*command(name, read_only_store, tmp_path)))
    assert line == (
        f"Error: cannot open the store {read_only_store} for writing: {read_only_store.parent}"
        " is on a read-only file system; copy it to a writable place or give another --store URL"
    )
    nothing_mounted(tmp_path)
