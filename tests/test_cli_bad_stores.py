"""A store that cannot be used ends ``memfs mount``, ``sync`` and ``history`` with one
line on stderr saying what is wrong and what to do, exit status 1, and nothing created:
a damaged file (refused at open, within a second), a read-only place. The advice names
the way the store was chosen: --store URL, $MEMFS_STORE or the default."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs import host
from memfs.cli import main
from memfs.errors import CorruptStore
from memfs.mount import state
from memfs.store import open_store
from tests.fixtures.bad_stores import damage

RESTORE = "restore it from a backup, move it aside or"


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
        "history": ["history", "a.md", "--store", url],
    }[name]


def nothing_created(tmp_path: Path) -> None:
    assert not (tmp_path / "mnt").exists()
    assert not (tmp_path / "mirror").exists()
    assert state.records() == []


COMMANDS = [pytest.param("mount", marks=pytest.mark.fuse), "sync", "history"]


# --- damaged pages ----------------------------------------------------------------------


def test_a_store_with_damaged_pages_is_refused_at_open(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    damage(db)
    started = time.monotonic()
    with pytest.raises(CorruptStore, match=r"is damaged") as info:
        open_store(str(db))
    assert time.monotonic() - started < 1.0
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", COMMANDS)
def test_damaged_pages_are_one_line_within_a_second(
    tmp_path: Path, memfs_state_dir: Path, name: str
) -> None:
    db = tmp_path / "memory.db"
    damage(db)
    started = time.monotonic()
    result = invoke(*command(name, db, tmp_path))
    assert time.monotonic() - started < 1.0
    line = one_line_error(result)
    assert re.fullmatch(
        rf"Error: the store {re.escape(str(db))} is damaged \(.+\); {RESTORE} give another"
        r" --store URL",
        line,
    ), line
    nothing_created(tmp_path)
    if name == "mount":
        assert host.mount_entry(tmp_path / "mnt") is None


def test_the_advice_follows_where_the_store_came_from(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    damage(db)
    sync = ["sync", str(tmp_path / "mirror"), "--once"]
    from_env = one_line_error(invoke(*sync, env={"MEMFS_STORE": str(db)}))
    assert from_env.endswith(f"; {RESTORE} point $MEMFS_STORE at another store")
    data = tmp_path / "xdg-data"
    (data / "memfs").mkdir(parents=True)
    damage(data / "memfs" / "memory.db")
    default = one_line_error(invoke(*sync, env={"MEMFS_STORE": "", "XDG_DATA_HOME": str(data)}))
    assert default.endswith(
        f"; {RESTORE} give --store URL (or set $MEMFS_STORE) to use another store"
    )
    nothing_created(tmp_path)


# --- read-only places -------------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_a_new_store_in_a_read_only_directory(
    tmp_path: Path, memfs_state_dir: Path, read_only_dir: Path, name: str
) -> None:
    db = read_only_dir / "memory.db"
    line = one_line_error(invoke(*command(name, db, tmp_path)))
    if name == "history":  # history never creates a store just to find it empty
        assert line == f"Error: no store at {db}; give another --store URL"
    else:
        assert line == (
            f"Error: cannot create the store {db}: {read_only_dir} is on a read-only file"
            " system; give another --store URL"
        )
    nothing_created(tmp_path)


# history only reads: it opens the store read-only and works there
# (tests/test_cli_readonly.py); the commands that write say why they cannot.
@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "history"])
def test_an_existing_store_on_a_read_only_file_system(
    tmp_path: Path, memfs_state_dir: Path, read_only_store: Path, name: str
) -> None:
    line = one_line_error(invoke(*command(name, read_only_store, tmp_path)))
    assert line == (
        f"Error: cannot open the store {read_only_store} for writing: {read_only_store.parent}"
        " is on a read-only file system; copy it to a writable place or give another --store URL"
    )
    nothing_created(tmp_path)
