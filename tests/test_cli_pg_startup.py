"""PostgreSQL start-up failures are one line (#17, the new user's list): every command
that opens a PostgreSQL store, the long-running ones (mount, sync, mcp, web) too, ends
with one ``Error:`` line on stderr saying what is wrong and what to do, exit status 1,
nothing on stdout and nothing created, when no server answers, the database or the
role does not exist. Through the installed ``memfs`` and the suite's cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.postgres import PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home), "MEMFS_STORE": ""},
    )


def commands(url: str, tmp: Path) -> dict[str, list[str]]:
    return {
        "mount": ["mount", str(tmp / "mnt"), "--store", url],
        "sync": ["sync", str(tmp / "mirror"), "--once", "--store", url],
        "mcp": ["mcp", "--store", url],
        "web": ["web", "--store", url, "--http", "127.0.0.1:0"],
        "log": ["log", "--store", url],
        "search": ["search", "x", "--store", url],
        "trees": ["trees", "--store", url],
        "import": ["import", str(tmp / "src"), "--store", url],
        "undo": ["undo", "--store", url],
        "copy": ["copy", url, f"sqlite://{tmp}/copy.db"],
    }


NAMES = [pytest.param("mount", marks=pytest.mark.fuse), *list(commands("", Path()))[1:]]


def failures(cluster: PgCluster) -> dict[str, tuple[str, str]]:
    """A failing URL of each kind, and the line it must give (its start, its end)."""
    sock = cluster.socket_dir
    return {
        "no server": (
            f"postgresql://memfs@/memfs?host={sock}/nowhere&tree=t",
            f"Error: no PostgreSQL server answers at {sock}/nowhere:5432/memfs (",
        ),
        "no database": (
            cluster.url("t", db="nodb"),
            f"Error: the database 'nodb' does not exist on the PostgreSQL server at {sock}:5432"
            "/nodb; create it (createdb nodb) or give another --store URL",
        ),
        "no role": (
            cluster.url("t", user="nobody_here"),
            "Error: the role 'nobody_here' does not exist on the PostgreSQL server at",
        ),
    }


@pytest.mark.parametrize("name", NAMES)
def test_a_postgres_store_that_cannot_be_reached_is_one_line(
    pg_cluster: PgCluster, tmp_path: Path, name: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "n.md").write_text("n\n")
    for kind, (url, said) in failures(pg_cluster).items():
        done = run(home, *commands(url, tmp_path)[name])
        where = f"memfs {name} ({kind})"
        assert "Traceback" not in done.stderr, where
        assert (done.returncode, done.stdout) == (1, ""), (where, done.stderr)
        assert done.stderr.count("\n") == 1, (where, done.stderr)
        assert done.stderr.startswith(said), (where, done.stderr)
        assert done.stderr.rstrip("\n").endswith("give another --store URL"), where
        for made in ("mnt", "mirror", "copy.db"):
            assert not (tmp_path / made).exists(), (where, made)
    assert sorted(os.listdir(tmp_path / "src")) == ["n.md"]
