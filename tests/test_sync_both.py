"""Both sides changed one file: the mirror merges the edits, or keeps one conflict copy.

Real mirror passes (``run_once`` as after a restart, or live on a thread) on a real
SQLite store and directory. The races are made deterministic by a store whose writes of
a conflict copy let the "person" save in DIR at that instant, the moment a live race
would hit.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memfs.store.base import Entry
from memfs.store.sqlite import SqliteStore
from memfs.sync import Mirror
from memfs.sync.disk import sha256
from tests.fixtures.sync import SyncRig, wait_for

AGENT = "agent"


def copies(files: dict[str, bytes], name: str = "plan") -> dict[str, bytes]:
    return {p: d for p, d in files.items() if p.startswith(f"{name}.conflict-")}


def mirror_author(rig: SyncRig) -> str:
    return rig.make().author


def test_appends_on_both_sides_merge_the_stores_first(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memfs.sync")
    sync_rig.store.write("log.md", b"first\n", author=AGENT)
    sync_rig.once()
    with open(sync_rig.dir / "log.md", "a") as f:
        f.write("person 1\nperson 2\n")
    sync_rig.store.write("log.md", b"first\nagent 1\n", author=AGENT)
    seq = sync_rig.store.last_seq()
    sync_rig.once()
    merged = b"first\nagent 1\nperson 1\nperson 2\n"
    assert sync_rig.remote() == sync_rig.disk() == {"log.md": merged}
    # One revision, by the mirror, with compare-and-set on the agent's: nothing else.
    feed = sync_rig.store.changes(since=seq)
    assert [(c.kind, c.path, c.author) for c in feed] == [
        ("modify", "log.md", mirror_author(sync_rig))
    ]
    assert any(m.startswith("merged log.md") for m in caplog.messages)
    assert not any("conflict" in m for m in caplog.messages)


def test_edits_of_different_lines_merge_and_a_third_pass_changes_nothing(
    sync_rig: SyncRig,
) -> None:
    sync_rig.store.write("plan.md", b"title\n- milk\n- eggs\n", author=AGENT)
    sync_rig.once()
    sync_rig.write("plan.md", "TITLE\n- milk\n- eggs\n")
    sync_rig.store.write("plan.md", b"title\n- milk\n- bread\n", author=AGENT)
    sync_rig.once()
    assert sync_rig.remote() == sync_rig.disk() == {"plan.md": b"TITLE\n- milk\n- bread\n"}
    seq = sync_rig.store.last_seq()
    sync_rig.once()
    assert sync_rig.store.last_seq() == seq


def test_the_same_line_on_both_sides_is_a_conflict_copy(sync_rig: SyncRig) -> None:
    sync_rig.store.write("plan.md", b"title\nbody\n", author=AGENT)
    sync_rig.once()
    sync_rig.write("plan.md", "person's title\nbody\n")
    sync_rig.store.write("plan.md", b"agent's title\nbody\n", author=AGENT)
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote["plan.md"] == b"agent's title\nbody\n"
    assert list(copies(remote).values()) == [b"person's title\nbody\n"]
    assert sync_rig.disk() == remote


class SavesDuringCopies(SqliteStore):
    """The mirror's store, on the rig's file. Each time the mirror writes a conflict
    copy of plan.md, the person saves plan.md again in DIR, ``saves`` times: after the
    mirror read DIR, before it pulls the store's version there, so every pull finds a
    newer save and the conflict goes on."""

    def __init__(self, path: Path, rig: SyncRig, saves: int) -> None:
        super().__init__(path)
        self.rig, self.saves, self.saved = rig, saves, 0

    def write(self, path: str, data: bytes | bytearray, **kwargs: object) -> Entry:
        entry = super().write(path, data, **kwargs)  # type: ignore[arg-type]
        if path.startswith("plan.conflict-") and self.saved < self.saves:
            self.saved += 1
            self.rig.write("plan.md", f"person v{self.saved + 1}\nbody\n")
        return entry


def test_a_conflict_that_goes_on_updates_one_copy(sync_rig: SyncRig) -> None:
    sync_rig.store.write("plan.md", b"title\nbody\n", author=AGENT)
    sync_rig.once()
    sync_rig.write("plan.md", "person v1\nbody\n")
    sync_rig.store.write("plan.md", b"agent\nbody\n", author=AGENT)
    store = SavesDuringCopies(sync_rig.tmp / "store.db", sync_rig, saves=3)
    try:
        Mirror(sync_rig.dir, store, state_path=sync_rig.state_path).run_once()
    finally:
        store.close()
    assert store.saved == 3
    remote = sync_rig.remote()
    assert remote["plan.md"] == b"agent\nbody\n"
    (copy,) = copies(remote)  # one copy, not one per save
    assert remote[copy] == b"person v4\nbody\n"
    assert sync_rig.disk() == remote
    history = sync_rig.store.history(copy)
    assert [sync_rig.store.read_revision(copy, r.rev) for r in reversed(history)] == [
        f"person v{i}\nbody\n".encode() for i in range(1, 5)
    ]
    assert {r.author for r in history} == {mirror_author(sync_rig)}


def clash(rig: SyncRig, person: str, agent: str) -> None:
    """Both sides change plan.md's first line while the mirror is stopped."""
    rig.write("plan.md", f"{person}\nbody\n")
    rig.store.write("plan.md", f"{agent}\nbody\n".encode(), author=AGENT)


