"""The contract for doors' notes (WebDAV's locks and dead properties): kept beside the
tree, seen by every opening of the store, never a change of the tree."""

from __future__ import annotations

from memfs.store import open_store
from memfs.store.base import Store

SPACE = "test"


class NotesContract:
    def test_a_note_is_kept_replaced_and_dropped(self, store: Store) -> None:
        assert store.note(SPACE, "/a") is None
        store.set_note(SPACE, "/a", "one")
        store.set_note(SPACE, "/a", "two")
        store.set_note("other", "/a", "elsewhere")
        assert store.note(SPACE, "/a") == "two"
        assert store.note("other", "/a") == "elsewhere"
        assert store.drop_notes(SPACE, "/a") == 1
        assert store.drop_notes(SPACE, "/a") == 0
        assert store.note(SPACE, "/a") is None
        assert store.note("other", "/a") == "elsewhere"

    def test_notes_by_prefix_and_dropped_below_a_key(self, store: Store) -> None:
        for key in ("/d/", "/d/x", "/d/y/z", "/dx", "/e"):
            store.set_note(SPACE, key, key.upper())
        assert store.notes(SPACE, "/d/") == {"/d/": "/D/", "/d/x": "/D/X", "/d/y/z": "/D/Y/Z"}
        assert set(store.notes(SPACE)) == {"/d/", "/d/x", "/d/y/z", "/dx", "/e"}
        assert store.drop_notes(SPACE, "/d/", below=True) == 3
        assert set(store.notes(SPACE)) == {"/dx", "/e"}

    def test_an_expired_note_is_gone(self, store: Store) -> None:
        now = store.clock()
        store.set_note(SPACE, "old", "x", expires_ns=now - 1)
        store.set_note(SPACE, "new", "y", expires_ns=now + 3_600 * 10**9)
        assert store.note(SPACE, "old") is None
        assert store.notes(SPACE) == {"new": "y"}

    def test_notes_are_no_change_of_the_tree(self, store: Store) -> None:
        seq = store.last_seq()
        store.set_note(SPACE, "k", "v")
        store.drop_notes(SPACE, "k")
        assert store.last_seq() == seq
        assert store.operations(limit=None) == []

    def test_every_opening_of_the_store_sees_them(self, store: Store) -> None:
        store.set_note(SPACE, "lock", "held")
        with open_store(store.url) as again:
            assert again.note(SPACE, "lock") == "held"
            again.drop_notes(SPACE, "lock")
        assert store.note(SPACE, "lock") is None
