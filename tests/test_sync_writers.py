"""The mirror among many writers: programs writing files in DIR while the store changes.

A program holding a file in DIR open for writing writes to the file it opened, so the
mirror never renames another file over it, nor unlinks it, while it is open: the
writer's next writes would land in a file no longer in DIR (memfs/sync/leases.py).
"""

from __future__ import annotations

import os

import pytest

from tests.fixtures.sync import SyncRig, wait_for

AGENT = "agent"


@pytest.mark.parametrize("change", ["edited", "deleted"])
def test_a_file_held_open_for_writing_is_never_swapped_under_its_writer(
    sync_rig: SyncRig, change: str
) -> None:
    """A program holding a file in DIR open for writing writes to that file: were the
    mirror to rename the store's version over it (or unlink it) now, the next writes
    would go to a file no longer in DIR. It waits for the close: nothing is lost."""
    sync_rig.store.write("held.md", b"base\n", author=AGENT)
    mirror = sync_rig.start()
    path = sync_rig.dir / "held.md"
    wait_for(lambda: sync_rig.disk_has("held.md", b"base\n"))
    sync_rig.settle()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        ino = os.fstat(fd).st_ino
        if change == "edited":
            sync_rig.store.write("held.md", b"base\nagent\n", author=AGENT)
        else:
            sync_rig.store.delete("held.md", author=AGENT)
        seq = sync_rig.store.last_seq()

        def looked() -> bool:
            # The mirror has taken the change in and set the file aside for later, or
            # (the bug) swapped it already.
            seen = mirror.state.last_seq >= seq and mirror.debouncer.pending("held.md")
            return seen or not path.exists() or path.stat().st_ino != ino

        wait_for(looked, what="the mirror to look at held.md")
        assert path.exists() and path.stat().st_ino == ino, "swapped while a writer had it open"
        os.write(fd, b"person\n")
    finally:
        os.close(fd)
    ours = b"base\nperson\n"
    wait_for(lambda: ours in sync_rig.remote().values(), what="the person's write in the store")
    sync_rig.settle()
    assert ours in sync_rig.disk().values()
    assert sync_rig.disk() == sync_rig.remote()
