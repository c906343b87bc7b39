"""The shared store contract, run against the PostgreSQL backend (through the registry):
each store made is a fresh tree in one throwaway cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfs.store import Store, open_store
from tests.fixtures.postgres import PgCluster
from tests.store_contract import MakeStore, StoreContract
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
