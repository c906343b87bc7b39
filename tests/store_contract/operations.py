"""Invariant 12 on every backend: every change in exactly one operation, recorded in the
change's own transaction, with what the change found at its path."""

from __future__ import annotations

import pytest

from memfs.errors import Conflict, NotFound
from memfs.store.base import Act, Store
from tests.store_contract.common import A


class OperationsContract:
    def test_a_lone_mutation_is_an_operation_of_its_own(self, store: Store) -> None:
        store.write("a.md", b"one\n", author=A)
        store.write("b.md", b"two\n", author="b")
        ops = store.operations()
        assert [(o.actor, o.changes) for o in ops] == [("b", 1), (A, 1)]
        assert ops[0].id > ops[1].id
        (change,) = store.changes(op=ops[0].id)
        assert change.path == "b.md" and change.op == ops[0].id

    def test_mutations_acting_for_one_act_are_one_operation_across_transactions(
        self, store: Store
    ) -> None:
        act = Act("root (cp)", detail="pid 42", label="cp")
        with store.acting(act):
            store.mkdir("d", author="root (cp)")
            store.write("d/a.md", b"a\n", author="root (cp)")
        assert act.id is not None
        with store.acting(act):  # later: the same burst goes on
            store.write("d/b.md", b"b\n", author="root (cp)")
        op = store.operation(act.id)
        assert (op.actor, op.detail, op.label, op.changes) == ("root (cp)", "pid 42", "cp", 3)
        records = store.changes(op=act.id)
        assert [c.path for c in records] == ["d", "d/a.md", "d/b.md"]
        assert (op.first_seq, op.last_seq) == (records[0].seq, records[-1].seq)
        assert op.start_ns <= op.end_ns
        assert [o.id for o in store.operations()] == [act.id]

    def test_a_batch_is_one_operation(self, store: Store) -> None:
        with store.batch():
            store.write("a.md", b"a\n", author=A)
            store.write("b.md", b"b\n", author=A)
        (op,) = store.operations()
        assert op.changes == 2 and {c.op for c in store.changes()} == {op.id}

    def test_a_refused_first_change_leaves_no_operation(self, store: Store) -> None:
        store.write("a.md", b"a\n", author=A)
        act = Act("agent")
        with store.acting(act), pytest.raises(Conflict):
            store.write("a.md", b"b\n", author="agent", expected_rev=999)
        assert act.id is None
        assert [o.actor for o in store.operations()] == [A]
        with store.acting(act):  # it is recorded once it changes something
            store.write("a.md", b"b\n", author="agent")
        assert store.operation(act.id or 0).changes == 1

    def test_every_record_says_what_it_found_and_what_it_left(self, store: Store) -> None:
        store.write("f.md", b"old\n", author=A, mode=0o640)
        store.write("f.md", b"new!\n", author=A)
        store.set_attrs("f.md", author=A, mode=0o600)
        store.symlink("link", "f.md", author=A)
        store.write("g.md", b"g\n", author=A)
        store.rename("g.md", "f.md", author=A, overwrite=True)
        store.delete("f.md", author=A)
        create, modify, attr, link, _, rename, delete = store.changes()
        assert create.prior_kind is None and create.mode == 0o640
        old = store.changes()[0].sha256
        assert (modify.prior_kind, modify.prior_sha256, modify.prior_size) == ("file", old, 4)
        assert modify.prior_mode == 0o640 and modify.mode == 0o640
        assert (attr.prior_mode, attr.mode, attr.prior_sha256) == (0o640, 0o600, modify.sha256)
        assert (link.kind, link.target, link.mode) == ("symlink", "f.md", 0o777)
        # A rename's prior is the destination it replaced; what it moved is in sha256.
        assert (rename.prior_kind, rename.prior_sha256) == ("file", modify.sha256)
        assert rename.prior_mode == 0o600 and rename.mode == 0o600  # g.md's own
        assert (delete.prior_kind, delete.prior_sha256, delete.prior_size) == (
            "file",
            rename.sha256,
            2,
        )

    def test_a_recursive_delete_records_each_entry_with_what_it_was(self, store: Store) -> None:
        store.write("d/x.md", b"x\n", author=A, parents=True)
        store.symlink("d/l", "x.md", author=A)
        store.set_attrs("d", author=A, mode=0o750)
        store.delete("d", author="root (rm)", recursive=True)
        records = store.changes(op=store.operations(limit=1)[0].id)
        found = {c.path: (c.kind, c.prior_kind, c.prior_mode, c.prior_target) for c in records}
        assert found == {
            "d/x.md": ("delete", "file", 0o600, None),
            "d/l": ("delete", "symlink", 0o777, "x.md"),
            "d": ("rmdir", "dir", 0o750, None),
        }

    def test_an_atomic_save_inside_one_operation_leaves_no_temporary_history(
        self, store: Store
    ) -> None:
        store.write("f.md", b"old\n", author=A)
        act = Act("root (sed)", label="sed")
        with store.acting(act):
            store.write("sedX1y2z3", b"new\n", author="root (sed)")
        with store.acting(act):  # another transaction of the same operation
            store.rename("sedX1y2z3", "f.md", author="root (sed)", overwrite=True)
        with pytest.raises(NotFound):
            store.history("sedX1y2z3")
        assert [r.author for r in store.history("f.md")] == ["root (sed)", A]
        assert store.read("f.md")[0] == b"new\n"
        # A file made and removed in one operation leaves nothing either.
        with store.acting(Act("root (vim)")):
            store.write("4913", b"", author="root (vim)")
            store.delete("4913", author="root (vim)")
        with pytest.raises(NotFound):
            store.history("4913")

    def test_a_temporary_name_of_another_operation_keeps_its_history(self, store: Store) -> None:
        store.write("t.md", b"kept\n", author=A)
        store.rename("t.md", "f.md", author="b")  # not made by the renaming operation
        assert [r.author for r in store.history("t.md")] == [A]

    def test_a_temporary_name_that_held_an_earlier_file_keeps_that_history(
        self, store: Store
    ) -> None:
        store.write("t.md", b"earlier\n", author=A)
        store.delete("t.md", author=A)
        store.write("f.md", b"old\n", author=A)
        act = Act("root (sed)", label="sed")
        with store.acting(act):
            store.write("t.md", b"new\n", author="root (sed)")
        with store.acting(act):
            store.rename("t.md", "f.md", author="root (sed)", overwrite=True)
        # The save leaves no history at t.md; the file deleted there before keeps its.
        assert [r.author for r in store.history("t.md")] == [A]
        assert [r.author for r in store.history("f.md")] == ["root (sed)", A]
        assert store.read("f.md")[0] == b"new\n"

    def test_operations_filter_by_actor_path_time_and_page(self, store: Store) -> None:
        store.write("notes/a.md", b"a\n", author="agent:planner", parents=True)
        store.write("other/b.md", b"b\n", author="root (vim)", parents=True)
        store.rename("notes/a.md", "moved.md", author="root (mv)")
        store.write("notes/c.md", b"c\n", author="agent:writer")
        every = store.operations(limit=None)
        assert [o.actor for o in every] == [
            "agent:writer", "root (mv)", "root (vim)", "agent:planner",
        ]  # fmt: skip
        assert [o.actor for o in store.operations(actor="agent:")] == [
            "agent:writer",
            "agent:planner",
        ]
        # The move touches notes/ (from there) as much as the writes in it.
        assert [o.actor for o in store.operations(path="notes")] == [
            "agent:writer",
            "root (mv)",
            "agent:planner",
        ]
        page = store.operations(limit=2)
        rest = store.operations(before=page[-1].id, limit=2)
        assert [o.id for o in page + rest] == [o.id for o in every]
        middle = every[2].start_ns
        assert store.operations(since_ns=middle + 1, until_ns=every[0].start_ns) != []
        assert all(o.start_ns > middle for o in store.operations(since_ns=middle + 1))
        with pytest.raises(NotFound):
            store.operation(10_000)
