"""The store's tree caps at the mount and through the handler on it: refused by the call
that would pass them (EDQUOT), nothing stored; a commit another writer raced past a cap
is kept, reported and retried, never dropped."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.backing import store_behind
from memfs.handler import MemoryHandler
from memfs.mount import state
from memfs.mount.ops import MountOptions
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for

pytestmark = pytest.mark.fuse

MakeMount = Callable[..., MountHandle]


def capped(make: MakeMount, tmp_path: Path, query: str, **kw: object) -> MountHandle:
    return make(store_url=sqlite_url(tmp_path / "capped.db") + "?" + query, **kw)


def files_in(handle: MountHandle) -> dict[str, bytes]:
    store = handle.store()
    return {e.path: store.read(e.path)[0] for e in store.walk() if e.is_file}


def test_a_create_past_max_files_is_edquot_and_stores_nothing(
    mount_factory: MakeMount, tmp_path: Path
) -> None:
    m = capped(mount_factory, tmp_path, "max_files=2")
    (m.mountpoint / "a").write_text("1")
    (m.mountpoint / "b").write_text("2")
    done = subprocess.run(
        ["sh", "-c", f"echo three > {m.mountpoint / 'c'}"], capture_output=True, text=True
    )
    assert done.returncode != 0 and "Disk quota exceeded" in done.stderr
    with pytest.raises(OSError) as caught:
        (m.mountpoint / "d").write_text("4")
    assert caught.value.errno == errno.EDQUOT
    assert sorted(p.name for p in m.mountpoint.iterdir()) == ["a", "b"]
    (m.mountpoint / "a").write_text("rewritten is no new file")
    wait_for(lambda: files_in(m) == {"a": b"rewritten is no new file", "b": b"2"})
    (m.mountpoint / "b").unlink()
    (m.mountpoint / "c").write_text("room again")  # the delete made room at once
    wait_for(lambda: files_in(m) == {"a": b"rewritten is no new file", "c": b"room again"})


def test_a_big_write_past_max_tree_bytes_is_edquot(
    mount_factory: MakeMount, tmp_path: Path
) -> None:
    m = capped(mount_factory, tmp_path, "max_tree_bytes=10000")
    (m.mountpoint / "notes").write_bytes(b"n" * 4000)
    done = subprocess.run(
        ["dd", "if=/dev/zero", f"of={m.mountpoint / 'big'}", "bs=64k", "count=4"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "Disk quota exceeded" in done.stderr
    # Appending past the cap is refused the same way; what fits is taken.
    with open(m.mountpoint / "notes", "ab", buffering=0) as f:
        f.write(b"x" * 6000)
        with pytest.raises(OSError) as caught:
            f.write(b"y")
    assert caught.value.errno == errno.EDQUOT
    wait_for(lambda: files_in(m) == {"notes": b"n" * 4000 + b"x" * 6000, "big": b""})
    assert m.store().usage().bytes == 10000


def test_a_commit_raced_past_a_cap_is_kept_reported_and_retried(
    mount_factory: MakeMount, tmp_path: Path
) -> None:
    m = capped(
        mount_factory, tmp_path, "max_tree_bytes=100", options=MountOptions(commit_quiet_period=30)
    )
    with open(m.mountpoint / "mine", "wb", buffering=0) as f:
        f.write(b"m" * 60)  # acknowledged: there is room
        other = m.store()
        other.write("theirs", b"t" * 60, author="another host")  # now there is not
        with pytest.raises(OSError) as caught:
            os.fsync(f.fileno())
    assert caught.value.errno == errno.EDQUOT

    def unsaved() -> state.MountRecord | None:
        record = state.lookup(m.mountpoint)
        return record if record is not None and record.unsaved else None

    record = wait_for(unsaved)
    assert record.unsaved == ("mine",)
    assert (Path(record.recovery_dir) / "mine").read_bytes() == b"m" * 60
    log = Path(record.log_path).read_text()
    assert "could not save mine" in log
    assert "delete files or raise the cap with ?max_tree_bytes=N in the store URL" in log
    other.delete("theirs", author="another host")
    wait_for(lambda: files_in(m) == {"mine": b"m" * 60}, 15, what="the retry once room appeared")
    wait_for(lambda: (r := state.lookup(m.mountpoint)) and not r.unsaved)
    assert record.errors == 0  # a refusal the store explained, not an unexpected error


def test_the_handler_on_a_mount_tells_the_model_the_caps(
    mount_factory: MakeMount, tmp_path: Path
) -> None:
    m = capped(mount_factory, tmp_path, "max_files=2&max_tree_bytes=1000")
    backing = store_behind(m.mountpoint)
    assert backing is not None and backing.prefix == ""
    try:
        handler = MemoryHandler(m.mountpoint, store=backing.store)
        assert not handler.create("/memories/a.md", "a" * 596 + "TAIL").is_error
        result = handler.create("/memories/b.md", "b" * 500)
        assert result == (
            "Error: Cannot write /memories/b.md: the memory would hold 1,100 bytes, over its"
            " limit of 1,000 bytes (600 bytes are used now). Delete memories you no longer"
            " need, or shorten long ones, then try again. Nothing was written.",
            True,
        )
        edit = handler.str_replace("/memories/a.md", "TAIL", "a" * 500)
        assert edit.is_error and "would hold 1,096 bytes" in str(edit.content)
        assert not handler.create("/memories/b.md", "b").is_error
        result = handler.create("/memories/c.md", "c")
        assert result == (
            "Error: Cannot write /memories/c.md: the memory already holds 2 files and is"
            " limited to 2 files. Delete memories you no longer need, or shorten long ones,"
            " then try again. Nothing was written.",
            True,
        )
        # Without the store the mount still refuses; the model hears it plainly.
        plain = MemoryHandler(m.mountpoint).create("/memories/c.md", "c")
        assert plain == (
            "Error: The `create` command on /memories/c.md was refused: the memory is at its"
            " limit of total size or number of files. Delete memories you no longer need, or"
            " shorten long ones, then try again. Nothing was written.",
            True,
        )
        assert sorted(p.name for p in m.mountpoint.iterdir()) == ["a.md", "b.md"]
        assert files_in(m) == {"a.md": b"a" * 596 + b"TAIL", "b.md": b"b"}
    finally:
        backing.close()
