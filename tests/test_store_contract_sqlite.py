"""The shared store contract, run against the SQLite backend (through the registry)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.store import Store, open_store
from memfs.store.sqlite import SqliteStore
from tests.store_contract import Damage, MakeStore, StoreContract


class TestSqliteContract(StoreContract):
    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[MakeStore]:
        opened: list[Store] = []

        def make(**options: object) -> Store:
            store = open_store(f"sqlite://{tmp_path}/store{len(opened)}.db", **options)
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()

    @pytest.fixture
    def damage(self) -> Damage:
        def overwrite(store: Store, sha256: str, data: bytes) -> None:
            assert isinstance(store, SqliteStore)
            db = sqlite3.connect(store.path)
            try:
                db.execute(
                    "UPDATE blobs SET codec = 0, content = ? WHERE id ="
                    " (SELECT blob_id FROM blob_refs WHERE sha256 = ?)",
                    (data, sha256),
                )
                assert db.total_changes == 1
                db.commit()
            finally:
                db.close()

        return overwrite


def test_shown_urls_mask_passwords_and_keep_the_rest() -> None:
    from memfs.store import shown_url

    assert shown_url("postgresql://ann:s3cret@db:5432/m?tree=t") == (
        "postgresql://ann:***@db:5432/m?tree=t"
    )
    assert shown_url("postgresql:///m?host=/run&password=s3cret&tree=t") == (
        "postgresql:///m?host=/run&password=***&tree=t"
    )
    assert shown_url("sqlite:///home/ann/memory.db?history=5") == (
        "sqlite:///home/ann/memory.db?history=5"
    )
    assert shown_url("/plain/path?odd.db") == "/plain/path?odd.db"
