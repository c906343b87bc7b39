"""``memfs trees``: the trees of one PostgreSQL database, and of an SQLite file."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memfs.cli import main
from memfs.store import open_store
from tests.fixtures.postgres import PgCluster


def test_trees_lists_every_tree_of_the_database_with_sizes(pg_cluster: PgCluster) -> None:
    pg_cluster.psql("DROP DATABASE IF EXISTS listing", db="postgres")
    pg_cluster.psql("CREATE DATABASE listing", db="postgres")
    runner = CliRunner()
    empty = runner.invoke(main, ["trees", "--store", pg_cluster.url("x", db="listing")])
    assert empty.exit_code == 0, empty.output
    assert empty.output == (
        "No memory trees in this database yet; mounting a URL with ?tree=NAME makes one.\n"
    )
    with open_store(pg_cluster.url("alpha", db="listing")) as alpha:
        alpha.write("a/one.md", b"x" * 2048, author="t", parents=True)
    with open_store(pg_cluster.url("beta", db="listing")) as beta:
        beta.write("b.md", b"12345", author="t")
    done = runner.invoke(main, ["trees", "--store", pg_cluster.url("ignored", db="listing")])
    assert done.exit_code == 0, done.output
    base = f"postgresql://memfs@/listing?host={str(pg_cluster.socket_dir).replace('/', '%2F')}"
    assert done.output.splitlines() == [
        line.rstrip()
        for line in (
            "TREE   FILES  DIRS  SIZE     CHANGES  URL",
            f"alpha  1      1     2.0 KiB  2        {base}&tree=alpha",
            f"beta   1      0     5 B      1        {base}&tree=beta",
        )
    ]
    # Each listed URL opens its tree.
    with open_store(f"{base}&tree=beta") as again:
        assert again.read("b.md")[0] == b"12345"


def test_trees_of_an_sqlite_file_is_its_one_tree(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/m.db"
    with open_store(url) as store:
        store.write("f", b"abc", author="t")
    done = CliRunner().invoke(main, ["trees", "--store", url])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[1].split() == ["default", "1", "0", "3", "B", "1", url]


def test_trees_of_an_unreachable_server_is_one_line(pg_cluster: PgCluster) -> None:
    url = f"postgresql://memfs@/memfs?host={pg_cluster.socket_dir}/nowhere"
    done = CliRunner().invoke(main, ["trees", "--store", url])
    assert done.exit_code == 1
    assert done.output.startswith("Error: no PostgreSQL server answers at ")
    assert done.output.count("\n") == 1 and "give another --store URL" in done.output
