"""The pure parts of the mirror: the three-way decision table, the wipe rule, names."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memfs.paths import name_problem
from memfs.sync.merge import Action, Version, decide, is_wipe
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
    pytest.param(A, B, C, Action.CONFLICT, id="both-edit-differently"),
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
    pytest.param(A, A, D, Action.PULL, id="remote-file-to-dir"),
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
