"""The contract for invariants 7 and 8 and the feed's revision fields: caps, batches,
checkpoints, redaction, content by hash, last use, and reading the feed backwards."""

from __future__ import annotations

import hashlib
import itertools
import threading
import time

import pytest

from memfs.errors import AlreadyExists, CapExceeded, Conflict, NotFound, Redacted
from memfs.store.base import Store
from tests.store_contract.common import A, MakeStore, tree

HOUR = 3_600 * 10**9


class KeepingContract:
    # --- the feed carries revisions -------------------------------------------------------
    def test_changes_carry_the_revision_size_and_hash(self, store: Store) -> None:
        store.mkdir("d", author=A)
        made = store.write("d/f", b"hello", author=A)
        store.rename("d", "e", author=A)
        store.rename("e/f", "e/g", author=A)
        changes = store.changes()[:-1]
        create = next(c for c in changes if c.kind == "create")
        assert (create.rev, create.size) == (made.rev, 5)
        assert create.sha256 == hashlib.sha256(b"hello").hexdigest()
        rename = changes[-1]
        assert rename.kind == "rename"
        # The rename carries the arrival revision it made, so every revision belongs to
        # exactly one change.
        assert rename.rev == store.history("e/f")[0].rev  # (tombstoned since: moved on)
        assert store.changes()[0].sha256 is None  # mkdir made no content
        assert rename.sha256 is None  # a directory's move carries no content
        moved = store.changes()[-1]
        assert (moved.size, moved.sha256) == (5, create.sha256)  # a file's move does

    def test_changes_keep_the_hash_after_the_revision_is_pruned(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(history=0)
        store.write("f", b"old", author=A)
        store.write("f", b"new", author=A)
        assert [c.sha256 for c in store.changes()] == [
            hashlib.sha256(b"old").hexdigest(),
            hashlib.sha256(b"new").hexdigest(),
        ]

    def test_changes_read_newest_first_and_up_to_a_bound(self, store: Store) -> None:
        for i in range(5):
            store.write(f"f{i}", b"x", author=A)
        seqs = [c.seq for c in store.changes()]
        assert [c.seq for c in store.changes(newest_first=True)] == seqs[::-1]
        assert [c.seq for c in store.changes(newest_first=True, limit=2)] == seqs[:-3:-1]
        assert [c.seq for c in store.changes(seqs[0], until=seqs[3])] == seqs[1:4]
        assert [c.seq for c in store.changes(until=seqs[1], newest_first=True)] == seqs[1::-1]

    # --- caps ------------------------------------------------------------------------------
    def test_the_tree_byte_cap_refuses_and_changes_nothing(self, make_store: MakeStore) -> None:
        store = make_store(max_tree_bytes=10)
        assert store.max_tree_bytes == 10
        store.write("a", b"12345", author=A)
        seq = store.last_seq()
        with pytest.raises(CapExceeded) as caught:
            store.write("b", b"123456", author=A)
        assert (caught.value.cap, caught.value.limit, caught.value.would) == (
            "max_tree_bytes",
            10,
            11,
        )
        with pytest.raises(CapExceeded):
            store.write("a", b"12345678901", author=A)
        with pytest.raises(CapExceeded):
            store.truncate("a", 11, author=A)
        assert store.last_seq() == seq and tree(store) == {"a": ("file", b"12345")}
        store.write("b", b"12345", author=A)  # exactly at the cap is allowed
        store.write("a", b"1", author=A)  # shrinking always is
        assert store.usage().bytes == 6

    def test_the_file_count_cap_refuses_new_files_only(self, make_store: MakeStore) -> None:
        store = make_store(max_files=2)
        store.write("a", b"1", author=A)
        store.write("b", b"2", author=A)
        with pytest.raises(CapExceeded) as caught:
            store.write("c", b"3", author=A)
        assert caught.value.cap == "max_files"
        store.write("a", b"rewritten", author=A)  # not a new file
        store.mkdir("d", author=A)  # directories are not counted
        store.rename("b", "d/b", author=A)
        store.delete("a", author=A)
        store.write("c", b"3", author=A)
        assert store.usage().files == 2

    def test_usage_follows_every_kind_of_mutation(self, store: Store) -> None:
        store.write("d/a", b"12345", author=A, parents=True)
        store.write("d/b", b"123", author=A)
        store.truncate("d/b", 10, author=A)
        store.rename("d", "e", author=A)
        store.write("f", b"1", author=A)
        store.rename("f", "e/a", author=A, overwrite=True)
        assert store.usage().files == 2 and store.usage().bytes == 11
        store.delete("e", author=A, recursive=True)
        assert (store.usage().files, store.usage().dirs, store.usage().bytes) == (0, 0, 0)

    # --- batches ---------------------------------------------------------------------------
    def test_a_batch_is_all_or_nothing(self, store: Store) -> None:
        store.write("keep", b"k", author=A)
        seq = store.last_seq()
        with pytest.raises(RuntimeError), store.batch():
            store.write("a", b"1", author=A)
            store.delete("keep", author=A)
            raise RuntimeError("abandon")
        assert tree(store) == {"keep": ("file", b"k")} and store.last_seq() == seq
        with store.batch():
            store.write("a", b"1", author=A)
            with pytest.raises(AlreadyExists):  # a failed mutation inside leaves nothing
                store.write("a", b"2", author=A, expected_rev=0)
            with store.batch():
                store.write("b", b"2", author=A)
            # Reads inside a batch see its own changes.
            assert [r.author for r in store.history("a")] == [A]
            assert store.read_revision("a", store.stat("a").rev) == b"1"
        assert tree(store) == {"keep": ("file", b"k"), "a": ("file", b"1"), "b": ("file", b"2")}

    def test_a_batch_is_one_time_unless_the_clock_is_replaced(self, store: Store) -> None:
        ticks = itertools.count(10**18, 1000)  # a clock that moves at every reading
        store.clock = lambda: next(ticks)
        store.write("before1", b"0", author=A)
        store.write("before2", b"0", author=A)
        with store.batch():
            store.write("a", b"1", author=A)
            store.write("b", b"2", author=A)
            store.clock = lambda: 42
            store.write("c", b"3", author=A)
        times = [c.time_ns for c in store.changes()]
        assert times[0] != times[1]  # outside a batch every change reads the clock
        assert times[2] == times[3] != 42 and times[4] == 42

    def test_other_threads_see_a_batch_only_when_it_is_done(self, store: Store) -> None:
        seen: list[dict[str, tuple[str, bytes | str | None]]] = []
        inside = threading.Event()
        go_on = threading.Event()

        def look() -> None:
            inside.wait(10)
            seen.append(tree(store))
            go_on.set()

        reader = threading.Thread(target=look)
        reader.start()
        with store.batch():
            store.write("a", b"1", author=A)
            inside.set()
            assert go_on.wait(10)
        reader.join(10)
        assert seen == [{}] and tree(store) == {"a": ("file", b"1")}

    # --- content by hash, checkpoints ---------------------------------------------------------
    def test_content_is_readable_by_hash_while_retained(self, make_store: MakeStore) -> None:
        store = make_store(history=0, deleted_history_days=0)
        store.write("f", b"old", author=A)
        sha = hashlib.sha256(b"old").hexdigest()
        assert store.read_blob(sha) == b"old"
        store.write("f", b"new", author=A)  # history=0: "old" is no longer retained
        with pytest.raises(NotFound):
            store.read_blob(sha)

    def test_checkpoints_name_points_of_the_feed(self, store: Store) -> None:
        store.write("a", b"1", author=A)
        first = store.set_checkpoint("before", author="alice")
        assert (first.name, first.seq, first.author) == ("before", store.last_seq(), "alice")
        store.write("b", b"2", author=A)
        store.set_checkpoint("early", author=A, seq=0)  # the empty tree
        with pytest.raises(AlreadyExists):
            store.set_checkpoint("before", author=A)
        with pytest.raises(NotFound):
            store.set_checkpoint("future", author=A, seq=store.last_seq() + 1)
        assert [c.name for c in store.checkpoints()] == ["early", "before"]
        store.delete_checkpoint("early")
        with pytest.raises(NotFound):
            store.delete_checkpoint("early")
        assert [c.name for c in store.checkpoints()] == ["before"]

    # --- redaction -------------------------------------------------------------------------------
    def test_redaction_removes_content_and_keeps_the_record(self, store: Store) -> None:
        secret = b"token=sk-live-123"
        store.write("notes.md", secret, author=A)
        store.write("copy.md", secret, author=A)
        store.write("notes.md", b"clean", author=A)
        old = store.history("notes.md")[1]
        with pytest.raises(Conflict):  # still copy.md's current content
            store.redact("notes.md", old.rev, author="alice")
        store.write("copy.md", b"clean too", author=A)
        redacted = store.redact("notes.md", old.rev, author="alice")
        assert {(r.path, r.redacted_by) for r in redacted} == {
            ("notes.md", "alice"),
            ("copy.md", "alice"),
        }
        again = store.history("notes.md")[1]
        assert (again.rev, again.sha256, again.redacted_by) == (old.rev, old.sha256, "alice")
        with pytest.raises(Redacted) as caught:
            store.read_revision("notes.md", old.rev)
        assert caught.value.by == "alice"
        with pytest.raises(NotFound):
            store.read_blob(old.sha256)
        assert store.redact("notes.md", old.rev, author="bob")[0].redacted_by == "alice"
        # The same bytes written again are stored afresh, whole.
        store.write("again.md", secret, author=A)
        assert store.read("again.md")[0] == secret
        store.write("again.md", b"x", author=A)
        assert store.read_revision("again.md", store.history("again.md")[1].rev) == secret
        with pytest.raises(NotFound):
            store.redact("notes.md", 999_999, author=A)

    # --- last use ----------------------------------------------------------------------
    def test_last_use_is_the_newest_write_or_model_read(self, store: Store) -> None:
        now = time.time_ns()
        store.clock = lambda: now
        store.write("read", b"1", author=A)
        store.write("written", b"1", author=A)
        store.write("idle", b"1", author=A)
        store.mkdir("dir", author=A)
        store.clock = lambda: now + 10 * HOUR
        store.mark_used(["read", "dir", "missing"])
        store.write("written", b"2", author=A)
        assert [e.path for e in store.unused(now + 5 * HOUR)] == ["idle"]
        assert [e.path for e in store.unused(now + 11 * HOUR)] == ["idle", "read", "written"]
        seq = store.last_seq()
        store.mark_used(["idle"])
        assert store.last_seq() == seq  # housekeeping, not a change of the tree
        assert [e.path for e in store.unused(now + 5 * HOUR)] == []
