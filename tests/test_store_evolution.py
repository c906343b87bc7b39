"""Schema evolution written once (memfs.store.evolution): stores the previous release
made, an SQLite file and a PostgreSQL database (tests/fixtures/stores/, written by memfs
as released on 2026-12-01, before the operation log), open and are migrated alike: every
old change in an operation, grouped as that release's undo grouped them (one author,
one time), their priors marked unknown, and the stores go on working."""

from __future__ import annotations

import shutil
from pathlib import Path

from memfs.store import open_store
from memfs.store.base import Store
from tests.fixtures.postgres import PgCluster

FIXTURES = Path(__file__).parent / "fixtures" / "stores"
A = "tester"

# The release's store: its 17 changes, by operation as its undo grouped them.
GROUPS = [
    ("vim (pid 812)", ["mkdir notes", "create notes/todo.md"]),
    ("vim (pid 812)", ["modify notes/todo.md"]),
    ("memfs (pid 90)", ["create notes/plan.md"]),
    ("memfs (pid 90)", ["rename notes/plan-v2.md"]),
    ("memfs (pid 90)", ["mkdir many", "create many/a.md", "create many/b.md",
                        "mkdir many/sub", "create many/sub/c.md"]),
    ("rm (pid 29402)", ["delete many/sub/c.md", "rmdir many/sub", "delete many/b.md",
                        "delete many/a.md", "rmdir many"]),
    ("vim (pid 812)", ["symlink notes/.#todo.md"]),
    ("vim (pid 812)", ["attr notes/todo.md"]),
]  # fmt: skip


def _check_migrated(store: Store) -> None:
    ops = list(reversed(store.operations(limit=None)))
    assert [(o.actor, o.changes) for o in ops] == [(a, len(g)) for a, g in GROUPS]
    assert {o.command for o in ops} == {""}  # none by memfs's own commands
    for op, (_, kinds) in zip(ops, GROUPS, strict=True):
        records = store.changes(op=op.id)
        assert [f"{c.kind} {c.path}" for c in records] == kinds
        assert {c.prior_kind for c in records} == {"?"}  # not recorded then
        assert (op.first_seq, op.last_seq) == (records[0].seq, records[-1].seq)
    assert store.read("notes/todo.md")[0] == b"- milk\n- eggs\n"
    # It goes on: a new change is a new operation, numbered after the old ones.
    store.write("notes/todo.md", b"- milk\n", author=A)
    newest = store.operations(limit=1)[0]
    assert newest.id == ops[-1].id + 1 and newest.actor == A
    (change,) = store.changes(op=newest.id)
    assert change.prior_kind == "file" and change.prior_sha256 is not None


def test_a_store_of_the_previous_release_migrates(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "release-2026-12-01.db", path)
    with open_store(path) as store:
        _check_migrated(store)
    with open_store(path) as store:  # and opens again as it is
        assert len(store.operations(limit=None)) == len(GROUPS) + 1


def test_a_postgresql_database_of_the_previous_release_migrates(pg_cluster: PgCluster) -> None:
    pg_cluster.psql("DROP DATABASE IF EXISTS released", db="postgres")
    pg_cluster.psql("CREATE DATABASE released", db="postgres")
    dump = FIXTURES / "release-2026-12-01-pg.sql"
    # On standard input, read by this process: the test must not depend on whether the
    # cluster's user can read the directory the clone lives in.
    pg_cluster.psql_script(dump.read_text(encoding="utf-8"), db="released")
    url = pg_cluster.url("team", db="released")
    with open_store(url) as store:
        _check_migrated(store)
    version = "SELECT value FROM memfs.meta WHERE key = 'schema_version'"
    from memfs.store import postgres_schema

    got = pg_cluster.psql(version, db="released").strip()
    assert got == str(postgres_schema.SCHEMA_VERSION)


def test_operations_recorded_before_the_command_field_take_it_from_their_actor(
    tmp_path: Path,
) -> None:
    import sqlite3

    from memfs.history.author import act_for, author_for
    from memfs.store import evolution, sqlite_schema

    path = tmp_path / "memory.db"
    with open_store(path) as store:
        with store.acting(act_for("restore", "ann")):
            store.write("a.md", b"restored\n", author=author_for("restore", "ann"))
        store.write("b.md", b"b\n", author="memfs-bot")
    # Back to the schema before the step: no command column, nor any later step's table.
    steps_after = len(evolution.STEPS) - evolution.STEPS.index(evolution._operation_command)
    later = [s.__name__ for s in evolution.STEPS[-steps_after + 1 :]]
    assert later == ["_door_notes", "_continued_blobs"]
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE operations DROP COLUMN command")
    db.execute("DROP TABLE door_notes")
    db.execute("DROP TRIGGER blob_removed")
    db.execute("DROP INDEX blobs_by_base")
    db.execute("ALTER TABLE blobs DROP COLUMN base")
    db.execute(f"PRAGMA user_version = {sqlite_schema.SCHEMA_VERSION - steps_after}")
    db.commit()
    db.close()
    with open_store(path) as store:
        got = [(o.actor, o.command) for o in store.operations(limit=None)]
        assert got == [("memfs-bot", ""), (author_for("restore", "ann"), "restore")]
        assert store.commands_since("a.md", 0) == {"restore"}
