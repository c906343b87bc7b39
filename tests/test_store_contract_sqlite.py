"""The shared store contract, run against the SQLite backend (through the registry)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.store import Store, open_store
from tests.store_contract import MakeStore, StoreContract


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
