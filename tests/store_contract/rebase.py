"""Landing a change on a moved base (memfs.store.rebase), the same on every backend:
compare-and-set, appends rebased in order, a whole save merged with what changed since
its base (or landing with what it replaced kept as a copy; never over a history command),
an edit merged or kept as a conflict copy, a deleted file re-made."""

from __future__ import annotations

from memfs.history.author import act_for, author_for
from memfs.paths import name_problem
from memfs.store.base import Act, Store
from memfs.store.rebase import Shape, land
from memfs.store.rules import sha256_of
from tests.store_contract.common import A, MakeStore, tree


class RebaseContract:
    def test_an_unmoved_base_is_a_plain_compare_and_set(self, store: Store) -> None:
        base = store.write("log.md", b"one\n", author=A)
        landing = land(
            store, "log.md", b"one\ntwo\n", base_rev=base.rev, shape=Shape.APPEND,
            base_size=4, author="b",
        )  # fmt: skip
        assert landing.outcome == "written" and landing.over is None
        assert store.read("log.md")[0] == b"one\ntwo\n"
        assert landing.entry.rev == store.stat("log.md").rev

    def test_appends_on_a_moved_base_keep_both_writers_lines_in_commit_order(
        self, store: Store
    ) -> None:
        base = store.write("log.md", b"one\n", author=A)
        store.write("log.md", b"one\nA1\n", author="a", expected_rev=base.rev)
        landing = land(
            store, "log.md", b"one\nB1\nB2\n", base_rev=base.rev, shape=Shape.APPEND,
            base_size=4, author="b",
        )  # fmt: skip
        assert landing.outcome == "rebased"
        assert store.read("log.md")[0] == b"one\nA1\nB1\nB2\n"
        # Both writers' revisions are in the history, the rebased one newest.
        authors = [r.author for r in store.history("log.md")]
        assert authors[:2] == ["b", "a"]

    def test_an_append_lands_on_a_shorter_file_after_a_restore(self, store: Store) -> None:
        base = store.write("log.md", b"one\ntwo\nthree\n", author=A)
        with store.acting(act_for("restore", "ann")):
            store.write("log.md", b"one\n", author=author_for("restore", "ann"))
        landing = land(
            store, "log.md", b"one\ntwo\nthree\nfour\n", base_rev=base.rev,
            shape=Shape.APPEND, base_size=14, author="b",
        )  # fmt: skip
        assert landing.outcome == "rebased"
        assert store.read("log.md")[0] == b"one\nfour\n"

    def test_whole_saves_of_different_lines_merge(self, store: Store) -> None:
        base = store.write("MEMORY.md", b"one\ntwo\nthree\n", author=A)
        store.write("MEMORY.md", b"one\ntwo\nthree\nend\n", author="a", expected_rev=base.rev)
        landing = land(
            store, "MEMORY.md", b"top\none\ntwo\nthree\n", base_rev=base.rev,
            shape=Shape.WHOLE, author="b",
        )  # fmt: skip
        assert landing.outcome == "merged" and landing.copy is None
        assert store.read("MEMORY.md")[0] == b"top\none\ntwo\nthree\nend\n"

    def test_two_lines_added_at_the_end_by_whole_saves_both_stay(self, store: Store) -> None:
        base = store.write("MEMORY.md", b"- a\n", author=A)
        store.write("MEMORY.md", b"- a\n- theirs\n", author="a", expected_rev=base.rev)
        land(store, "MEMORY.md", b"- a\n- mine\n", base_rev=base.rev, shape=Shape.WHOLE, author="b")
        assert store.read("MEMORY.md")[0] == b"- a\n- theirs\n- mine\n"

    def test_a_whole_save_changing_their_lines_lands_and_keeps_theirs_as_a_copy(
        self, store: Store
    ) -> None:
        base = store.write("f.md", b"old\n", author=A)
        theirs = store.write("f.md", b"theirs\n", author="ann (vim)", expected_rev=base.rev)
        landing = land(store, "f.md", b"mine\n", base_rev=base.rev, shape=Shape.WHOLE, author="b")
        assert landing.outcome == "displaced" and landing.over == theirs.rev
        assert store.read("f.md")[0] == b"mine\n"
        copy = landing.copy
        assert copy is not None and copy.startswith("f.conflict-") and copy.endswith(".md")
        assert "-ann-vim.md" in copy and name_problem(copy) is None
        assert store.read(copy)[0] == b"theirs\n"
        assert store.read_revision("f.md", theirs.rev) == b"theirs\n"

    def test_a_binary_whole_save_wins_and_the_replaced_content_stays_a_revision(
        self, store: Store
    ) -> None:
        base = store.write("f.bin", b"\0old", author=A)
        theirs = store.write("f.bin", b"\0theirs", author="a", expected_rev=base.rev)
        landing = land(store, "f.bin", b"\0mine", base_rev=base.rev, shape=Shape.WHOLE, author="b")
        assert landing.outcome == "replaced" and landing.over == theirs.rev
        assert landing.copy is None
        assert store.read("f.bin")[0] == b"\0mine"
        assert store.read_revision("f.bin", theirs.rev) == b"\0theirs"

    def test_a_whole_rewrite_older_than_a_restore_is_kept_beside_it(self, store: Store) -> None:
        base = store.write("f.md", b"old\n", author=A)
        with store.acting(act_for("restore", "ann")):
            store.write("f.md", b"restored\n", author=author_for("restore", "ann"))
        landing = land(
            store, "f.md", b"mine\n", base_rev=base.rev, shape=Shape.WHOLE, author="vim (pid 1)"
        )
        assert landing.outcome == "conflict" and landing.copy is not None
        assert store.read("f.md")[0] == b"restored\n"
        assert store.read(landing.copy)[0] == b"mine\n"

    def test_the_operation_says_it_is_a_history_command_not_the_authors_text(
        self, store: Store
    ) -> None:
        # A writer whose name reads like memfs's (a store written before names were
        # checked, or a library caller) is any writer: its change is merged as usual.
        base = store.write("f.md", b"one\ntwo\n", author=A)
        store.write("f.md", b"one\ntwo\nend\n", author=author_for("restore", "ann"))
        landing = land(
            store, "f.md", b"top\none\ntwo\n", base_rev=base.rev, shape=Shape.WHOLE, author="b"
        )
        assert landing.outcome == "merged" and landing.copy is None
        assert store.read("f.md")[0] == b"top\none\ntwo\nend\n"
        # An undo through any door is one, whoever its actor is, and says so.
        with store.acting(Act("web:ann", command="undo")):
            store.write("f.md", b"undone\n", author="web:ann")
        assert store.commands_since("f.md", landing.entry.rev) == {"undo"}
        assert store.commands_since("f.md", store.stat("f.md").rev) == set()
        landing = land(
            store, "f.md", b"mine\n", base_rev=base.rev, shape=Shape.WHOLE, author="vim (pid 1)"
        )
        assert landing.outcome == "conflict" and store.read("f.md")[0] == b"undone\n"
        commands = {(o.actor, o.command) for o in store.operations(limit=None)}
        assert ("web:ann", "undo") in commands and (author_for("restore", "ann"), "") in commands

    def test_edits_of_different_bytes_merge(self, store: Store) -> None:
        base = store.write("f.md", b"alpha\nbeta\ngamma\n", author=A)
        store.write("f.md", b"ALPHA\nbeta\ngamma\n", author="a", expected_rev=base.rev)
        landing = land(
            store, "f.md", b"alpha\nbeta\nGAMMA\n", base_rev=base.rev, shape=Shape.EDIT,
            base_size=17, author="b",
        )  # fmt: skip
        assert landing.outcome == "rebased"
        assert store.read("f.md")[0] == b"ALPHA\nbeta\nGAMMA\n"

    def test_edits_of_the_same_bytes_keep_theirs_and_a_conflict_copy(self, store: Store) -> None:
        base = store.write("notes/f.md", b"alpha\n", author=A, parents=True)
        store.write("notes/f.md", b"alpHa\n", author="a", expected_rev=base.rev)
        landing = land(
            store, "notes/f.md", b"alphA\n", base_rev=base.rev, shape=Shape.EDIT,
            base_size=6, author="sed (pid 9)",
        )  # fmt: skip
        assert landing.outcome == "conflict"
        assert store.read("notes/f.md")[0] == b"alpHa\n"
        copy = landing.copy
        assert copy is not None and copy.startswith("notes/f.conflict-") and copy.endswith(".md")
        assert "-sed.md" in copy
        assert all(name_problem(part) is None for part in copy.split("/"))
        assert store.read(copy)[0] == b"alphA\n"
        assert store.history(copy)[0].author == "sed (pid 9)"

    def test_a_second_conflict_never_overwrites_the_first_copy(self, store: Store) -> None:
        base = store.write("f.md", b"x\n", author=A)
        store.write("f.md", b"y\n", author="a")
        first = land(store, "f.md", b"z\n", base_rev=base.rev, shape=Shape.EDIT, author="b")
        second = land(store, "f.md", b"w\n", base_rev=base.rev, shape=Shape.EDIT, author="b")
        assert first.copy != second.copy
        assert first.copy is not None and second.copy is not None
        assert store.read(first.copy)[0] == b"z\n" and store.read(second.copy)[0] == b"w\n"

    def test_a_file_deleted_meanwhile_comes_back_with_the_change(self, store: Store) -> None:
        base = store.write("f.md", b"one\n", author=A)
        store.delete("f.md", author="a")
        landing = land(
            store, "f.md", b"one\ntwo\n", base_rev=base.rev, shape=Shape.APPEND,
            base_size=4, author="b",
        )  # fmt: skip
        assert landing.outcome == "recreated"
        assert store.read("f.md")[0] == b"one\ntwo\n"

    def test_a_create_where_another_writer_created_the_file_keeps_both(self, store: Store) -> None:
        # Two writers made one new name (">>", a logger): the empty file is the base of
        # each, so both contents stay, theirs (stored first) first, as two appends.
        store.write("new.md", b"theirs\n", author="a")
        landing = land(store, "new.md", b"mine\n", base_rev=0, shape=Shape.WHOLE, author="b")
        assert landing.outcome == "merged"
        assert store.read("new.md")[0] == b"theirs\nmine\n"
        assert [r.author for r in store.history("new.md")] == ["b", "a"]

    def test_a_binary_create_where_another_writer_created_the_file_wins(self, store: Store) -> None:
        store.write("new.bin", b"\0theirs", author="a")
        landing = land(store, "new.bin", b"\0mine", base_rev=0, shape=Shape.WHOLE, author="b")
        assert landing.outcome == "replaced"
        assert store.read("new.bin")[0] == b"\0mine"

    def test_refusals_propagate_and_write_nothing(self, make_store: MakeStore) -> None:
        import pytest

        from memfs.errors import TooLarge

        store = make_store(max_file_bytes=8)
        base = store.write("f.md", b"one\n", author=A)
        store.write("f.md", b"one\ntwo\n", author="a")
        before = tree(store)
        with pytest.raises(TooLarge):
            land(
                store, "f.md", b"one\nthree\n", base_rev=base.rev, shape=Shape.APPEND,
                base_size=4, author="b",
            )  # fmt: skip
        assert tree(store) == before

    def test_each_attempt_is_announced_before_it_is_written(self, store: Store) -> None:
        base = store.write("f.md", b"one\n", author=A)
        moved = store.write("f.md", b"one\nA\n", author="a")
        seen: list[tuple[str, int, str]] = []
        land(
            store, "f.md", b"one\nB\n", base_rev=base.rev, shape=Shape.APPEND, base_size=4,
            author="b", before_write=lambda t, e, c: seen.append((t, e, c)),
        )  # fmt: skip
        assert seen == [
            ("f.md", base.rev, sha256_of(b"one\nB\n")),
            ("f.md", moved.rev, sha256_of(b"one\nA\nB\n")),
        ]
        assert store.history("f.md", limit=1)[0].sha256 == sha256_of(b"one\nA\nB\n")
