"""The contract for content kept as what it added (:mod:`memfs.store.deltas`): a file
that grows by appends reads back exactly at every revision, whatever happens to the
revisions its later ones continue (pruned, redacted, damaged and written again).

Only what the store answers is checked here; how each backend stores the rows (and
that it lets them go) is checked by its own test module.
"""

from __future__ import annotations

import hashlib

import pytest

from memfs.errors import Damaged, Redacted
from memfs.store import open_store
from memfs.store.base import Store
from memfs.store.deltas import MAX_TAIL, MIN_BASE
from tests.store_contract.common import A, MakeStore
from tests.store_contract.integrity import Damage


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def grow(
    store: Store, path: str, data: bytes, lines: int, tag: str = ""
) -> list[tuple[int, bytes]]:
    """Append ``lines`` lines to ``path`` (holding ``data``), one revision each, as an
    appender's landing writes them (compare-and-set on the revision before)."""
    rev = store.stat(path).rev
    made = []
    for i in range(lines):
        data += f"{tag}line {i:05d} of the growing log, a little over forty bytes\n".encode()
        rev = store.write(path, data, author=A, expected_rev=rev).rev
        made.append((rev, data))
    return made


class DeltasContract:
    def test_every_revision_of_a_growing_file_reads_back_as_written(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(history=1000)
        base = b"# log\n" + b"a" * (MIN_BASE + 100) + b"\n"
        first = store.write("log.md", base, author=A)
        versions = [(first.rev, base)]
        # Past MAX_TAIL several times, so the content is stored whole again on the way.
        versions += grow(store, "log.md", base, 3 * MAX_TAIL // 60)
        edited = versions[-1][1].replace(b"line 00010", b"LINE 00010")  # not an append
        versions.append((store.write("log.md", edited, author=A).rev, edited))
        cut = edited[: len(edited) - 500]
        versions.append((store.write("log.md", cut, author=A).rev, cut))
        versions += grow(store, "log.md", cut, 40, tag="after ")
        assert store.read("log.md")[0] == versions[-1][1]
        for rev, want in versions:
            assert store.read_revision("log.md", rev) == want
            reader = store.open_revision("log.md", rev)
            try:
                assert reader.read(0, len(want) + 1) == want
            finally:
                reader.close()
        assert store.verify() == []
        # Another handle on the store, with nothing cached, reads the same.
        with open_store(store.url) as again:
            assert again.read("log.md")[0] == versions[-1][1]
            assert again.read_revision("log.md", versions[5][0]) == versions[5][1]

    def test_revisions_that_continue_a_pruned_one_keep_their_content(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(history=2)  # the current revision and two before it
        base = b"b" * (MIN_BASE + 1000) + b"\n"
        store.write("log.md", base, author=A)
        versions = grow(store, "log.md", base, 12)
        kept = store.history("log.md")
        assert [r.rev for r in kept] == [rev for rev, _ in reversed(versions[-3:])]
        for rev, want in versions[-3:]:
            assert store.read_revision("log.md", rev) == want
        assert store.verify() == []
        # The next appender still builds on them.
        more = grow(store, "log.md", versions[-1][1], 3, tag="more ")
        assert store.read("log.md")[0] == more[-1][1]

    def test_a_base_another_handle_let_go_is_not_continued(self, make_store: MakeStore) -> None:
        store = make_store(history=0)  # a file keeps its current revision only
        first = b"e" * (MIN_BASE + 10) + b"\n"
        store.write("log.md", first, author=A)
        second = first + b"two\n"
        store.write("log.md", second, author=A)  # continues the first (this handle knows)
        with open_store(store.url, history=0) as other:
            other.write("log.md", b"unrelated\n", author=A)  # both go, and their rows
            other.write("log.md", second, author=A)  # stored again, whole
        versions = [second + b"three\n", second + b"three\nfour\n"]
        with store.batch():
            for data in versions:
                store.write("log.md", data, author=A)
        assert store.read("log.md")[0] == versions[-1]
        assert store.verify() == []
        with open_store(store.url) as again:
            assert again.read("log.md")[0] == versions[-1]

    def test_redacting_the_revision_others_continue_keeps_theirs(self, store: Store) -> None:
        base = b"token=sk-live-123\n" + b"c" * MIN_BASE + b"\n"
        first = store.write("log.md", base, author=A)
        versions = grow(store, "log.md", base, 5)
        store.redact("log.md", first.rev, author="alice")
        with pytest.raises(Redacted):
            store.read_revision("log.md", first.rev)
        for rev, want in versions:
            assert store.read_revision("log.md", rev) == want
        assert store.verify() == []
        with open_store(store.url) as again:
            assert again.read("log.md")[0] == versions[-1][1]
        # Appends go on from the content the redaction left whole.
        more = grow(store, "log.md", versions[-1][1], 3, tag="more ")
        assert store.read("log.md")[0] == more[-1][1]
        assert store.verify() == []

    def test_damage_to_a_base_shows_in_every_revision_continuing_it_until_rewritten(
        self, store: Store, damage: Damage
    ) -> None:
        base = b"d" * (MIN_BASE + 10) + b"\n"
        first = store.write("log.md", base, author=A)
        versions = grow(store, "log.md", base, 3)
        damage(store, sha(base), b"x" * len(base))
        assert [r.rev for r in store.verify()] == [first.rev] + [rev for rev, _ in versions]
        with open_store(store.url) as again, pytest.raises(Damaged):
            again.read("log.md")
        # Writing the base's bytes again puts them back, and with them every revision.
        store.write("copy.md", base, author=A)
        assert store.verify() == []
        with open_store(store.url) as again:
            assert again.read("log.md")[0] == versions[-1][1]
