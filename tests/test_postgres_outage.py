"""The PostgreSQL server goes away and comes back, under a mount, a mirror and the
handler: cached reads go on, acknowledged writes are kept and saved, every door
reconnects by itself and says so."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.errors import StoreUnavailable
from memfs.handler import MemoryHandler
from memfs.mount import state
from memfs.mount.options import MountOptions
from memfs.store import open_store
from memfs.sync import Mirror
from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.postgres import PgCluster

pytestmark = pytest.mark.fuse


def _in_store(url: str, path: str) -> bytes | None:
    try:
        with open_store(url) as store:
            return store.read(path)[0]
    except Exception:
        return None


def test_a_mount_survives_the_server_stopping_and_starting(
    own_pg_cluster: PgCluster, mount_factory: Callable[..., MountHandle]
) -> None:
    url = own_pg_cluster.url("outage")
    # A quiet period longer than the outage: the writes below are still being written
    # (held for commit) when the server goes away.
    m = mount_factory("mnt", url, options=MountOptions(commit_quiet_period=3.0))
    root = m.mountpoint
    (root / "cached.md").write_bytes(b"read before the outage\n")
    wait_for(lambda: _in_store(url, "cached.md") is not None, timeout=15, what="the commit")
    assert (root / "cached.md").read_bytes() == b"read before the outage\n"
    handler = MemoryHandler(root)
    writing = {f"kept-{i}.md": open(root / f"kept-{i}.md", "wb") for i in range(3)}  # noqa: SIM115
    acknowledged: dict[str, bytes] = {}
    try:
        for f in writing.values():
            f.write(b"begun before the outage\n")
            f.flush()
        own_pg_cluster.stop()
        # Cached content stays readable, through the file system and the handler.
        assert (root / "cached.md").read_bytes() == b"read before the outage\n"
        viewed = handler.execute({"command": "view", "path": "/memories/cached.md"})
        assert not viewed.is_error and "read before the outage" in str(viewed.content)
        # Files being written go on taking writes: acknowledged, kept in the journal.
        for name, f in writing.items():
            f.write(f"and more of {name} while the server was down\n".encode())
            f.flush()
            acknowledged[name] = (
                f"begun before the outage\nand more of {name} while the server was down\n"
            ).encode()
    finally:
        for f in writing.values():
            f.close()
    # A write that needs the store (a new name) is refused by that very call.
    with pytest.raises(OSError) as refused:
        (root / "new-during.md").write_bytes(b"x")
    assert refused.value.errno == errno.EIO
    made = handler.execute(
        {"command": "create", "path": "/memories/by-model.md", "file_text": "from the model\n"}
    )
    assert made.is_error  # the model is told, nothing is half-made

    def record() -> state.MountRecord:
        found = state.lookup(root)
        assert found is not None
        return found

    wait_for(lambda: record().store_problem, timeout=15, what="the daemon to notice")
    status = CliRunner().invoke(main, ["status"])
    assert "reconnecting" in status.output and "reconnects by itself" in status.output

    own_pg_cluster.start()
    made = handler.execute(
        {"command": "create", "path": "/memories/by-model.md", "file_text": "from the model\n"}
    )
    assert not made.is_error, made.content
    acknowledged["by-model.md"] = b"from the model\n"
    for path, data in acknowledged.items():

        def saved(path: str = path, data: bytes = data) -> bool:
            return _in_store(url, path) == data

        wait_for(saved, timeout=30, what=f"{path} saved")
    wait_for(lambda: not record().store_problem, timeout=15, what="the record to clear")
    assert "reconnecting" not in CliRunner().invoke(main, ["status"]).output
    log = Path(record().log_path).read_text()
    assert "lost PostgreSQL" in log and "reconnected to PostgreSQL" in log
    # Both directions work again: a write here, and another host's write seen here.
    (root / "after.md").write_bytes(b"after\n")
    wait_for(lambda: _in_store(url, "after.md") == b"after\n", timeout=15, what="after.md")
    with open_store(url) as other:
        other.write("cached.md", b"changed by another host\n", author="elsewhere")
    wait_for(
        lambda: (root / "cached.md").read_bytes() == b"changed by another host\n",
        timeout=15,
        what="the follower to resume",
    )


def test_a_mirror_survives_the_server_stopping_and_starting(
    own_pg_cluster: PgCluster, tmp_path: Path
) -> None:
    url = own_pg_cluster.url("mirrored")
    directory = tmp_path / "dir"
    directory.mkdir()
    mirror = Mirror(directory, url, state_path=tmp_path / "sync.json")
    mirror.start()
    try:
        wait_for(mirror.ready.is_set, timeout=15, what="the first pass")
        (directory / "before.md").write_text("before\n")
        wait_for(lambda: _in_store(url, "before.md") == b"before\n", timeout=15, what="before")
        own_pg_cluster.stop()
        (directory / "during.md").write_text("edited while the server was down\n")
        with contextlib.suppress(StoreUnavailable), open_store(url):
            pytest.fail("the server should be away")
        own_pg_cluster.start()
        wait_for(
            lambda: _in_store(url, "during.md") == b"edited while the server was down\n",
            timeout=30,
            what="the edit made during the outage",
        )
        with open_store(url) as store:
            store.write("remote.md", b"from the store\n", author="elsewhere")
        wait_for(lambda: (directory / "remote.md").exists(), timeout=15, what="the store's change")
    finally:
        mirror.stop()
