"""The contract for invariants 9 to 11 and the feed a mutation appended: symlink targets
are kept byte for byte, damaged bytes are never returned as content, a store opened
read-only refuses every mutation, and ``appended`` names a mutation's own records.

Damage is made for real: the backend's test module supplies ``damage(store, sha256,
data)``, which overwrites the stored bytes of that content with SQL behind the store's
back, leaving every recorded hash as it was (as a failing disk or a torn copy would).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable

import pytest

from memfs.errors import Damaged, NotFound, ReadOnlyStore, StoreError
from memfs.store import open_store
from memfs.store.base import Store
from tests.store_contract.common import A, MakeStore, tree

Damage = Callable[[Store, str, bytes], None]
DAY = 86_400 * 10**9


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class IntegrityContract:
    # --- symlink targets are data, byte for byte ------------------------------------
    @pytest.mark.parametrize(
        "raw",
        [
            b"caf\xe9/\xff\xfe.lock",  # not UTF-8: os.fsdecode gives surrogates
            "\uffffb25lbmU=".encode(),  # looks like the store's own packing of a target
            "plain/π.md".encode(),
        ],
    )
    def test_a_symlink_target_round_trips_exactly(self, store: Store, raw: bytes) -> None:
        target = os.fsdecode(raw)
        made = store.symlink("link", target, author=A)
        assert made.target == target and made.size == len(raw)
        assert store.stat("link").target == target
        assert [e.target for e in store.listdir("")] == [target]
        store.mkdir("d", author=A)
        store.rename("link", "d/moved", author=A)
        [moved] = [e for e in store.walk() if e.kind == "symlink"]
        assert moved.path == "d/moved" and moved.target == target
        assert os.fsencode(moved.target) == raw

    # --- bytes are checked ---------------------------------------------------------------
    def test_damaged_old_content_is_refused_by_every_read_and_listed(
        self, store: Store, damage: Damage
    ) -> None:
        old = store.write("f.md", b"first words\n", author=A)
        new = store.write("f.md", b"second words\n", author=A)
        copy = store.write("copy.md", b"first words\n", author=A)
        store.write("copy.md", b"later\n", author=A)
        damage(store, sha(b"first words\n"), b"FIRST WORDS\n")
        with pytest.raises(Damaged) as caught:
            store.read_revision("f.md", old.rev)
        assert (caught.value.path, caught.value.rev) == ("f.md", old.rev)
        assert caught.value.sha256 == sha(b"first words\n")
        assert "\n" not in str(caught.value) and f"revision {old.rev}" in str(caught.value)
        with pytest.raises(Damaged) as by_hash:
            store.read_blob(sha(b"first words\n"))
        assert by_hash.value.path in ("f.md", "copy.md") and by_hash.value.rev > 0
        # What is sound still reads.
        assert store.read("f.md") == (b"second words\n", store.stat("f.md"))
        assert store.read_revision("f.md", new.rev) == b"second words\n"
        assert store.read_blob(sha(b"later\n")) == b"later\n"
        found = [(r.path, r.rev, r.sha256) for r in store.verify()]
        assert found == [
            ("copy.md", copy.rev, sha(b"first words\n")),
            ("f.md", old.rev, sha(b"first words\n")),
        ]

    def test_damaged_current_content_is_refused_and_nothing_is_built_on_it(
        self, store: Store, damage: Damage
    ) -> None:
        made = store.write("d/f.md", b"the current text\n", author=A, parents=True)
        damage(store, sha(b"the current text\n"), b"THE CURRENT TEXT\n")
        seq = store.last_seq()
        with pytest.raises(Damaged) as caught:
            store.read("d/f.md")
        assert (caught.value.path, caught.value.rev) == ("d/f.md", made.rev)
        with pytest.raises(Damaged):
            store.truncate("d/f.md", 4, author=A)  # would keep four wrong bytes
        assert store.last_seq() == seq
        assert [(r.path, r.rev) for r in store.verify()] == [("d/f.md", made.rev)]
        # Writing the same bytes again mends them, for every revision that holds them.
        store.write("copy.md", b"the current text\n", author=A)
        assert store.read("d/f.md")[0] == b"the current text\n"
        assert store.read_revision("d/f.md", made.rev) == b"the current text\n"
        assert store.verify() == []
        store.write("d/f.md", b"written again\n", author=A)
        assert store.read("d/f.md")[0] == b"written again\n"

    def test_verify_counts_what_it_checked_and_passes_a_sound_store(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(history=5)
        assert store.verify() == []
        for i in range(3):
            store.write("a.md", b"v%d" % i, author=A)
        store.write("b.md", b"v0", author=A)  # the same bytes as a.md's first
        store.write("gone.md", b"bye", author=A)
        store.delete("gone.md", author=A)
        seen: list[tuple[int, int]] = []
        assert store.verify(lambda done, total: seen.append((done, total))) == []
        assert seen and seen[-1] == (5, 5)  # a.md's 3, b.md's 1 and gone.md's tombstone
        assert [done for done, _ in seen] == sorted(done for done, _ in seen)

    def test_verify_lists_only_retained_revisions(
        self, make_store: MakeStore, damage: Damage
    ) -> None:
        store = make_store(deleted_history_days=3)
        gone = store.write("gone.md", b"deleted words\n", author=A)
        store.delete("gone.md", author=A)
        damage(store, sha(b"deleted words\n"), b"other words!\n")
        assert [(r.path, r.rev) for r in store.verify()] == [("gone.md", gone.rev)]
        store.clock = lambda: time.time_ns() + 4 * DAY  # its tombstone has expired
        assert store.verify() == []
        with pytest.raises(NotFound):
            store.read_revision("gone.md", gone.rev)

    # --- appended: a mutation's own records ------------------------------------------------
    def test_appended_names_the_records_of_the_calling_threads_last_mutation(
        self, store: Store
    ) -> None:
        def last_made() -> range:
            return range(before + 1, store.last_seq() + 1)

        before = store.last_seq()
        store.write("a/b/c.md", b"x", author=A, parents=True)  # mkdir, mkdir, create
        assert store.appended() == last_made() and len(store.appended()) == 3
        before = store.last_seq()
        with pytest.raises(StoreError):
            store.write("a/b/c.md", b"y", author=A, expected_rev=0)
        assert store.appended() == range(0)
        store.mkdir("a", author=A, exist_ok=True)  # nothing to do: nothing appended
        assert store.appended() == range(0)
        store.delete("a", author=A, recursive=True)
        assert store.appended() == last_made() and len(store.appended()) == 3
        before = store.last_seq()
        with store.batch():
            store.write("x.md", b"1", author=A)
            inside = store.appended()
            store.write("y.md", b"2", author=A)
            assert store.appended() == range(inside.stop, inside.stop + 1)
        assert store.appended() == last_made() and len(store.appended()) == 2
        assert inside == range(before + 1, before + 2)
        # Another thread's mutations are its own.
        seen: list[range] = []
        other = threading.Thread(target=lambda: seen.append(store.appended()))
        other.start()
        other.join(10)
        assert seen == [range(0)] and store.appended() == last_made()

    # --- read-only opening -----------------------------------------------------------------
    def test_a_store_opened_read_only_reads_and_refuses_every_mutation(self, store: Store) -> None:
        store.write("notes/a.md", b"kept\n", author=A, parents=True)
        store.symlink("notes/l", "a.md", author=A)
        store.set_checkpoint("here", author=A)
        before, seq = tree(store), store.last_seq()
        with open_store(store.url, readonly=True) as ro:
            assert tree(ro) == before and ro.last_seq() == seq
            assert ro.history("notes/a.md") == store.history("notes/a.md")
            assert [c.name for c in ro.checkpoints()] == ["here"]
            assert [h.path for h in ro.search("kept")] == ["notes/a.md"]
            assert ro.verify() == []
            attempts: list[Callable[[], object]] = [
                lambda: ro.write("b.md", b"x", author=A),
                lambda: ro.write("notes/a.md", b"x", author=A),
                lambda: ro.mkdir("d", author=A),
                lambda: ro.symlink("s", "t", author=A),
                lambda: ro.delete("notes", author=A, recursive=True),
                lambda: ro.rename("notes/a.md", "b.md", author=A),
                lambda: ro.set_attrs("notes/a.md", author=A, mode=0o644),
                lambda: ro.truncate("notes/a.md", 0, author=A),
                lambda: ro.redact("notes/a.md", 1, author=A),
                lambda: ro.set_checkpoint("other", author=A),
                lambda: ro.delete_checkpoint("here"),
                lambda: ro.mark_used(["notes/a.md"]),
            ]
            for attempt in attempts:
                with pytest.raises(ReadOnlyStore):
                    attempt()
            with pytest.raises(ReadOnlyStore), ro.batch():
                pass
            # It follows the writers of the store.
            store.write("notes/a.md", b"changed\n", author=A)
            assert ro.read("notes/a.md")[0] == b"changed\n"
            assert ro.wait_for_changes(seq, 0.01)
        assert store.last_seq() == seq + 1
        assert tree(store) == {**before, "notes/a.md": ("file", b"changed\n")}
