"""The shared store contract, run against the PostgreSQL backend (through the registry):
each store made is a fresh tree in one throwaway cluster."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfs.store import Store, open_store
from memfs.store.postgres import PostgresStore
from tests.fixtures.postgres import DATABASE, SUPERUSER, PgCluster
from tests.store_contract import Damage, MakeStore, StoreContract
from tests.store_contract.model import OPS


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

    @pytest.fixture
    def damage(self, pg_cluster: PgCluster) -> Damage:
        def overwrite(store: Store, sha256: str, data: bytes) -> None:
            assert isinstance(store, PostgresStore)
            conninfo = f"host={pg_cluster.socket_dir} user={SUPERUSER} dbname={DATABASE}"
            with psycopg.connect(conninfo, autocommit=True) as db:
                done = db.execute(
                    "UPDATE memfs.blobs SET content = %s WHERE tree = %s AND sha256 = %s",
                    (data, store.tree, sha256),
                )
                assert done.rowcount == 1

        return overwrite

    # The model test again, wrapped by Hypothesis for this class alone: one wrapped test
    # method run by two classes (SQLite's and this one) fails Hypothesis's
    # differing_executors health check in a run of the whole suite.
    test_random_operations_match_the_model = settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )(
        given(ops=st.lists(OPS, min_size=1, max_size=25))(
            StoreContract.test_random_operations_match_the_model.hypothesis.inner_test  # type: ignore[attr-defined]
        )
    )
