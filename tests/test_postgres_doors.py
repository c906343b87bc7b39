"""Every door on one PostgreSQL tree: mounts, a mirror, pushed changes.

Real FUSE daemons and a real mirror share a tree in the throwaway cluster; "hosts" are
processes with their own state directories, as two machines would be.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.mount.options import MountOptions
from memfs.store import open_store
from memfs.sync import Mirror
from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.postgres import PgCluster

pytestmark = pytest.mark.fuse


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memfs" not in p.name
    }


def test_a_write_reaches_another_mount_by_push_not_by_poll(
    pg_cluster: PgCluster, mount_factory: Callable[..., MountHandle]
) -> None:
    url = pg_cluster.url()
    # A poll this slow would miss the deadline below: only the push can meet it.
    slow = MountOptions(poll_interval=60.0)
    b = mount_factory("b", url, options=slow)
    (b.mountpoint / "f.md").write_bytes(b"old\n")
    with open_store(url) as store:
        wait_for(lambda: store.read("f.md")[0] == b"old\n", timeout=10, what="b's commit")
        assert (b.mountpoint / "f.md").read_bytes() == b"old\n"  # now in b's caches
        store.write("f.md", b"new from another host\n", author="host-a")
        wait_for(
            lambda: (b.mountpoint / "f.md").read_bytes() == b"new from another host\n",
            timeout=10,
            what="the pushed change in b's mount",
        )
        store.write("g.md", b"created elsewhere\n", author="host-a")
        wait_for(lambda: (b.mountpoint / "g.md").exists(), timeout=10, what="a new name")


def test_two_mounts_and_a_mirror_converge_under_concurrent_edits(
    pg_cluster: PgCluster, mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    url = pg_cluster.url()
    a = mount_factory("a", url)
    b = mount_factory("b", url)
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    mirror = Mirror(mirror_dir, url, state_path=tmp_path / "sync.json")
    mirror.start()
    try:
        wait_for(mirror.ready.is_set, timeout=15, what="the mirror's first pass")
        sides = {"a": a.mountpoint, "b": b.mountpoint, "m": mirror_dir}
        errors: list[BaseException] = []

        def edit(name: str, root: Path) -> None:
            try:
                for i in range(15):
                    (root / f"{name}-{i}.md").write_text(f"{name} wrote {i}\n")
                    (root / "shared.md").write_text(f"last by {name} at {i}\n")
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=edit, args=item) for item in sides.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors

        def converged() -> bool:
            views = [_files(root) for root in sides.values()]
            return all(v == views[0] for v in views) and len(views[0]) >= 46

        wait_for(converged, timeout=30, what="all three sides to agree")
        with open_store(url) as store:
            in_store = {e.path: store.read(e.path)[0] for e in store.walk() if e.is_file}
        assert in_store == _files(mirror_dir)
        for name in sides:
            for i in range(15):
                assert in_store[f"{name}-{i}.md"] == f"{name} wrote {i}\n".encode()
        assert in_store["shared.md"].startswith(b"last by ")
    finally:
        mirror.stop()
