"""A person's file the store's tree caps keep out: one log line naming it and the cap,
the file left as it is on disk, and synced once there is room."""

from __future__ import annotations

import logging

import pytest

from tests.fixtures.sync import SyncRig, wait_for


def test_a_file_past_max_files_waits_on_disk_until_there_is_room(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memfs.sync")
    sync_rig.url += "?max_files=2"
    sync_rig.start()
    sync_rig.write("a.md", "a")
    sync_rig.write("b.md", "b")
    wait_for(lambda: sync_rig.remote() == {"a.md": b"a", "b.md": b"b"})
    sync_rig.write("c.md", "the person's words")
    line = (
        "not syncing c.md yet: the store is at its max_files cap of 2 (it would hold 3);"
        " delete files or raise the cap (?max_files=N in the store URL); retrying"
    )
    wait_for(lambda: line in caplog.messages, what="the cap's log line")
    mirror = sync_rig.mirror
    assert mirror is not None and mirror.engine.capped == {"c.md"}
    assert sync_rig.disk() == {"a.md": b"a", "b.md": b"b", "c.md": b"the person's words"}
    assert sync_rig.remote() == {"a.md": b"a", "b.md": b"b"}
    sync_rig.store.delete("a.md", author="someone")
    wait_for(lambda: sync_rig.remote() == {"b.md": b"b", "c.md": b"the person's words"})
    wait_for(lambda: sync_rig.disk() == {"b.md": b"b", "c.md": b"the person's words"})
    assert caplog.messages.count(line) == 1  # once per content, not once per retry
    assert mirror.engine.capped == set()


def test_a_file_past_max_tree_bytes_is_left_untouched(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memfs.sync")
    sync_rig.url += "?max_tree_bytes=100"
    sync_rig.write("small.md", "s" * 50)
    sync_rig.start()
    wait_for(lambda: sync_rig.remote() == {"small.md": b"s" * 50})
    sync_rig.write("small.md", "s" * 150)  # an edit past the cap: the store keeps the old
    wait_for(lambda: any("max_tree_bytes cap of 100" in m for m in caplog.messages))
    mirror = sync_rig.mirror
    assert mirror is not None and mirror.engine.capped == {"small.md"}
    assert sync_rig.disk() == {"small.md": b"s" * 150}
    assert sync_rig.remote() == {"small.md": b"s" * 50}
