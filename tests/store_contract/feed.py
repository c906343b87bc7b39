"""The contract for the change feed, history, symlinks, attributes, limits and closing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memfs.errors import (
    AlreadyExists,
    IsADirectory,
    NotFound,
    PathError,
    StoreError,
    StoreUnavailable,
    TooLarge,
)
from memfs.store.base import Store
from tests.store_contract.common import A, MakeStore, tree


class FeedContract:
    # --- change feed ----------------------------------------------------------------------------
    def test_change_feed_records_every_mutation_in_order(self, store: Store) -> None:
        store.mkdir("d", author="u1")
        e = store.write("d/f", b"1", author="u2")
        store.write("d/f", b"2", author="u3")
        store.set_attrs("d/f", author=A, mode=0o644)
        store.symlink("d/l", "f", author=A)
        store.rename("d", "e", author=A)
        store.delete("e", author=A, recursive=True)
        feed = store.changes()
        assert [(c.kind, c.path, c.old_path) for c in feed] == [
            ("mkdir", "d", None),
            ("create", "d/f", None),
            ("modify", "d/f", None),
            ("attr", "d/f", None),
            ("symlink", "d/l", None),
            ("rename", "e", "d"),
            ("delete", "e/l", None),
            ("delete", "e/f", None),
            ("rmdir", "e", None),
        ]
        seqs = [c.seq for c in feed]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert store.last_seq() == seqs[-1]
        assert feed[1].rev == e.rev and feed[1].author == "u2"
        assert store.changes(since=seqs[4]) == feed[5:]
        assert store.changes(since=seqs[1], limit=2) == feed[2:4]
        assert store.changes(since=seqs[-1]) == []

    def test_refused_mutations_append_nothing(self, store: Store) -> None:
        store.write("f", b"x", author=A)
        store.mkdir("d/e", author=A, parents=True)
        seq = store.last_seq()
        attempts: list[Callable[[], object]] = [
            lambda: store.write("f", b"y", author=A, expected_rev=0),
            lambda: store.write("d", b"y", author=A),
            lambda: store.write("no/f", b"y", author=A),
            lambda: store.mkdir("d", author=A),
            lambda: store.delete("d", author=A),
            lambda: store.rename("f", "d", author=A),
            lambda: store.rename("d", "d/e/x", author=A),
            lambda: store.symlink("f", "t", author=A),
        ]
        for attempt in attempts:
            with pytest.raises(StoreError):
                attempt()
        assert store.last_seq() == seq

    # --- history and retention -------------------------------------------------------------------
    def test_history_is_newest_first_and_readable(self, store: Store) -> None:
        revs = [store.write("f", b"v%d" % i, author=A).rev for i in range(4)]
        history = store.history("f")
        assert [r.rev for r in history] == revs[::-1]
        assert [r.rev for r in store.history("f", limit=2)] == revs[:1:-1]
        for i, rev in enumerate(revs):
            assert store.read_revision("f", rev) == b"v%d" % i
        with pytest.raises(NotFound):
            store.read_revision("f", revs[-1] + 1000)
        other = store.write("g", b"other", author=A)
        with pytest.raises(NotFound):
            store.read_revision("f", other.rev)  # a revision of another file
        with pytest.raises(NotFound):
            store.read_revision("g", revs[0])

    def test_retention_keeps_current_plus_history_previous(self, make_store: MakeStore) -> None:
        store = make_store(history=2)
        revs = [store.write("f", b"v%d" % i, author=A).rev for i in range(6)]
        assert [r.rev for r in store.history("f")] == revs[:2:-1]
        assert store.read_revision("f", revs[3]) == b"v3"
        with pytest.raises(NotFound):
            store.read_revision("f", revs[2])
        assert store.read("f")[0] == b"v5"

    def test_history_zero_keeps_only_the_current_content(self, make_store: MakeStore) -> None:
        store = make_store(history=0)
        for i in range(3):
            last = store.write("f", b"v%d" % i, author=A)
        assert [r.rev for r in store.history("f")] == [last.rev]
        assert store.read("f")[0] == b"v2"

    def test_a_recreated_file_continues_the_paths_history(self, store: Store) -> None:
        store.write("f", b"older", author=A)
        old = store.write("f", b"old", author=A)
        store.delete("f", author=A)
        new = store.write("f", b"new", author=A)
        # The delete trimmed the path to its last revision; the new file continues it.
        assert [r.rev for r in store.history("f")] == [new.rev, old.rev]

    # --- symlinks, attributes, truncate ---------------------------------------------------------
    def test_symlinks_are_stored_not_resolved(self, store: Store) -> None:
        store.write("real", b"secret", author=A)
        entry = store.symlink("link", "../../etc/passwd", author=A)
        assert entry.kind == "symlink" and entry.target == "../../etc/passwd"
        assert store.stat("link").target == "../../etc/passwd"
        store.symlink("rel", "real", author=A)
        with pytest.raises(NotFound):
            store.read("rel")
        with pytest.raises(AlreadyExists):
            store.write("rel", b"through", author=A)
        with pytest.raises(AlreadyExists):
            store.symlink("real", "x", author=A)
        for bad_target in ("", "nul\x00inside"):
            with pytest.raises(StoreError):
                store.symlink("bad", bad_target, author=A)
        with pytest.raises(NotFound):
            store.stat("bad")
        assert store.read("real")[0] == b"secret"
        store.rename("rel", "rel2", author=A)
        store.delete("rel2", author=A)
        assert [e.name for e in store.listdir("")] == ["link", "real"]

    def test_set_attrs_changes_metadata_but_not_content(self, store: Store) -> None:
        entry = store.write("f", b"x", author=A)
        changed = store.set_attrs("f", author=A, mode=0o640, uid=1234, gid=99, mtime_ns=10**18)
        assert (changed.mode, changed.uid, changed.gid, changed.mtime_ns) == (
            0o640,
            1234,
            99,
            10**18,
        )
        assert changed.rev == entry.rev and store.read("f")[0] == b"x"
        assert len(store.history("f")) == 1
        partial = store.set_attrs("f", author=A, mode=0o600)
        assert (partial.mode, partial.uid, partial.mtime_ns) == (0o600, 1234, 10**18)
        store.mkdir("d", author=A)
        assert store.set_attrs("d", author=A, mode=0o755).mode == 0o755
        with pytest.raises(NotFound):
            store.set_attrs("missing", author=A, mode=0o600)

    def test_truncate_cuts_or_zero_extends_as_a_new_revision(self, store: Store) -> None:
        first = store.write("f", b"hello world", author=A)
        cut = store.truncate("f", 5, author=A)
        assert store.read("f")[0] == b"hello" and cut.size == 5 and cut.rev > first.rev
        store.truncate("f", 8, author=A)
        assert store.read("f")[0] == b"hello\0\0\0"
        assert store.read_revision("f", first.rev) == b"hello world"
        store.mkdir("d", author=A)
        with pytest.raises(IsADirectory):
            store.truncate("d", 0, author=A)
        with pytest.raises(NotFound):
            store.truncate("missing", 0, author=A)

    # --- usage, size cap, names, closing ---------------------------------------------------------
    def test_usage_counts_files_dirs_and_bytes(self, store: Store) -> None:
        store.write("a/b/f", b"12345", author=A, parents=True)
        store.write("a/g", b"123", author=A)
        store.symlink("a/l", "g", author=A)
        usage = store.usage()
        assert (usage.files, usage.dirs, usage.bytes) == (2, 2, 8)

    def test_files_over_the_size_cap_are_refused(self, make_store: MakeStore) -> None:
        store = make_store(max_file_bytes=10)
        store.write("ok", b"x" * 10, author=A)
        with pytest.raises(TooLarge):
            store.write("big", b"x" * 11, author=A)
        with pytest.raises(TooLarge):
            store.truncate("ok", 11, author=A)
        with pytest.raises(NotFound):
            store.stat("big")
        assert store.read("ok")[0] == b"x" * 10

    @pytest.mark.parametrize(
        "bad",
        [
            "a/..",
            "..",
            "x/./y",
            "bad\x00name",
            "tab\tname",
            ".memfs-state",
            "nul",
            "trail.",
            "%2e%2e",
            "a\\b",
            "e\u0301",
        ],
    )
    def test_names_the_gate_refuses_are_never_stored(self, store: Store, bad: str) -> None:
        store.mkdir("ok", author=A)
        store.write("ok/f", b"x", author=A)
        seq, before = store.last_seq(), tree(store)
        attempts: list[Callable[[], object]] = [
            lambda: store.write(bad, b"x", author=A, parents=True),
            lambda: store.write(f"ok/{bad}", b"x", author=A),
            lambda: store.mkdir(bad, author=A, parents=True),
            lambda: store.symlink(f"ok/{bad}", "f", author=A),
            lambda: store.rename("ok/f", f"ok/{bad}", author=A),
            lambda: store.rename("ok", bad, author=A),
        ]
        for attempt in attempts:
            with pytest.raises(PathError):
                attempt()
        assert tree(store) == before and store.last_seq() == seq

    def test_a_closed_store_is_unavailable(self, make_store: MakeStore) -> None:
        store = make_store()
        store.write("f", b"x", author=A)
        store.close()
        with pytest.raises(StoreUnavailable):
            store.stat("f")
        with pytest.raises(StoreUnavailable):
            store.write("g", b"y", author=A)
        with pytest.raises(StoreUnavailable):
            store.changes()
        store.close()  # closing twice is harmless
