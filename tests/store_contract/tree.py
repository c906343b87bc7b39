"""The contract for the tree: writing, reading, parents, expected_rev, rename, delete."""

from __future__ import annotations

import hashlib
import threading

import pytest

from memfs.errors import (
    AlreadyExists,
    Conflict,
    DirectoryNotEmpty,
    InvalidMove,
    IsADirectory,
    NotADirectory,
    NotFound,
    PathTooLong,
)
from memfs.store.base import DEFAULT_DIR_MODE, DEFAULT_FILE_MODE, Store, WriteItem
from tests.store_contract.common import A, tree


class TreeContract:
    # --- a new store -----------------------------------------------------------------
    def test_new_store_has_only_the_root(self, store: Store) -> None:
        root = store.stat("")
        assert root.kind == "dir" and root.path == ""
        assert store.listdir("") == []
        assert list(store.walk()) == []
        assert store.last_seq() == 0 and store.changes() == []
        usage = store.usage()
        assert (usage.files, usage.dirs, usage.bytes) == (0, 0, 0)

    # --- writing and reading -----------------------------------------------------------
    def test_write_then_read_round_trips(self, store: Store) -> None:
        data = bytes(range(256)) * 3
        entry = store.write("f.bin", data, author=A)
        assert (entry.path, entry.kind, entry.size, entry.mode) == (
            "f.bin",
            "file",
            len(data),
            DEFAULT_FILE_MODE,
        )
        content, again = store.read("f.bin")
        assert content == data and again == store.stat("f.bin") and again.rev == entry.rev

    def test_write_records_a_revision_with_author_size_and_sha256(self, store: Store) -> None:
        entry = store.write("notes.md", b"hello", author="alice")
        [revision] = store.history("notes.md")
        assert revision.rev == entry.rev and revision.author == "alice"
        assert revision.size == 5 and revision.sha256 == hashlib.sha256(b"hello").hexdigest()

    def test_revisions_are_store_wide_monotonic(self, store: Store) -> None:
        revs = []
        for i in range(6):
            revs.append(store.write(f"f{i % 3}", b"x" * i, author=A).rev)
            revs.append(store.mkdir(f"d{i}", author=A).rev)
        assert revs == sorted(revs) and len(set(revs)) == len(revs)

    def test_mode_applies_when_the_file_is_created(self, store: Store) -> None:
        assert store.write("x", b"", author=A, mode=0o644).mode == 0o644
        assert store.write("x", b"1", author=A, mode=0o600).mode == 0o644

    def test_write_with_an_mtime_keeps_it_in_one_change(self, store: Store) -> None:
        seq = store.last_seq()
        made = store.write("m.md", b"x", author=A, mtime_ns=123_000_000_000)
        assert made.mtime_ns == store.stat("m.md").mtime_ns == 123_000_000_000
        assert [c.kind for c in store.changes(seq)] == ["create"]
        again = store.write("m.md", b"y", author=A, mtime_ns=456_000_000_000)
        assert again.mtime_ns == store.stat("m.md").mtime_ns == 456_000_000_000
        assert store.write("m.md", b"z", author=A).mtime_ns != 456_000_000_000

    def test_write_many_writes_each_as_write_would(self, store: Store) -> None:
        store.mkdir("d", author=A)
        store.write("d/old", b"before", author=A)
        seq = store.last_seq()
        made = store.write_many(
            [
                WriteItem("d/a", b"aa", 0o644, 7_000_000_000),
                WriteItem("d/b", b"bbb"),
                WriteItem("d/old", b"after", 0o600, 9_000_000_000),
            ],
            author="bulk",
        )
        assert [(e.path, e.size) for e in made] == [("d/a", 2), ("d/b", 3), ("d/old", 5)]
        assert made == [store.stat(p) for p in ("d/a", "d/b", "d/old")]
        assert store.read("d/a")[0] == b"aa" and store.read("d/old")[0] == b"after"
        assert (made[0].mode, made[0].mtime_ns, made[1].mode) == (0o644, 7_000_000_000, 0o600)
        changes = store.changes(seq)
        assert [(c.kind, c.path, c.author) for c in changes] == [
            ("create", "d/a", "bulk"),
            ("create", "d/b", "bulk"),
            ("modify", "d/old", "bulk"),
        ]
        assert store.stat("d").mtime_ns == changes[0].time_ns  # the new names moved it
        assert store.usage().files == 3 and store.write_many([], author=A) == []
        # Left to the search index's next build, maybe: a search finds them all the same.
        assert [h.path for h in store.search("bbb")] == ["d/b"]
        assert [h.path for h in store.search("after")] == ["d/old"]
        assert store.search_index_pending() == 0

    def test_write_many_is_all_or_nothing(self, store: Store) -> None:
        store.mkdir("d", author=A)
        before, seq = tree(store), store.last_seq()
        with pytest.raises(NotFound):  # no parent for the second: none is written
            store.write_many(
                [WriteItem("d/a", b"1"), WriteItem("nope/b", b"2"), WriteItem("d/c", b"3")],
                author=A,
            )
        with pytest.raises(IsADirectory):
            store.write_many([WriteItem("d/a", b"1"), WriteItem("d", b"2")], author=A)
        assert tree(store) == before and store.last_seq() == seq
        with store.batch():  # inside a batch, a refused write_many leaves the batch going
            store.write("d/kept", b"k", author=A)
            with pytest.raises(NotFound):
                store.write_many([WriteItem("d/a", b"1"), WriteItem("x/y", b"2")], author=A)
        assert store.read("d/kept")[0] == b"k"
        with pytest.raises(NotFound):
            store.stat("d/a")

    def test_write_onto_a_directory_is_refused(self, store: Store) -> None:
        store.mkdir("d", author=A)
        with pytest.raises(IsADirectory):
            store.write("d", b"x", author=A)

    def test_read_of_a_directory_or_missing_path_is_refused(self, store: Store) -> None:
        store.mkdir("d", author=A)
        with pytest.raises(IsADirectory):
            store.read("d")
        with pytest.raises(NotFound):
            store.read("nope")
        with pytest.raises(NotFound):
            store.stat("nope")

    # --- expected_rev: no lost updates -----------------------------------------------------
    def test_expected_rev_zero_means_must_not_exist(self, store: Store) -> None:
        store.write("f", b"one", author=A, expected_rev=0)
        seq = store.last_seq()
        with pytest.raises(AlreadyExists):
            store.write("f", b"two", author=A, expected_rev=0)
        assert store.read("f")[0] == b"one" and store.last_seq() == seq
        store.mkdir("d", author=A)
        store.symlink("l", "f", author=A)
        for taken in ("d", "l"):
            with pytest.raises(AlreadyExists):
                store.write(taken, b"x", author=A, expected_rev=0)

    def test_stale_expected_rev_conflicts_and_changes_nothing(self, store: Store) -> None:
        first = store.write("f", b"one", author=A)
        second = store.write("f", b"two", author=A, expected_rev=first.rev)
        seq = store.last_seq()
        with pytest.raises(Conflict):
            store.write("f", b"lost", author=A, expected_rev=first.rev)
        content, entry = store.read("f")
        assert content == b"two" and entry.rev == second.rev and store.last_seq() == seq
        assert [r.rev for r in store.history("f")] == [second.rev, first.rev]

    def test_expected_rev_of_a_missing_file_conflicts(self, store: Store) -> None:
        with pytest.raises(Conflict):
            store.write("f", b"x", author=A, expected_rev=7)
        with pytest.raises(NotFound):
            store.stat("f")

    def test_concurrent_read_modify_write_loses_no_update(self, store: Store) -> None:
        store.write("counter", b"0", author=A)
        errors: list[BaseException] = []

        def bump(times: int) -> None:
            try:
                for _ in range(times):
                    while True:
                        content, entry = store.read("counter")
                        try:
                            store.write(
                                "counter",
                                b"%d" % (int(content) + 1),
                                author=A,
                                expected_rev=entry.rev,
                            )
                            break
                        except Conflict:
                            continue
            except BaseException as e:  # reported below: a thread cannot fail the test
                errors.append(e)

        threads = [threading.Thread(target=bump, args=(25,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors and not any(t.is_alive() for t in threads)
        assert store.read("counter")[0] == b"100"
        # Whatever a server backend guessed for them, the feed numbers stay in order.
        seqs = [c.seq for c in store.changes(0)]
        assert seqs == list(range(seqs[0], seqs[0] + 101))

    def test_readers_never_see_a_mutation_half_done(self, store: Store) -> None:
        # "y" is replaced by rename-with-overwrite again and again: a reader must always
        # find it, whole, and never see the moment between removing it and moving "x".
        store.write("d/y", b"y" * 1000, author=A, parents=True)
        stop = threading.Event()
        problems: list[str] = []
        reads = [0]

        def reader() -> None:
            try:
                while not stop.is_set():
                    reads[0] += 1
                    names = {e.name for e in store.listdir("d")}
                    if "y" not in names:
                        problems.append(f"listdir saw {sorted(names)}")
                    data, entry = store.read("d/y")
                    if len(data) != entry.size or len(set(data)) != 1:
                        problems.append(f"torn read of {entry.size} bytes")
            except Exception as e:  # reported below: a thread cannot fail the test
                problems.append(repr(e))

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            for i in range(150):
                store.write("d/x", bytes([65 + i % 26]) * (500 + i), author=A)
                store.rename("d/x", "d/y", author=A, overwrite=True)
        finally:
            stop.set()
            thread.join(timeout=60)
        assert not problems, problems[:3]
        assert reads[0] > 0
        assert store.read("d/y")[0] == bytes([65 + 149 % 26]) * 649

    # --- parents -------------------------------------------------------------------------
    def test_missing_parent_is_refused_unless_parents(self, store: Store) -> None:
        with pytest.raises(NotFound):
            store.write("a/b/c.md", b"x", author=A)
        with pytest.raises(NotFound):
            store.mkdir("a/b", author=A)
        assert store.listdir("") == []
        store.write("a/b/c.md", b"x", author=A, parents=True)
        assert store.stat("a").is_dir and store.stat("a/b").is_dir
        assert store.stat("a").mode == DEFAULT_DIR_MODE
        store.mkdir("x/y/z", author=A, parents=True)
        assert store.stat("x/y").is_dir

    def test_a_file_is_not_a_parent(self, store: Store) -> None:
        store.write("f", b"x", author=A)
        with pytest.raises(NotADirectory):
            store.write("f/g", b"x", author=A, parents=True)
        with pytest.raises(NotADirectory):
            store.listdir("f")

    def test_mkdir_existing(self, store: Store) -> None:
        store.mkdir("d", author=A, mode=0o750)
        with pytest.raises(AlreadyExists):
            store.mkdir("d", author=A)
        assert store.mkdir("d", author=A, exist_ok=True).mode == 0o750
        store.write("f", b"", author=A)
        with pytest.raises(AlreadyExists):
            store.mkdir("f", author=A, exist_ok=True)

    def test_listdir_is_sorted_and_walk_puts_parents_first(self, store: Store) -> None:
        for name in ["b", "a b", "a", "A", "é", "a.x"]:
            store.mkdir(name, author=A)
        store.write("a/z", b"", author=A)
        store.write("a/y/q", b"", author=A, parents=True)
        assert [e.name for e in store.listdir("")] == sorted(["b", "a b", "a", "A", "é", "a.x"])
        seen: set[str] = {""}
        for entry in store.walk():
            assert entry.path.rpartition("/")[0] in seen
            seen.add(entry.path)
        assert seen == {"", "b", "a b", "a", "A", "é", "a.x", "a/z", "a/y", "a/y/q"}
        assert {e.path for e in store.walk("a")} == {"a/z", "a/y", "a/y/q"}

    # --- rename ------------------------------------------------------------------------------
    def test_rename_a_file(self, store: Store) -> None:
        entry = store.write("old", b"data", author=A)
        store.rename("old", "new", author=A)
        # The arrival at the new name is a new revision of the same content.
        moved = store.stat("new")
        assert store.read("new")[0] == b"data" and moved.rev > entry.rev
        with pytest.raises(NotFound):
            store.stat("old")

    def test_rename_never_overwrites_silently(self, store: Store) -> None:
        store.write("a", b"A", author=A)
        store.write("b", b"B", author=A)
        seq = store.last_seq()
        with pytest.raises(AlreadyExists):
            store.rename("a", "b", author=A)
        assert tree(store) == {"a": ("file", b"A"), "b": ("file", b"B")}
        assert store.last_seq() == seq
        store.rename("a", "b", author=A, overwrite=True)
        assert tree(store) == {"b": ("file", b"A")}

    def test_overwrite_rules_for_directories(self, store: Store) -> None:
        store.write("d1/f", b"1", author=A, parents=True)
        store.write("d2/g", b"2", author=A, parents=True)
        store.mkdir("empty", author=A)
        store.write("file", b"f", author=A)
        before = tree(store)
        with pytest.raises(DirectoryNotEmpty):
            store.rename("d1", "d2", author=A, overwrite=True)
        with pytest.raises(IsADirectory):
            store.rename("file", "empty", author=A, overwrite=True)
        with pytest.raises(NotADirectory):
            store.rename("d1", "file", author=A, overwrite=True)
        assert tree(store) == before
        store.rename("d1", "empty", author=A, overwrite=True)
        assert store.read("empty/f")[0] == b"1" and "d1" not in tree(store)

    def test_rename_moves_a_whole_subtree_and_only_it(self, store: Store) -> None:
        # Siblings whose names extend "a" must not move with it (prefix and LIKE traps).
        store.write("a/f", b"f", author=A, parents=True)
        store.write("a/sub/g", b"g", author=A, parents=True)
        for sibling in ["ab", "a b", "a_", "a%", "a.x", "a-"]:
            store.write(f"{sibling}/keep", sibling.encode(), author=A, parents=True)
        before = store.stat("a/sub/g")
        store.mkdir("moved", author=A)
        store.rename("a", "moved/here", author=A)
        snapshot = tree(store)
        assert snapshot["moved/here/f"] == ("file", b"f")
        assert snapshot["moved/here/sub/g"] == ("file", b"g")
        assert not any(p == "a" or p.startswith("a/") for p in snapshot)
        for sibling in ["ab", "a b", "a_", "a%", "a.x", "a-"]:
            assert snapshot[f"{sibling}/keep"] == ("file", sibling.encode())
        assert [e.name for e in store.listdir("moved/here")] == ["f", "sub"]
        [arrival] = store.history("moved/here/sub/g")
        assert (arrival.size, arrival.rev > before.rev) == (1, True)

    def test_rename_into_itself_or_of_the_root_is_refused(self, store: Store) -> None:
        store.mkdir("d/e", author=A, parents=True)
        before = tree(store)
        with pytest.raises(InvalidMove):
            store.rename("d", "d/e/d", author=A)
        with pytest.raises(InvalidMove):
            store.rename("", "x", author=A)
        with pytest.raises(InvalidMove):
            store.rename("d", "", author=A, overwrite=True)
        assert tree(store) == before

    def test_rename_needs_source_and_destination_parent(self, store: Store) -> None:
        store.write("f", b"", author=A)
        with pytest.raises(NotFound):
            store.rename("missing", "g", author=A)
        with pytest.raises(NotFound):
            store.rename("f", "no/such/dir", author=A)
        assert store.read("f")[0] == b""

    # --- delete ------------------------------------------------------------------------------
    def test_delete_file_and_empty_dir(self, store: Store) -> None:
        store.write("f", b"x", author=A)
        store.mkdir("d", author=A)
        store.delete("f", author=A)
        store.delete("d", author=A)
        assert store.listdir("") == []
        with pytest.raises(NotFound):
            store.delete("f", author=A)

    def test_recursive_delete_removes_the_subtree_and_only_it(self, store: Store) -> None:
        store.write("d/a/b/c", b"c", author=A, parents=True)
        store.write("d/x", b"x", author=A)
        store.write("d-keep/y", b"y", author=A, parents=True)
        store.write("dd", b"z", author=A)
        with pytest.raises(DirectoryNotEmpty):
            store.delete("d", author=A)
        assert store.read("d/a/b/c")[0] == b"c"
        store.delete("d", author=A, recursive=True)
        assert tree(store) == {
            "d-keep": ("dir", None),
            "d-keep/y": ("file", b"y"),
            "dd": ("file", b"z"),
        }

    def test_the_root_cannot_be_deleted(self, store: Store) -> None:
        store.write("f", b"x", author=A)
        with pytest.raises(InvalidMove):
            store.delete("", author=A, recursive=True)
        assert store.read("f")[0] == b"x"

    # --- delete with expected_rev: an edit is never lost to a stale delete ---------------
    def test_delete_with_a_stale_expected_rev_conflicts_and_changes_nothing(
        self, store: Store
    ) -> None:
        first = store.write("f", b"one", author=A)
        second = store.write("f", b"two", author="agent")
        seq, before = store.last_seq(), store.history("f")
        with pytest.raises(Conflict):
            store.delete("f", author=A, expected_rev=first.rev)
        content, entry = store.read("f")
        assert content == b"two" and entry == store.stat("f") and entry.rev == second.rev
        assert store.history("f") == before and store.last_seq() == seq
        assert store.read_revision("f", first.rev) == b"one"

    def test_delete_with_the_current_rev_deletes(self, store: Store) -> None:
        store.write("f", b"one", author=A)
        current = store.write("f", b"two", author=A)
        store.delete("f", author=A, expected_rev=current.rev)
        with pytest.raises(NotFound):
            store.stat("f")
        assert [c.kind for c in store.changes(since=store.last_seq() - 1)] == ["delete"]
        assert [r.rev for r in store.history("f")] == [current.rev]  # the tombstone

    def test_delete_with_expected_rev_of_a_missing_path_is_not_found(self, store: Store) -> None:
        gone = store.write("f", b"x", author=A)
        store.delete("f", author=A)
        seq = store.last_seq()
        for path in ("f", "never"):
            with pytest.raises(NotFound):
                store.delete(path, author=A, expected_rev=gone.rev)
        assert store.last_seq() == seq

    def test_delete_with_expected_rev_of_a_replaced_entry_conflicts(self, store: Store) -> None:
        # For directories and symlinks the rev names the entry, so one that replaced
        # what the caller saw (of any kind) is not deleted.
        seen = {
            "f": store.write("f", b"file", author=A).rev,
            "d": store.mkdir("d", author=A).rev,
            "l": store.symlink("l", "f", author=A).rev,
        }
        for path in seen:
            store.delete(path, author=A)
        store.mkdir("f", author=A)
        store.write("d", b"now a file", author=A)
        store.mkdir("l", author=A)
        seq, before = store.last_seq(), tree(store)
        for path, rev in seen.items():
            with pytest.raises(Conflict):
                store.delete(path, author=A, recursive=True, expected_rev=rev)
        assert tree(store) == before and store.last_seq() == seq

    def test_delete_with_expected_rev_of_a_directory_or_symlink(self, store: Store) -> None:
        empty = store.mkdir("empty", author=A)
        full = store.mkdir("full", author=A)
        store.write("full/a", b"a", author=A)
        link = store.symlink("l", "full", author=A)
        with pytest.raises(DirectoryNotEmpty):
            store.delete("full", author=A, expected_rev=full.rev)
        store.delete("empty", author=A, expected_rev=empty.rev)
        store.delete("l", author=A, expected_rev=link.rev)
        store.delete("full", author=A, recursive=True, expected_rev=full.rev)
        assert store.listdir("") == []

    def test_delete_expected_rev_must_be_a_revision(self, store: Store) -> None:
        store.write("f", b"x", author=A)
        for bad in (0, -1):
            with pytest.raises(ValueError):
                store.delete("f", author=A, expected_rev=bad)
        assert store.read("f")[0] == b"x"

    # --- how far a subtree reaches ---------------------------------------------------
    def test_subtree_extent_is_the_deepest_and_longest_descendant(self, store: Store) -> None:
        assert store.subtree_extent("") == (0, 0)
        store.write("a/bb/ccc.txt", b"x", author=A, parents=True)
        store.write("a/é.txt", b"x", author=A)
        store.mkdir("z", author=A)
        # Below "a": "/bb/ccc.txt" adds 2 segments and 11 bytes; "/é.txt" adds 7 bytes.
        assert store.subtree_extent("a") == (2, 11)
        assert store.subtree_extent("a/bb") == (1, 8)
        assert store.subtree_extent("z") == (0, 0)
        assert store.subtree_extent("") == (3, 13)
        # "ab" sorts between "a/" and "a0"; it is not below "a".
        store.write("ab/deep/deeper/deepest.txt", b"x", author=A, parents=True)
        assert store.subtree_extent("a") == (2, 11)

    def test_rename_that_carries_a_descendant_past_the_gate_is_refused_whole(
        self, store: Store
    ) -> None:
        deep = "/".join(f"l{i}" for i in range(1, 19))  # 18 levels
        store.mkdir(deep, author=A, parents=True)
        store.write("x/y/f", b"hello", author=A, parents=True)
        before = store.last_seq()
        # x/y/f would become l1/.../l18/x/y/f: 21 levels, one past the gate's 20.
        with pytest.raises(PathTooLong):
            store.rename("x", deep + "/x", author=A)
        assert store.read("x/y/f")[0] == b"hello"
        assert store.last_seq() == before
        # Length: a long name below a directory moved under a long prefix.
        store.write("s/" + "n" * 250, b"x", author=A, parents=True)
        long_dir = "/".join(["d" * 250] * 3 + ["e" * 200])
        store.mkdir(long_dir, author=A, parents=True)
        with pytest.raises(PathTooLong):
            store.rename("s", long_dir + "/s", author=A)
        # One level less fits.
        store.rename("x/y", deep + "/y", author=A)
        assert store.read(deep + "/y/f")[0] == b"hello"

    # --- what a mutation says it left ---------------------------------------------------
    def test_a_write_that_replaces_the_file_moves_its_directorys_times(self, store: Store) -> None:
        # A save whose temporary file never reached the store is written as one write
        # that stands for the rename (memfs.mount.namespace): the directory's times move
        # as the rename's would, a plain write leaves them.
        store.write("d/a.md", b"one\n", author=A, parents=True)
        made = store.stat("d")
        store.write("d/a.md", b"two\n", author=A)
        assert store.stat("d") == made
        store.write("d/a.md", b"three\n", author=A, replace=True)
        moved = store.stat("d")
        assert moved.mtime_ns > made.mtime_ns
        assert moved.ctime_ns == moved.mtime_ns
        assert dict(store.touched()) == {"d": moved.mtime_ns}
        assert store.read("d/a.md")[0] == b"three\n"
        assert [c.kind for c in store.changes(0)][-1] == "modify"

    def test_settled_entries_are_what_a_stat_reads_after(self, store: Store) -> None:
        # A mount caches these instead of reading them again: each must be exactly
        # the entry the store holds once the mutation has committed.
        def check(expected: set[str]) -> None:
            settled = dict(store.settled())
            assert set(settled) == expected
            for path, entry in settled.items():
                assert entry == store.stat(path), path

        store.write("d/a.md", b"one\n", author=A, parents=True)
        check({"d", "d/a.md"})  # the parent made on the way is new, and known whole
        store.write("d/a.md", b"two\n", author=A, mode=0o600)
        check({"d/a.md"})
        store.mkdir("e", author=A, mode=0o750)
        check({"e"})
        store.set_attrs("d/a.md", author=A, mode=0o640, uid=4242, gid=4343)
        check({"d/a.md"})
        store.set_attrs("e", author=A, mtime_ns=1_000_000_000)
        check({"e"})
        store.write("d/.tmp", b"three\n", author=A)
        store.rename("d/.tmp", "d/a.md", author=A, overwrite=True)  # a save
        check({"d/a.md"})
        store.rename("d/a.md", "e/b.md", author=A)
        check({"e/b.md"})
        store.truncate("e/b.md", 2, author=A)
        check({"e/b.md"})
        store.rename("e", "f", author=A)  # a directory's move: its entries are many
        check(set())
        store.delete("f/b.md", author=A)
        check(set())
        with pytest.raises(NotFound):
            store.write("nowhere/x", b"", author=A)
        check(set())  # refused: nothing left
        with store.batch():
            store.write("g.md", b"g", author=A)
            store.rename("g.md", "h.md", author=A)
        check(set())  # a batch's mutations may change what an earlier one left
