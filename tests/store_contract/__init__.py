"""The contract every store backend keeps: one test per invariant of memfs.store.base.

A backend's test module subclasses :class:`StoreContract` and supplies two fixtures:
``make_store``, a callable taking backend options (at least ``history``,
``deleted_history_days``, ``max_file_bytes``, ``max_tree_bytes`` and ``max_files``) and
returning a new, empty store that the fixture closes at the end; and ``damage``, a
callable ``(store, sha256, data)`` that overwrites the stored bytes of that content with
SQL behind the store's back, keeping every recorded hash (see ``integrity.py``).
Example (tests/test_store_contract_sqlite.py)::

    class TestSqliteContract(StoreContract):
        @pytest.fixture
        def make_store(self, tmp_path): ...
"""

from __future__ import annotations

import pytest

from memfs.store.base import Store
from tests.store_contract.common import A, MakeStore, tree
from tests.store_contract.deltas import DeltasContract
from tests.store_contract.feed import FeedContract
from tests.store_contract.history import HistoryContract
from tests.store_contract.integrity import Damage, IntegrityContract
from tests.store_contract.keeping import KeepingContract
from tests.store_contract.model import ModelContract
from tests.store_contract.notes import NotesContract
from tests.store_contract.operations import OperationsContract
from tests.store_contract.ranges import RangesContract
from tests.store_contract.rebase import RebaseContract
from tests.store_contract.series import BatchKnowledgeContract, SeriesContract
from tests.store_contract.tree import TreeContract

__all__ = ["A", "Damage", "MakeStore", "StoreContract", "tree"]


class StoreContract(
    TreeContract,
    FeedContract,
    HistoryContract,
    KeepingContract,
    ModelContract,
    IntegrityContract,
    RebaseContract,
    OperationsContract,
    NotesContract,
    RangesContract,
    DeltasContract,
    SeriesContract,
    BatchKnowledgeContract,
):
    @pytest.fixture
    def make_store(self) -> MakeStore:
        raise NotImplementedError("a backend's test module supplies make_store")

    @pytest.fixture
    def damage(self) -> Damage:
        raise NotImplementedError("a backend's test module supplies damage")

    @pytest.fixture
    def store(self, make_store: MakeStore) -> Store:
        return make_store()
