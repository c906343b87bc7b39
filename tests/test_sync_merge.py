"""The pure parts of the mirror: the three-way decision table, the merge of two edits,
the wipe rule, names."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memfs.paths import name_problem
from memfs.store import rebase
from memfs.sync import names
from memfs.sync.merge import Action, Version, decide, is_wipe, merge_files
from memfs.sync.names import conflict_name, ignored_name, ignored_path, refused_path

A = Version.file("a" * 64)
B = Version.file("b" * 64)
C = Version.file("c" * 64)
D = Version.dir()

# (base, local, remote) -> action: the sync matrix of the brief, row by row.
MATRIX = [
    pytest.param(A, A, A, Action.NOTHING, id="untouched"),
    pytest.param(A, B, A, Action.PUSH, id="local-edit"),
    pytest.param(A, A, B, Action.PULL, id="remote-edit"),
    pytest.param(A, B, C, Action.MERGE, id="both-edit-differently"),
    pytest.param(A, B, B, Action.RECORD, id="both-edit-identically"),
    pytest.param(A, None, A, Action.DELETE_REMOTE, id="local-delete"),
    pytest.param(A, A, None, Action.DELETE_LOCAL, id="remote-delete"),
    pytest.param(A, None, None, Action.FORGET, id="both-delete"),
    pytest.param(A, None, B, Action.PULL, id="local-delete-remote-edit"),
    pytest.param(A, B, None, Action.PUSH, id="local-edit-remote-delete"),
    # First run: an empty base never deletes anything.
    pytest.param(None, A, None, Action.PUSH, id="new-local"),
    pytest.param(None, None, A, Action.PULL, id="new-remote"),
    pytest.param(None, A, A, Action.RECORD, id="new-identical"),
    pytest.param(None, A, B, Action.CONFLICT, id="new-different"),
    pytest.param(None, None, None, Action.NOTHING, id="nothing-anywhere"),
    # Directories.
    pytest.param(None, D, None, Action.PUSH, id="new-local-dir"),
    pytest.param(None, None, D, Action.PULL, id="new-remote-dir"),
    pytest.param(D, D, D, Action.NOTHING, id="dir-untouched"),
    pytest.param(D, None, D, Action.DELETE_REMOTE, id="local-rmdir"),
    pytest.param(D, D, None, Action.DELETE_LOCAL, id="remote-rmdir"),
    pytest.param(None, D, D, Action.RECORD, id="dir-both-new"),
    # A file became a directory on one side while the other changed the file.
    pytest.param(A, D, B, Action.CONFLICT, id="kind-clash"),
    pytest.param(A, B, D, Action.CONFLICT, id="kind-clash-remote"),
    pytest.param(A, A, D, Action.PULL, id="remote-file-to-dir"),
    # Files where the base was a directory: nothing to merge against.
    pytest.param(D, A, B, Action.CONFLICT, id="dir-became-two-files"),
]


@pytest.mark.parametrize(("base", "local", "remote", "expected"), MATRIX)
def test_decision_table(
    base: Version | None, local: Version | None, remote: Version | None, expected: Action
) -> None:
    assert decide(base, local, remote) is expected


versions = st.one_of(st.none(), st.sampled_from([A, B, C, D]))


@given(base=versions, local=versions, remote=versions)
def test_decide_never_deletes_an_edit(
    base: Version | None, local: Version | None, remote: Version | None
) -> None:
    action = decide(base, local, remote)
    # A delete is only propagated when the other side still holds exactly the base.
    if action is Action.DELETE_REMOTE:
        assert remote == base and local is None
    if action is Action.DELETE_LOCAL:
        assert local == base and remote is None
    # With no base (first run) nothing is ever deleted.
    if base is None:
        assert action not in (Action.DELETE_LOCAL, Action.DELETE_REMOTE)


@given(base=versions, local=versions, remote=versions)
def test_decide_is_symmetric(
    base: Version | None, local: Version | None, remote: Version | None
) -> None:
    mirrored = {
        Action.PUSH: Action.PULL,
        Action.PULL: Action.PUSH,
        Action.DELETE_REMOTE: Action.DELETE_LOCAL,
        Action.DELETE_LOCAL: Action.DELETE_REMOTE,
    }
    action = decide(base, local, remote)
    assert decide(base, remote, local) is mirrored.get(action, action)


def test_only_two_edits_of_a_shared_file_merge() -> None:
    # Every other pair of changes is a plain push/pull or, with no base, a conflict.
    for base in (None, A, D):
        for local in (None, A, B, C, D):
            for remote in (None, A, B, C, D):
                action = decide(base, local, remote)
                shared_file = base == A and local not in (None, D, A) and remote not in (None, D, A)
                assert (action is Action.MERGE) == (shared_file and local != remote)


# (base, local, remote) -> the merge: the person's edit and the store's in one file.
MERGES = [
    pytest.param(b"a\n", b"a\nd1\n", b"a\nm1\n", b"a\nm1\nd1\n", id="appends-store-first"),
    pytest.param(b"", b"d1\nd2\n", b"m1\nm2\nm3\n", b"m1\nm2\nm3\nd1\nd2\n", id="appends-to-empty"),
    pytest.param(b"1\n2\n3\n", b"1\nX\n3\n", b"1\n2\nY\n", b"1\nX\nY\n", id="different-lines"),
    pytest.param(b"a\n", b"top\na\n", b"a\nend\n", b"top\na\nend\n", id="insert-at-top-and-append"),
    pytest.param(b"a\nb\nc\n", b"a\nc\n", b"a\nb\nc\nd\n", b"a\nc\nd\n", id="delete-and-append"),
    pytest.param(b"a\n", b"a\nsame\n", b"a\nsame\n", b"a\nsame\n", id="the-same-append"),
    pytest.param(b"title\nbody\n", b"mine\nbody\n", b"theirs\nbody\n", None, id="one-line-twice"),
    # Text put before one line's start by both, or before it by one while the other
    # rewrote it: one line changed twice, not two changes to splice.
    pytest.param(
        b"title\nbody\n",
        b"person's title\nbody\n",
        b"agent's title\nbody\n",
        None,
        id="one-line-start-twice",
    ),
    pytest.param(b"a\nb\n", b"Xa\nb\n", b"Y\nb\n", None, id="one-line-start-and-rewrite"),
    pytest.param(b"a\nb\n", b"Xa\nb\n", b"a\nY\n", b"Xa\nY\n", id="line-start-and-other-line"),
    # Bytes past the end are appends, as two O_APPEND writers' are on a local disk.
    pytest.param(b"a\nb", b"a\nbX", b"a\nbY", b"a\nbYX", id="appends-to-an-unfinished-line"),
    pytest.param(b"a\nbc", b"a\nXc", b"a\nbY", None, id="edit-and-append-on-one-line"),
    pytest.param(None, b"mine\n", b"theirs\n", None, id="no-base"),
]


@pytest.mark.parametrize(("base", "local", "remote", "expected"), MERGES)
def test_merge_files(
    base: bytes | None, local: bytes, remote: bytes, expected: bytes | None
) -> None:
    assert merge_files(base, local, remote) == expected


lines = st.lists(st.text("abc", min_size=1, max_size=3).map(lambda t: t + "\n"), max_size=6)


@given(base=lines, mine=lines, theirs=lines)
def test_appends_on_both_sides_keep_both_tails_the_stores_first(
    base: list[str], mine: list[str], theirs: list[str]
) -> None:
    def text(parts: list[str]) -> bytes:
        return "".join(parts).encode()

    merged = merge_files(text(base), text(base + mine), text(base + theirs))
    if mine == theirs:
        assert merged == text(base + mine)  # one change made on both sides, kept once
    else:
        assert merged == text(base + theirs + mine)


@given(
    base=st.lists(st.text("xyz", min_size=1, max_size=3), min_size=2, max_size=8), data=st.data()
)
def test_edits_of_different_lines_both_apply(base: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(base) - 1))
    j = data.draw(st.integers(0, len(base) - 1).filter(lambda j: abs(j - i) >= 1))
    mine, theirs, both = list(base), list(base), list(base)
    mine[i] = both[i] = "MINE"
    theirs[j] = both[j] = "THEIRS"

    def text(parts: list[str]) -> bytes:
        return "".join(p + "\n" for p in parts).encode()

    assert merge_files(text(base), text(mine), text(theirs)) == text(both)


def test_one_conflict_name_for_every_writer() -> None:
    # The mirror names its copies as the mount does: one definition, in the store layer.
    assert names.conflict_name is rebase.conflict_name


@pytest.mark.parametrize(
    ("deleted", "total", "wipe"),
    [
        (0, 10, False),
        (1, 1, False),  # deleting the only file of a tiny tree is allowed
        (2, 2, False),
        (3, 3, True),  # rm -rf DIR/* of a three-file tree
        (3, 6, False),  # exactly half is not more than half
        (4, 6, True),
        (40, 100, False),  # rm -r of a normal-size subdirectory
        (100, 100, True),
    ],
)
def test_wipe_rule(deleted: int, total: int, wipe: bool) -> None:
    assert is_wipe(deleted, total) is wipe


@pytest.mark.parametrize(
    "name",
    [
        ".notes.md.swp",
        ".notes.md.swx",
        ".notes.md.swo",
        "notes.md~",
        ".#notes.md",
        "#notes.md#",
        "4913",
        "5036",
        "notes.md___jb_tmp___",
        "notes.md___jb_old___",
        ".goutputstream-X1Y2Z3",
        "sedAb12Cd",
        ".memfs-sync",
        ".memfs-tmp-abc",
        ".tmp-memfs-0123456789abcdef",
        ".git",
    ],
)
def test_editor_temp_names_are_ignored(name: str) -> None:
    assert ignored_name(name)


@pytest.mark.parametrize(
    "name", ["notes.md", "4914", "2024", "sed.md", "sediment.md", ".gitignore", "swp", "a.swp"]
)
def test_ordinary_names_are_not_ignored(name: str) -> None:
    assert not ignored_name(name)


def test_ignored_path_checks_every_segment() -> None:
    assert ignored_path(".git/objects/ab")
    assert ignored_path("notes/.x.md.swp")
    assert not ignored_path("notes/x.md")


def test_refused_path_names_the_problem() -> None:
    assert refused_path("ok/fine.md") is None
    problem = refused_path("ok/bad\u200b.md")
    assert problem is not None and "U+200B" in problem


WHEN = datetime(2026, 11, 29, 18, 43, 0)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("notes.md", "notes.conflict-20261129-184300-local.md"),
        ("README", "README.conflict-20261129-184300-local"),
        (".bashrc", ".bashrc.conflict-20261129-184300-local"),
        ("a.tar.gz", "a.tar.conflict-20261129-184300-local.gz"),
    ],
)
def test_conflict_name(name: str, expected: str) -> None:
    assert conflict_name(name, WHEN, "local") == expected


def test_conflict_name_avoids_taken_names_and_stays_valid() -> None:
    first = conflict_name("notes.md", WHEN, "local")
    second = conflict_name("notes.md", WHEN, "local", {first})
    assert second == "notes.conflict-20261129-184300-local-2.md"
    long = conflict_name("é" * 127 + ".md", WHEN, "local")
    assert name_problem(long) is None
    assert not ignored_name(long)


def test_a_save_in_dir_that_changed_two_places_merges_with_the_stores_change_between() -> None:
    # The mirror merges with the store's rule (one algorithm): the person's whole save
    # changed the first and last lines, the store's writer the middle one.
    base = b"one\ntwo\nthree\nfour\nfive\n"
    local = b"ONE\ntwo\nthree\nfour\nFIVE\n"
    remote = b"one\ntwo\nTHREE\nfour\nfive\n"
    assert merge_files(base, local, remote) == b"ONE\ntwo\nTHREE\nfour\nFIVE\n"
