"""Schema evolution written once (memfs.store.evolution): one step migrates an existing
SQLite file and an existing PostgreSQL database alike, and the stores go on working."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memfs.store import open_store, postgres_schema, sqlite_schema
from memfs.store.evolution import Ddl
from tests.fixtures.postgres import PgCluster

A = "tester"


def operations(ddl: Ddl) -> list[str]:
    """The kind of step the next schema adds: a table kept per tree, a feed column."""
    return [
        f"CREATE TABLE operations ({ddl.tree_key}id {ddl.integer} NOT NULL,"
        f" author {ddl.text} NOT NULL, note {ddl.blob}, PRIMARY KEY ({ddl.tree_column}id))",
        f"ALTER TABLE changes ADD COLUMN op {ddl.integer}",
    ]


def test_one_step_migrates_an_sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    with open_store(path) as store:
        store.write("a.md", b"before\n", author=A)
    current = list(sqlite_schema.MIGRATIONS)
    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", [*current, sqlite_schema._shared(operations)])
    monkeypatch.setattr(sqlite_schema, "SCHEMA_VERSION", len(current) + 1)
    with open_store(path) as store:
        assert store.read("a.md")[0] == b"before\n"
        store.write("a.md", b"after\n", author=A)
        assert [c.kind for c in store.changes()] == ["create", "modify"]
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(current) + 1
        columns = [row[1] for row in db.execute("PRAGMA table_info(changes)")]
        assert columns[-1] == "op"
        assert db.execute("SELECT count(*) FROM operations").fetchone()[0] == 0
    finally:
        db.close()


def test_one_step_migrates_a_postgresql_database(
    pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_cluster.psql("DROP DATABASE IF EXISTS evolution", db="postgres")
    pg_cluster.psql("CREATE DATABASE evolution", db="postgres")
    url = pg_cluster.url("t", db="evolution")
    with open_store(url) as store:
        store.write("a.md", b"before\n", author=A)
    current = list(postgres_schema.MIGRATIONS)
    shared = [*current, postgres_schema._shared(operations)]
    monkeypatch.setattr(postgres_schema, "MIGRATIONS", shared)
    monkeypatch.setattr(postgres_schema, "SCHEMA_VERSION", len(current) + 1)
    with open_store(url) as store:
        assert store.read("a.md")[0] == b"before\n"
        store.write("a.md", b"after\n", author=A)
        assert [c.kind for c in store.changes()] == ["create", "modify"]
    version = "SELECT value FROM memfs.meta WHERE key = 'schema_version'"
    assert pg_cluster.psql(version, db="evolution").strip() == str(len(current) + 1)
    column = (
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'memfs'"
        " AND table_name = 'changes' ORDER BY ordinal_position DESC LIMIT 1"
    )
    assert pg_cluster.psql(column, db="evolution").strip() == "op"
    key = (
        "SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM pg_constraint c,"
        " unnest(c.conkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a"
        " ON a.attnum = k.attnum AND a.attrelid = 'memfs.operations'::regclass"
        " WHERE c.conrelid = 'memfs.operations'::regclass AND c.contype = 'p'"
    )
    assert pg_cluster.psql(key, db="evolution").strip() == "tree,id"
