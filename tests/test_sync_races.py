"""Races between the mirror's decision and the store: an agent's write that lands after
the mirror looked, at the last possible moment, still wins over a person's delete."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memfs.store.base import Store
from memfs.store.sqlite import SqliteStore
from memfs.sync import Mirror
from tests.fixtures.sync import SyncRig, wait_for

AGENT = "agent"


class WriteBeforeDelete(SqliteStore):
    """The mirror's real store, on the rig's file. When the mirror deletes ``target``,
    the agent writes it first, from its own connection: after every check the mirror
    can make on its side, before the delete's transaction begins."""

    def __init__(self, path: Path, agent: Store, target: str, data: bytes) -> None:
        super().__init__(path)
        self.agent, self.target, self.data = agent, target, data
        self.raced = False

    def delete(
        self,
        path: str,
        *,
        author: str,
        recursive: bool = False,
        expected_rev: int | None = None,
    ) -> None:
        if path == self.target and not self.raced:
            self.raced = True
            self.agent.write(path, self.data, author=AGENT)
        super().delete(path, author=author, recursive=recursive, expected_rev=expected_rev)


def deletes_in_feed(rig: SyncRig) -> list[str]:
    return [c.path for c in rig.store.changes() if c.kind == "delete"]


def restored_message(caplog: pytest.LogCaptureFixture) -> bool:
    return any(
        r.levelno == logging.WARNING and "notes.md" in r.getMessage() and "edit" in r.getMessage()
        for r in caplog.records
    )


def test_an_agent_write_just_before_the_delete_wins_in_one_pass(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    sync_rig.write("notes.md", b"the person's note")
    store = WriteBeforeDelete(sync_rig.tmp / "store.db", sync_rig.store, "notes.md", b"agent")
    try:
        Mirror(sync_rig.dir, store, state_path=sync_rig.state_path).run_once()
        assert sync_rig.remote() == {"notes.md": b"the person's note"}
        (sync_rig.dir / "notes.md").unlink()
        Mirror(sync_rig.dir, store, state_path=sync_rig.state_path, delete_grace=0.05).run_once()
    finally:
        store.close()
    assert store.raced, "the mirror never tried to delete notes.md in the store"
    assert sync_rig.remote() == {"notes.md": b"agent"}
    assert sync_rig.disk() == {"notes.md": b"agent"}
    assert deletes_in_feed(sync_rig) == []
    assert restored_message(caplog)


def test_an_agent_write_just_before_the_delete_wins_live(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    sync_rig.store.write("keep.md", b"keep", author=AGENT)
    sync_rig.store.write("notes.md", b"the agent's first note", author=AGENT)
    store = WriteBeforeDelete(sync_rig.tmp / "store.db", sync_rig.store, "notes.md", b"agent")
    mirror = Mirror(sync_rig.dir, store, state_path=sync_rig.state_path, delete_grace=0.05)
    mirror.start()
    try:
        wait_for(mirror.ready.is_set, what="the mirror's first pass")
        wait_for(lambda: sync_rig.disk_has("notes.md", b"the agent's first note"))
        (sync_rig.dir / "notes.md").unlink()
        wait_for(lambda: store.raced, what="the mirror to delete notes.md in the store")
        wait_for(lambda: sync_rig.disk_has("notes.md", b"agent"), what="the edit back in DIR")
        wait_for(mirror.settled, what="the mirror to settle")
    finally:
        mirror.stop()
        store.close()
    assert sync_rig.remote() == {"keep.md": b"keep", "notes.md": b"agent"}
    assert sync_rig.disk() == sync_rig.remote()
    assert deletes_in_feed(sync_rig) == []
    assert restored_message(caplog)


def test_the_same_content_rewritten_just_before_the_delete_is_still_deleted(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    # A new revision with nothing new in it is not an edit to keep: the person's delete
    # stands, decided again at the new revision.
    sync_rig.write("notes.md", b"the note")
    store = WriteBeforeDelete(sync_rig.tmp / "store.db", sync_rig.store, "notes.md", b"the note")
    try:
        Mirror(sync_rig.dir, store, state_path=sync_rig.state_path).run_once()
        (sync_rig.dir / "notes.md").unlink()
        Mirror(sync_rig.dir, store, state_path=sync_rig.state_path, delete_grace=0.05).run_once()
    finally:
        store.close()
    assert store.raced
    assert sync_rig.remote() == {} and sync_rig.disk() == {}
    assert deletes_in_feed(sync_rig) == ["notes.md"]
    assert not restored_message(caplog)
