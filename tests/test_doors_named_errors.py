"""Errors that name their cause through the doors, not "internal error": the model's
tool on a mount whose store's disk is full says the disk is full and where, and on a
damaged revision says which revision is damaged; a mount of a store on a full disk
says what to free. Real FUSE mounts, a real 4 MiB tmpfs filled on purpose, the
installed ``memfs tool`` and ``memfs mount``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.mount import state
from tests.fixtures.disks import fill
from tests.fixtures.mount import MountHandle, sqlite_url

MEMFS = str(Path(sys.executable).with_name("memfs"))


def tool(root: Path, command: dict[str, object]) -> dict[str, object]:
    done = subprocess.run(
        [MEMFS, "tool", "--root", str(root)],
        input=json.dumps(command) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.fuse
def test_the_tool_on_a_full_store_disk_says_the_disk_is_full(
    small_disk: Path, mount_factory: Callable[..., MountHandle]
) -> None:
    db = small_disk / "memory.db"
    mount = mount_factory(store_url=sqlite_url(db))
    assert tool(mount.mountpoint, {"command": "view", "path": "/memories"})["is_error"] is False
    filler = fill(small_disk)
    try:
        answer = tool(
            mount.mountpoint,
            {"command": "create", "path": "/memories/n.md", "file_text": os.urandom(45_000).hex()},
        )
    finally:
        filler.unlink()
    assert answer["is_error"] is True
    content = str(answer["content"])
    assert "internal error" not in content
    assert f"the disk holding the store {db.resolve()} is full" in content, content


@pytest.mark.fuse
def test_the_tool_on_a_damaged_revision_names_it(memfs_mount: MountHandle) -> None:
    mnt = memfs_mount.mountpoint
    created = tool(mnt, {"command": "create", "path": "/memories/d.md", "file_text": "one\n"})
    assert created["is_error"] is False
    assert memfs_mount.db_path is not None
    with sqlite3.connect(memfs_mount.db_path) as db:  # a torn sector, a hand edit
        db.execute("UPDATE blobs SET codec = 0, content = ?", (b"two\n",))
    answer = tool(mnt, {"command": "view", "path": "/memories/d.md"})
    content = str(answer["content"])
    assert answer["is_error"] is True
    assert "internal error" not in content
    assert "revision 1 of 'd.md' is damaged" in content, content


@pytest.mark.fuse
@pytest.mark.parametrize("state_there", [False, True], ids=["state-elsewhere", "state-there"])
def test_a_remount_on_a_full_store_disk_says_what_to_free(
    small_disk: Path,
    mount_factory: Callable[..., MountHandle],
    monkeypatch: pytest.MonkeyPatch,
    state_there: bool,
) -> None:
    """The store's disk full, and with it (one disk for everything) the state
    directory where the daemon keeps its log and journal."""
    if state_there:
        (small_disk / "state").mkdir()
        monkeypatch.setenv(state.STATE_DIR_ENV, str(small_disk / "state"))
    db = small_disk / "memory.db"
    mount = mount_factory(store_url=sqlite_url(db))
    (mount.mountpoint / "a.md").write_text("kept\n")
    assert mount.teardown() == []
    filler = fill(small_disk)
    try:
        done = subprocess.run(
            [MEMFS, "mount", str(mount.mountpoint), "--store", sqlite_url(db)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    finally:
        filler.unlink()
    assert done.returncode == 1, done.stderr
    message = done.stderr.strip()
    assert "did not come up" not in message, message
    assert f"the disk holding the store {db.resolve()} is full" in message, message
    assert "free some space" in message
