"""``memfs redact`` on a real FUSE mount: the redacted bytes leave the daemons' journals
and recovered copies too (raw bytes of every file there grepped), without losing an
acknowledged write, and a secret still pending in a mount makes redact refuse."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs.mount import state
from memfs.mount.ops import MountOptions
from tests.fixtures.mount import MountHandle, wait_for

pytestmark = pytest.mark.fuse

SECRET = b"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzPURGEKEY\n"
# Writes stay pending until fsync: what the journal holds is the test's to decide.
HELD = MountOptions(commit_quiet_period=3600)


def memfs(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("memfs")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` through the mount and fsync it: committed when this returns."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def holding(directory: Path, needle: bytes) -> list[Path]:
    """Every file under ``directory`` whose raw bytes contain ``needle``."""
    return sorted(p for p in directory.rglob("*") if p.is_file() and needle in p.read_bytes())


def journals(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.journal"))


def leak_and_overwrite(mount: MountHandle) -> tuple[int, Path]:
    """keys.md gets the secret, then other content, both committed; the secret's
    revision and the store's journal directory, which still holds it."""
    keys = mount.mountpoint / "keys.md"
    write_synced(keys, SECRET)
    write_synced(keys, b"(moved to the vault)\n")
    store = mount.store()
    leaked = store.history("keys.md")[-1].rev
    assert store.read_revision("keys.md", leaked) == SECRET
    where = state.journal_dir(store.url)
    assert holding(where, SECRET), "the journal should hold the secret before redact"
    return leaked, where


def test_redact_compacts_a_live_mounts_journal_and_later_writes_survive_kill9(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory(options=HELD)
    leaked, where = leak_and_overwrite(mount)
    # A copy a failed save left of the secret, and one of other content that must stay.
    (where / "recovered").mkdir(exist_ok=True)
    (where / "recovered" / "keys.md").write_bytes(SECRET)
    (where / "recovered" / "plan.md").write_bytes(b"a plan\n")
    mp = state.lookup(mount.mountpoint)
    assert mp is not None

    done = memfs("redact", "keys.md", "--rev", str(leaked), "--store", mount.store_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"redacted keys.md revision {leaked} (by memfs redact (user ")
    assert lines[1:] == [
        f"purged: 1 journal compacted (1 mount {mp.mountpoint}), 1 recovered copy deleted"
    ]
    assert done.stderr == ""
    assert holding(where, SECRET) == []
    assert (where / "recovered" / "plan.md").read_bytes() == b"a plan\n"
    assert not (where / "recovered" / "keys.md").exists()

    # The mount goes on, and journals what it acknowledges in the compacted journal.
    later = b"written after the purge\n"
    (mount.mountpoint / "later.md").write_bytes(later)
    assert (mount.mountpoint / "keys.md").read_bytes() == b"(moved to the vault)\n"
    wait_for(lambda: holding(where, later), what="the new write in the journal")
    store = mount.store()
    assert "later.md" not in {e.path for e in store.walk()}, "the write should be pending"
    mount.kill9()
    mount.restart()
    assert store.read("later.md")[0] == later
    assert (mount.mountpoint / "later.md").read_bytes() == later


def test_redact_json_says_what_it_purged(mount_factory: Callable[..., MountHandle]) -> None:
    mount = mount_factory(options=HELD)
    leaked, where = leak_and_overwrite(mount)
    mp = state.lookup(mount.mountpoint)
    assert mp is not None
    done = memfs("redact", "keys.md", "--rev", str(leaked), "--json", "--store", mount.store_url)
    assert done.returncode == 0, done.stderr
    revision, purge = (json.loads(line) for line in done.stdout.splitlines())
    assert revision["sha256"] == hashlib.sha256(SECRET).hexdigest()
    compacted = purge["purged"]["journals_compacted"]
    assert [c["mount"] for c in compacted] == [mp.mountpoint]
    assert compacted[0]["dropped_bytes"] > len(SECRET)
    assert Path(compacted[0]["journal"]) in journals(where)
    assert purge["purged"]["recovered_copies_deleted"] == []
    assert purge["not_purged"] == {
        "mounts_not_answering": [],
        "journal_kept": None,
        "quarantined_journals": [],
        "rescued_stores": [],
    }


def test_a_secret_pending_in_a_mount_makes_redact_refuse_and_change_nothing(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory(options=HELD)
    leaked, where = leak_and_overwrite(mount)
    # Written again and not saved yet: to this mount it is keys.md's current content.
    (mount.mountpoint / "keys.md").write_bytes(SECRET)
    store = mount.store()
    assert store.read("keys.md")[0] == b"(moved to the vault)\n"
    before = {p: p.read_bytes() for p in journals(where)}
    mp = state.lookup(mount.mountpoint)
    assert mp is not None

    refused = memfs("redact", "keys.md", "--rev", str(leaked), "--store", mount.store_url)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr == (
        f"Error: revision {leaked} of 'keys.md' is what the mount at {mp.mountpoint} holds"
        " for 'keys.md', not saved yet; change or delete that file first, then redact"
        f" (in the store {mount.store_url})\n"
    )
    assert store.read_revision("keys.md", leaked) == SECRET
    assert {p: p.read_bytes() for p in journals(where)} == before
    # The acknowledged write is still there to be saved.
    fd = os.open(mount.mountpoint / "keys.md", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    assert store.read("keys.md")[0] == SECRET


def test_without_a_daemon_redact_saves_a_stopped_daemons_journal_then_deletes_it(
    mount_factory: Callable[..., MountHandle],
) -> None:
    mount = mount_factory(options=HELD)
    leaked, where = leak_and_overwrite(mount)
    pending = b"acknowledged, never saved\n"
    (mount.mountpoint / "todo.md").write_bytes(pending)
    wait_for(lambda: holding(where, pending), what="the pending write in the journal")
    (where / "recovered").mkdir(exist_ok=True)
    (where / "recovered" / "old" / "keys.md").parent.mkdir()
    (where / "recovered" / "old" / "keys.md").write_bytes(SECRET)
    mount.kill9()
    store = mount.store()
    assert "todo.md" not in {e.path for e in store.walk()}

    done = memfs("redact", "keys.md", "--rev", str(leaked), "--store", mount.store_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "purged: 1 journal of stopped daemons deleted, 1 file saved from them first,"
        " 1 recovered copy deleted"
    ]
    assert store.read("todo.md")[0] == pending
    assert journals(where) == []
    assert holding(where, SECRET) == []
    assert not (where / "recovered" / "old").exists()  # the emptied directory goes too
