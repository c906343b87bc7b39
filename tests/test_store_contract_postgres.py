"""The shared store contract, run against the PostgreSQL backend (through the registry):
each store made is a fresh tree in one throwaway cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memfs.store import Store, open_store
from tests.fixtures.postgres import PgCluster
from tests.store_contract import MakeStore, StoreContract


class TestPostgresContract(StoreContract):
    @pytest.fixture
    def make_store(self, pg_cluster: PgCluster) -> Iterator[MakeStore]:
        opened: list[Store] = []

        def make(**options: object) -> Store:
            store = open_store(pg_cluster.url(), **options)
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()
