"""The history commands on a PostgreSQL tree: log, checkpoint, restore --to and undo
through the CLI, and a tree that another tree of the same database never sees."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.store import open_store
from tests.fixtures.postgres import PgCluster
from tests.store_contract.common import tree


def run(url: str, *args: str) -> Result:
    result = CliRunner().invoke(main, [*args, "--store", url])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def url(pg_cluster: PgCluster) -> str:
    return pg_cluster.url()


def test_log_checkpoint_restore_and_undo_on_a_server_tree(pg_cluster: PgCluster, url: str) -> None:
    neighbour = pg_cluster.url()
    with open_store(url) as store, open_store(neighbour) as other:
        other.write("theirs.md", b"other tree", author="x")
        store.write("notes/plan.md", b"v1\n", author="alice", parents=True)
        run(url, "checkpoint", "good")
        store.write("notes/plan.md", b"broken\n", author="agent:bob")
        store.write("notes/junk.md", b"junk\n", author="agent:bob")
        records = [json.loads(line) for line in run(url, "log", "--json").output.splitlines()]
        assert [(r["actor"], r["summary"]) for r in records] == [
            ("agent:bob", "agent:bob: created notes/junk.md"),
            ("agent:bob", "agent:bob: edited notes/plan.md"),
            ("alice", "alice: made directory notes, created notes/plan.md"),
        ]
        done = run(url, "restore", "--to", "good").output.splitlines()
        assert done[-1].startswith("returned the tree to good with 2 changes")
        assert tree(store) == {"notes": ("dir", None), "notes/plan.md": ("file", b"v1\n")}
        run(url, "undo")  # the restore, whole
        assert tree(store)["notes/junk.md"] == ("file", b"junk\n")
        assert tree(other) == {"theirs.md": ("file", b"other tree")}
        assert [c.name for c in other.checkpoints()] == []