def test_the_open_copy_survives_a_restart_and_the_next_clash_updates_it(
    sync_rig: SyncRig,
) -> None:
    sync_rig.store.write("plan.md", b"title\nbody\n", author=AGENT)
    sync_rig.once()
    clash(sync_rig, "person 1", "agent 1")
    sync_rig.once()
    # The store's version came into DIR; the person's editor saves their line again.
    clash(sync_rig, "person 2", "agent 2")
    sync_rig.once()
    remote = sync_rig.remote()
    (copy,) = copies(remote)
    assert remote[copy] == b"person 2\nbody\n" and remote["plan.md"] == b"agent 2\nbody\n"
    assert sync_rig.disk() == remote


def test_once_the_persons_side_goes_in_the_next_clash_is_a_new_copy(sync_rig: SyncRig) -> None:
    sync_rig.store.write("plan.md", b"title\nbody\n", author=AGENT)
    sync_rig.once()
    clash(sync_rig, "person 1", "agent 1")
    sync_rig.once()
    sync_rig.write("plan.md", "person, after reading the copy\nbody\n")
    sync_rig.once()  # pushed: the conflict is over
    assert sync_rig.remote()["plan.md"] == b"person, after reading the copy\nbody\n"
    clash(sync_rig, "person 2", "agent 2")
    sync_rig.once()
    remote = sync_rig.remote()
    assert sorted(copies(remote).values()) == [b"person 1\nbody\n", b"person 2\nbody\n"]
    assert sync_rig.disk() == remote


@pytest.mark.parametrize("where", ["DIR", "store"])
def test_an_edited_copy_is_never_overwritten(sync_rig: SyncRig, where: str) -> None:
    sync_rig.store.write("plan.md", b"title\nbody\n", author=AGENT)
    sync_rig.once()
    clash(sync_rig, "person 1", "agent 1")
    sync_rig.once()
    (copy,) = copies(sync_rig.remote())
    if where == "DIR":
        sync_rig.write(copy, "the person merged it by hand\n")
    else:
        sync_rig.store.write(copy, b"the person merged it by hand\n", author=AGENT)
    clash(sync_rig, "person 2", "agent 2")
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote[copy] == b"the person merged it by hand\n"
    assert sorted(copies(remote).values()) == [
        b"person 2\nbody\n",
        b"the person merged it by hand\n",
    ]
    assert sync_rig.disk() == remote


def test_a_base_a_kill_left_lagging_is_not_merged_against(sync_rig: SyncRig) -> None:
    """The state a kill leaves may lag: both sides then hold more than its base says, and
    a merge against it would repeat those lines. Until the path is synced again, it is
    a conflict (nothing lost, nothing twice)."""
    sync_rig.store.write("log.md", b"a\n", author=AGENT)
    mirror = sync_rig.start()
    wait_for(lambda: sync_rig.disk_has("log.md", b"a\n"))
    sync_rig.settle()
    lagging = sync_rig.state_path.read_bytes()  # as saved while running
    with open(sync_rig.dir / "log.md", "a") as f:
        f.write("synced\n")
    wait_for(lambda: sync_rig.remote_has("log.md", b"a\nsynced\n"))
    sync_rig.settle()
    assert mirror.state.entries["log.md"].sha256 == sha256(b"a\nsynced\n")
    sync_rig.stop()
    saved = json.loads(lagging)
    assert saved["clean"] is False and saved["entries"]["log.md"]["sha256"] == sha256(b"a\n")
    sync_rig.state_path.write_bytes(lagging)  # as if killed before the save of "synced"
    with open(sync_rig.dir / "log.md", "a") as f:
        f.write("person\n")
    sync_rig.store.write("log.md", b"a\nsynced\nagent\n", author=AGENT)
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote["log.md"] == b"a\nsynced\nagent\n"
    assert list(copies(remote, "log").values()) == [b"a\nsynced\nperson\n"]
    assert sync_rig.disk() == remote


def redact_all_but_the_head(rig: SyncRig, path: str) -> None:
    """Take every older revision's content out of the store (as ``memfs redact`` does):
    the store keeps no base for the next merge."""
    _head, *older = rig.store.history(path)
    for rev in older:
        if rev.redacted_by is None:
            rig.store.redact(path, rev.rev, author=AGENT)


def test_a_base_gone_from_the_store_merges_from_the_mirrors_memory_while_it_runs(
    sync_rig: SyncRig,
) -> None:
    """The store keeps ``history`` revisions (and redacts on request): the base of a
    merge may be gone from it. While it runs, the mirror remembers what it synced; after
    a restart it has only the store, and a base gone from it makes a conflict copy."""
    sync_rig.store.write("log.md", b"a\n", author=AGENT)
    mirror = sync_rig.start(quiet=3.0)
    wait_for(lambda: sync_rig.disk_has("log.md", b"a\n"))
    sync_rig.settle()
    with open(sync_rig.dir / "log.md", "a") as f:  # held back by the 3 s quiet...
        f.write("person\n")
    sync_rig.store.write("log.md", b"a\nagent\n", author=AGENT)  # ...while the agent writes
    redact_all_but_the_head(sync_rig, "log.md")
    wait_for(lambda: sync_rig.remote_has("log.md", b"a\nagent\nperson\n"), what="the merge")
    wait_for(mirror.settled)
    sync_rig.stop()
    assert sync_rig.disk() == sync_rig.remote() == {"log.md": b"a\nagent\nperson\n"}

    with open(sync_rig.dir / "log.md", "a") as f:
        f.write("person 2\n")
    sync_rig.store.write("log.md", b"a\nagent\nperson\nagent 2\n", author=AGENT)
    redact_all_but_the_head(sync_rig, "log.md")
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote["log.md"] == b"a\nagent\nperson\nagent 2\n"
    assert list(copies(remote, "log").values()) == [b"a\nagent\nperson\nperson 2\n"]
    assert sync_rig.disk() == remote
