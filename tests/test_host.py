"""Which mount holds a path (memfs.host): what the memory tool's handler asks to know
whether its tree is on a memfs mount."""

from __future__ import annotations

import pytest

from memfs import host
from memfs.host import MountEntry

ROOT = MountEntry("/", "ext4", "/dev/vda")
MEMFS = MountEntry("/mnt/a", "fuse.memfs", "memfs")
SIBLING = MountEntry("/mnt/ab", "ext4", "/dev/vdb")
INNER = MountEntry("/mnt/a/tmp", "tmpfs", "tmpfs")


@pytest.mark.parametrize(
    ("path", "holder"),
    [
        ("/mnt/a", MEMFS),
        ("/mnt/a/memories/notes.md", MEMFS),
        ("/mnt/ab/notes.md", SIBLING),  # a name that starts like the mount's is not in it
        ("/mnt/a/tmp/x", INNER),
        ("/home/me", ROOT),
    ],
)
def test_the_mount_holding_a_path_is_the_nearest_on_it_or_above(
    monkeypatch: pytest.MonkeyPatch, path: str, holder: MountEntry
) -> None:
    monkeypatch.setattr(host, "mounts", lambda: [ROOT, MEMFS, SIBLING, INNER])
    assert host.mount_holding(path) == holder


def test_a_mount_on_top_of_another_holds_what_is_below_it(monkeypatch: pytest.MonkeyPatch) -> None:
    under = MountEntry("/mnt/a", "ext4", "/dev/vdc")
    monkeypatch.setattr(host, "mounts", lambda: [ROOT, under, MEMFS])
    assert host.mount_holding("/mnt/a/notes.md") == MEMFS
    monkeypatch.setattr(host, "mounts", lambda: [])
    assert host.mount_holding("/mnt/a/notes.md") is None
