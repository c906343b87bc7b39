"""The provisional operations API (memfs.history.operations) on a real SQLite store:
grouping, filters, paging, and an undo that is all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.errors import NotFound
from memfs.history.operations import (
    operation,
    operation_changes,
    operations,
    undo_operation,
)
from memfs.store import open_store
from memfs.store.base import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path}/m.db")
    s.write("notes/a.md", b"one\n", author="vim (pid 12)", parents=True)
    s.write("notes/a.md", b"two\n", author="agent:planner")
    with s.batch():
        for i in range(5):
            s.write(f"many/{i}.md", b"x", author="cp (pid 3)", parents=True)
    s.delete("many", author="rm (pid 4)", recursive=True)
    yield s
    s.close()


def test_an_operation_is_one_mutation_with_its_actor_and_summary(store: Store) -> None:
    ops = operations(store)
    assert [o.actor for o in ops] == ["rm", "cp", "agent:planner", "vim"]
    rm = ops[0]
    assert rm.detail == "pid 4" and rm.top == "many"
    assert rm.counts == {"delete": 5, "rmdir": 1}
    assert rm.summary == "rm: deleted 5 files, removed 1 directory in many/"
    assert ops[2].summary == "agent:planner: edited notes/a.md"
    assert [c.path for c in operation_changes(store, rm.id)][-1] == "many"
    assert operation(store, rm.id) == rm
    assert rm.as_json()["id"] == rm.id


def test_filters_and_pages(store: Store) -> None:
    first = operations(store, limit=2)
    rest = operations(store, before=first[-1].id, limit=2)
    assert [o.actor for o in first + rest] == ["rm", "cp", "agent:planner", "vim"]
    assert [o.actor for o in operations(store, path="notes/a.md")] == ["agent:planner", "vim"]
    assert [o.actor for o in operations(store, actor="planner")] == ["agent:planner"]
    newest = first[0].start_ns
    assert [o.actor for o in operations(store, since_ns=newest)] == ["rm"]
    assert "rm" not in [o.actor for o in operations(store, until_ns=newest - 1)]


def test_an_unknown_or_inner_id_is_not_found(store: Store) -> None:
    for bad in (0, 99, operations(store)[0].id + 1):
        with pytest.raises(NotFound):
            operation(store, bad)


def test_undo_takes_an_operation_back_whole_as_one_new_operation(store: Store) -> None:
    rm = operations(store)[0]
    assert undo_operation(store, rm.id, actor="web:me", dry_run=True).done is False
    with pytest.raises(NotFound):
        store.stat("many")
    result = undo_operation(store, rm.id, actor="web:me")
    assert result.done and result.made == 6 and result.conflicts == []
    assert sorted(e.path for e in store.walk("many")) == [f"many/{i}.md" for i in range(5)]
    assert result.new_op is not None
    assert operation(store, result.new_op).actor == "web:me"


def test_undo_with_conflicts_changes_nothing_unless_forced(store: Store) -> None:
    vim = operations(store, actor="vim")[0]
    last = store.last_seq()
    result = undo_operation(store, vim.id, actor="web:me")
    assert result.conflicts == ["'notes/a.md' was changed since"]
    assert not result.done and store.last_seq() == last
    assert store.read("notes/a.md")[0] == b"two\n"
