"""The sync matrix, row by row, on both sides: while the mirror is stopped (then one
``run_once`` pass, as after a restart) and live where the outcome is not a race."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from memfs.errors import NotFound
from tests.fixtures.sync import SyncRig, wait_for

AGENT = "agent"


@dataclass(frozen=True)
class Row:
    local: Callable[[SyncRig, str], None] | None
    remote: Callable[[SyncRig, str], None] | None
    expected: bytes | None  # what both sides hold under the name afterwards
    conflict_copy: bytes | None = None  # the person's version kept beside it


def local_edit(rig: SyncRig, name: str) -> None:
    rig.write(name, "local edit")


def local_delete(rig: SyncRig, name: str) -> None:
    (rig.dir / name).unlink()


def remote_edit(rig: SyncRig, name: str) -> None:
    rig.store.write(name, b"remote edit", author=AGENT)


def remote_delete(rig: SyncRig, name: str) -> None:
    rig.store.delete(name, author=AGENT)


ROWS = {
    "untouched": Row(None, None, b"base"),
    "local-edit": Row(local_edit, None, b"local edit"),
    "remote-edit": Row(None, remote_edit, b"remote edit"),
    "both-edit": Row(local_edit, remote_edit, b"remote edit", conflict_copy=b"local edit"),
    "local-delete": Row(local_delete, None, None),
    "remote-delete": Row(None, remote_delete, None),
    "both-delete": Row(local_delete, remote_delete, None),
    "local-delete-remote-edit": Row(local_delete, remote_edit, b"remote edit"),
    "local-edit-remote-delete": Row(local_edit, remote_delete, b"local edit"),
}
# Live, two changes made at once race each other; these rows have one outcome anyway.
LIVE = ["untouched", "local-edit", "remote-edit", "local-delete", "remote-delete", "both-delete"]


def name_of(row: str) -> str:
    return f"{row}.md"


def check_row(rig: SyncRig, row: str) -> None:
    spec, name = ROWS[row], name_of(row)
    disk, remote = rig.disk(), rig.remote()
    for side, files in (("disk", disk), ("store", remote)):
        assert files.get(name) == spec.expected, f"{row}: {side} holds {files.get(name)!r}"
        copies = {p: d for p, d in files.items() if p.startswith(f"{row}.conflict-")}
        if spec.conflict_copy is None:
            assert copies == {}, f"{row}: unexpected conflict copy on {side}"
        else:
            (copy,) = copies
            assert copy.endswith("-local.md")
            assert copies[copy] == spec.conflict_copy


def seed(rig: SyncRig, rows: list[str]) -> None:
    # Enough bystanders that deleting a few rows is never mistaken for a wipe.
    for i in range(10):
        rig.store.write(f"bystander{i}.md", b"b", author=AGENT)
    for row in rows:
        rig.store.write(name_of(row), b"base", author=AGENT)


def test_matrix_while_stopped_then_once(sync_rig: SyncRig) -> None:
    rows = list(ROWS)
    seed(sync_rig, rows)
    sync_rig.once()
    assert sync_rig.converged()
    for row in rows:
        spec = ROWS[row]
        if spec.local:
            spec.local(sync_rig, name_of(row))
        if spec.remote:
            spec.remote(sync_rig, name_of(row))
    sync_rig.once()
    for row in rows:
        check_row(sync_rig, row)
    assert sync_rig.converged()
    # A second pass finds nothing to do: replay is idempotent.
    seq = sync_rig.store.last_seq()
    before = sync_rig.disk()
    sync_rig.once()
    assert sync_rig.store.last_seq() == seq and sync_rig.disk() == before


@pytest.mark.parametrize("row", LIVE)
def test_matrix_live(sync_rig: SyncRig, row: str) -> None:
    seed(sync_rig, [row])
    sync_rig.start()
    wait_for(sync_rig.converged)
    sync_rig.settle()
    spec, name = ROWS[row], name_of(row)
    if spec.local:
        spec.local(sync_rig, name)
    if spec.remote:
        spec.remote(sync_rig, name)

    def arrived() -> bool:
        try:
            remote = sync_rig.store.read(name)[0]
        except NotFound:
            remote = None
        disk = (sync_rig.dir / name).read_bytes() if (sync_rig.dir / name).exists() else None
        return remote == disk == spec.expected

    wait_for(arrived, what=f"row {row}")
    sync_rig.settle()
    check_row(sync_rig, row)
    assert sync_rig.converged()


def test_first_run_merges_a_non_empty_dir_with_an_empty_base(sync_rig: SyncRig) -> None:
    sync_rig.store.write("same.md", b"same", author=AGENT)
    sync_rig.store.write("differs.md", b"store's", author=AGENT)
    sync_rig.store.write("only-store.md", b"s", author=AGENT)
    sync_rig.write("same.md", "same")
    sync_rig.write("differs.md", "person's")
    sync_rig.write("only-dir.md", "d")
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote["same.md"] == b"same" and len(sync_rig.store.history("same.md")) == 1
    assert remote["differs.md"] == b"store's"
    (copy,) = [p for p in remote if p.startswith("differs.conflict-")]
    assert remote[copy] == b"person's"
    assert remote["only-store.md"] == b"s" and remote["only-dir.md"] == b"d"
    assert sync_rig.disk() == remote


def test_empty_dir_is_filled_from_the_store(sync_rig: SyncRig) -> None:
    sync_rig.store.write("a/b/c.md", b"deep", author=AGENT, parents=True)
    sync_rig.store.write("top.md", b"top", author=AGENT)
    sync_rig.once()
    assert sync_rig.disk() == {"a/b/c.md": b"deep", "top.md": b"top"}
    # Filling DIR wrote nothing to the store.
    assert {c.author for c in sync_rig.store.changes()} == {AGENT}


@pytest.mark.parametrize(
    "row", ["both-edit", "local-delete-remote-edit", "local-edit-remote-delete"]
)
def test_matrix_live_both_sides(sync_rig: SyncRig, row: str) -> None:
    """Rows where both sides change, live: a long quiet period holds the person's change
    while the agent's lands, so the mirror sees both at once (deterministic)."""
    seed(sync_rig, [row])
    sync_rig.start(quiet=1.0)
    wait_for(sync_rig.converged)
    sync_rig.settle()
    spec, name = ROWS[row], name_of(row)
    assert spec.local is not None and spec.remote is not None
    spec.local(sync_rig, name)
    spec.remote(sync_rig, name)
    wait_for(lambda: sync_rig.disk_has(name, spec.expected or b""), what=f"row {row} on disk")
    wait_for(lambda: sync_rig.remote_has(name, spec.expected or b""), what=f"row {row} stored")
    sync_rig.settle()
    check_row(sync_rig, row)
    assert sync_rig.converged()
