"""A door pointed at a memfs mount and given a ``--store`` of another store refuses, in
one line, instead of working on the other store under the mount's files; the mount's
own store, however spelled, is fine. The installed command on a real FUSE mount."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.mount import MountHandle

MEMFS = str(Path(sys.executable).with_name("memfs"))
CREATE = '{"command": "create", "path": "/memories/n.md", "file_text": "n\\n"}'


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, "tool", *args, CREATE],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.fuse
def test_tool_refuses_a_store_other_than_the_mounts(
    memfs_mount: MountHandle, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    mnt = memfs_mount.mountpoint
    done = tool("--root", str(mnt), "--store", f"sqlite://{other}")
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: cannot open the store behind {mnt}: {mnt} is a mount of "
        f"{memfs_mount.store_url}, not of sqlite://{other}; leave out --store to work on "
        "the mount's store, or mount the other store and give its mountpoint\n"
    )
    assert not other.exists()
    assert not (mnt / "n.md").exists()


@pytest.mark.fuse
def test_tool_takes_the_mounts_own_store_however_spelled(memfs_mount: MountHandle) -> None:
    assert memfs_mount.db_path is not None
    spelled = memfs_mount.db_path.parent / "." / memfs_mount.db_path.name
    done = tool("--root", str(memfs_mount.mountpoint), "--store", f"sqlite://{spelled}")
    assert done.returncode == 0, done.stderr
    assert (memfs_mount.mountpoint / "n.md").read_text() == "n\n"
