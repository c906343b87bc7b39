"""The contract for per-path history (invariant 6): saves by rename keep a file's
history, arrivals, tombstones of deleted and moved-away paths, and their retention.

Time-based retention is tested by moving the store's ``clock`` forward, never by waiting.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from memfs.errors import IsADirectory, NotFound
from memfs.store.base import Store
from tests.store_contract.common import A, MakeStore

DAY = 86_400 * 10**9
HOUR = 3_600 * 10**9


def _revs(store: Store, path: str) -> list[int]:
    return [r.rev for r in store.history(path)]


def _advance(store: Store, ns: int) -> None:
    """Make the store's clock run ``ns`` ahead of real time from now on."""
    store.clock = lambda: time.time_ns() + ns


def _versions(store: Store, path: str, count: int) -> list[int]:
    return [store.write(path, b"%s v%d" % (path.encode(), i), author=A).rev for i in range(count)]


class HistoryContract:
    def test_a_save_by_rename_over_keeps_the_history_plus_one_arrival(self, store: Store) -> None:
        before = _versions(store, "f", 3)
        store.write(".f.tmp", b"saved", author="writer")
        seq = store.last_seq()
        store.rename(".f.tmp", "f", author="saver", overwrite=True)
        arrival = store.history("f")[0]
        assert _revs(store, "f") == [arrival.rev, *before[::-1]]
        assert arrival.rev > before[-1] and arrival.author == "saver"
        assert (arrival.path, arrival.size) == ("f", 5)
        assert arrival.sha256 == hashlib.sha256(b"saved").hexdigest()
        assert store.read_revision("f", arrival.rev) == b"saved"
        assert store.read_revision("f", before[0]) == b"f v0"
        # Entry.rev is the arrival: a conditional write right after the rename works.
        assert store.stat("f").rev == arrival.rev
        assert store.write("f", b"next", author=A, expected_rev=arrival.rev).rev > arrival.rev
        # The rename is one change record, with no separate delete of the old "f".
        changes = [(c.kind, c.path, c.old_path) for c in store.changes(seq)]
        assert changes[:1] == [("rename", "f", ".f.tmp")]

    def test_a_plain_rename_gives_the_destination_one_arrival(self, store: Store) -> None:
        old = _versions(store, "a", 3)
        store.rename("a", "b", author="mover")
        [arrival] = store.history("b")
        assert arrival.author == "mover" and store.read_revision("b", arrival.rev) == b"a v2"
        # The source's revisions stay at the source, as a tombstoned history.
        assert _revs(store, "a") == old[::-1]
        assert store.read_revision("a", old[0]) == b"a v0"
        with pytest.raises(NotFound):
            store.stat("a")
        with pytest.raises(NotFound):
            store.read_revision("b", old[-1])  # made at "a", not at "b"

    def test_a_moved_away_path_keeps_all_revisions_as_long_as_a_deleted_one_its_last(
        self, store: Store
    ) -> None:
        # So that history --follow crosses the rename for as long as history is kept.
        old = _versions(store, "a", 3)
        store.rename("a", "b", author=A)
        _advance(store, 2 * HOUR)
        store.write("other", b"x", author=A)  # a write may sweep due rows
        assert _revs(store, "a") == old[::-1]
        assert store.read_revision("a", old[0]) == b"a v0"
        _advance(store, 31 * DAY)
        store.write("other", b"y", author=A)
        with pytest.raises(NotFound):
            store.history("a")

    def test_a_directory_rename_gives_every_moved_file_an_arrival(self, store: Store) -> None:
        store.write("d/f", b"f", author=A, parents=True)
        g1 = store.write("d/sub/g", b"g1", author=A, parents=True).rev
        g2 = store.write("d/sub/g", b"g2", author=A).rev
        store.symlink("d/link", "f", author=A)
        store.rename("d", "e", author="mover")
        for path, content in (("e/f", b"f"), ("e/sub/g", b"g2")):
            [arrival] = store.history(path)
            assert arrival.author == "mover" and store.stat(path).rev == arrival.rev
            assert store.read_revision(path, arrival.rev) == content
        assert _revs(store, "d/sub/g") == [g2, g1]
        assert store.stat("e/link").target == "f"  # symlinks move without revisions

    def test_jetbrains_safe_write_keeps_the_history(self, store: Store) -> None:
        before = _versions(store, "f", 2)
        store.write("f___jb_tmp___", b"new", author=A)
        store.rename("f", "f___jb_old___", author="ide")
        store.rename("f___jb_tmp___", "f", author="ide")
        store.delete("f___jb_old___", author="ide")
        history = store.history("f")
        assert [r.rev for r in history[1:]] == before[::-1]
        assert history[0].author == "ide" and store.read("f")[0] == b"new"
        # The old name had one revision, its arrival; deleting it leaves that tombstone.
        [tombstone] = store.history("f___jb_old___")
        assert store.read_revision("f___jb_old___", tombstone.rev) == b"f v1"

    def test_emacs_backup_save_keeps_the_history(self, store: Store) -> None:
        before = _versions(store, "f", 2)
        store.rename("f", "f~", author="emacs")
        new = store.write("f", b"new", author="emacs")
        assert _revs(store, "f") == [new.rev, *before[::-1]]
        [backup] = store.history("f~")
        assert store.read_revision("f~", backup.rev) == b"f v1"

    def test_delete_leaves_one_tombstone_revision(self, store: Store) -> None:
        old = _versions(store, "f", 3)
        store.delete("f", author=A)
        [tombstone] = store.history("f")
        assert tombstone.rev == old[-1] and store.read_revision("f", old[-1]) == b"f v2"
        with pytest.raises(NotFound):
            store.read_revision("f", old[0])
        with pytest.raises(NotFound):
            store.read("f")
        store.write("g", b"g", author=A)
        assert _revs(store, "f") == [old[-1]]

    def test_a_recursive_delete_tombstones_every_file(self, store: Store) -> None:
        a = store.write("d/a", b"a", author=A, parents=True).rev
        b = store.write("d/e/b", b"b", author=A, parents=True).rev
        store.delete("d", author=A, recursive=True)
        assert (_revs(store, "d/a"), _revs(store, "d/e/b")) == ([a], [b])

    def test_tombstones_go_after_deleted_history_days(self, make_store: MakeStore) -> None:
        store = make_store(deleted_history_days=3)
        old = _versions(store, "f", 2)
        store.delete("f", author=A)
        _advance(store, 3 * DAY - HOUR)
        assert _revs(store, "f") == [old[-1]]
        store.write("g", b"g", author=A)
        assert store.read_revision("f", old[-1]) == b"f v1"
        _advance(store, 3 * DAY + HOUR)
        with pytest.raises(NotFound):
            store.history("f")
        with pytest.raises(NotFound):
            store.read_revision("f", old[-1])
        store.write("g", b"g2", author=A)
        # A file made there later starts afresh.
        new = store.write("f", b"again", author=A)
        assert _revs(store, "f") == [new.rev]

    def test_the_default_keeps_deleted_history_for_30_days(self, store: Store) -> None:
        last = _versions(store, "f", 2)[-1]
        store.delete("f", author=A)
        _advance(store, 29 * DAY)
        assert _revs(store, "f") == [last]
        _advance(store, 31 * DAY)
        with pytest.raises(NotFound):
            store.history("f")

    def test_a_moved_away_path_outlives_zero_deleted_history_days_by_its_grace(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(deleted_history_days=0)
        before = _versions(store, "f", 2)
        store.rename("f", "f~", author=A)
        new = store.write("f", b"new", author=A)
        assert _revs(store, "f") == [new.rev, *before[::-1]]
        store.delete("f~", author=A)
        _advance(store, 1)
        with pytest.raises(NotFound):
            store.history("f~")

    def test_live_paths_keep_current_plus_history_previous_arrivals_included(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(history=2)
        revs = _versions(store, "f", 3)
        for i in range(2):
            store.write("t", b"save %d" % i, author=A)
            store.rename("t", "f", author=A, overwrite=True)
        history = store.history("f")
        assert len(history) == 3 and history[2].rev == revs[2]
        assert store.read("f")[0] == b"save 1"
        with pytest.raises(NotFound):
            store.read_revision("f", revs[1])

    def test_history_of_what_is_not_a_file(self, store: Store) -> None:
        with pytest.raises(NotFound):
            store.history("never")
        store.mkdir("d", author=A)
        with pytest.raises(IsADirectory):
            store.history("d")
        store.write("f", b"x", author=A)
        store.delete("f", author=A)
        store.symlink("f", "target", author=A)
        with pytest.raises(NotFound):
            store.history("f")  # a symlink has no history, even over a tombstone

    def test_a_symlink_renamed_over_a_file_tombstones_it(self, store: Store) -> None:
        last = _versions(store, "f", 2)[-1]
        store.symlink("l", "x", author=A)
        store.rename("l", "f", author=A, overwrite=True)
        store.rename("f", "l2", author=A)
        assert _revs(store, "f") == [last]
