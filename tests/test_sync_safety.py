"""Nothing is lost: wipes, replaced folders, brief absences, odd files, interrupted runs."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memfs.errors import SyncError
from memfs.store import open_store
from memfs.sync import Mirror
from memfs.sync.disk import Busy, Disk, Replaced, sha256
from tests.fixtures.sync import SyncRig, wait_for

AGENT = "agent"


def seed_files(rig: SyncRig, n: int = 10) -> dict[str, bytes]:
    files = {f"n{i}.md": f"note {i}".encode() for i in range(n)}
    files["sub/deep.md"] = b"deep"
    for path, data in files.items():
        rig.store.write(path, data, author=AGENT, parents=True)
    return files


def deletes_in_feed(rig: SyncRig) -> list[str]:
    return [c.path for c in rig.store.changes() if c.kind in ("delete", "rmdir")]


def test_wiping_dir_contents_live_repopulates_and_deletes_nothing(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    files = seed_files(sync_rig)
    sync_rig.start()
    wait_for(lambda: sync_rig.disk() == files)
    sync_rig.settle()
    for entry in sync_rig.dir.iterdir():  # rm -rf DIR/*
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    wait_for(lambda: sync_rig.disk() == files, what="DIR repopulated")
    sync_rig.settle()
    assert sync_rig.remote() == files
    assert deletes_in_feed(sync_rig) == []
    assert any("wiped or replaced folder" in r.getMessage() for r in caplog.records)


def test_a_slow_wipe_is_still_one_batch(sync_rig: SyncRig) -> None:
    files = seed_files(sync_rig)
    sync_rig.start()
    wait_for(lambda: sync_rig.disk() == files)
    sync_rig.settle()
    # One file every 60 ms: each is debounced on its own, but every one vanishes within
    # the grace period of the previous, so they are judged together: a wipe.
    for path in sorted(files):
        (sync_rig.dir / path).unlink()
        time.sleep(0.06)
    wait_for(lambda: sync_rig.disk() == files, what="DIR repopulated")
    sync_rig.settle()
    assert deletes_in_feed(sync_rig) == []


def test_wipe_while_stopped_is_restored_by_once(sync_rig: SyncRig) -> None:
    files = seed_files(sync_rig)
    sync_rig.once()
    for entry in sync_rig.dir.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    sync_rig.once()
    assert sync_rig.disk() == sync_rig.remote() == files
    assert deletes_in_feed(sync_rig) == []


def test_dir_deleted_and_recreated_live_is_repopulated(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    files = seed_files(sync_rig, 2)  # a small tree: only the inode change protects it
    sync_rig.start()
    wait_for(lambda: sync_rig.disk() == files)
    sync_rig.settle()
    shutil.rmtree(sync_rig.dir)
    sync_rig.dir.mkdir()
    wait_for(lambda: sync_rig.disk() == files, what="the new DIR repopulated")
    sync_rig.settle()
    assert deletes_in_feed(sync_rig) == []
    assert any("deleted or replaced" in r.getMessage() for r in caplog.records)
    # And the new DIR is watched: an edit in it still lands.
    sync_rig.write("n0.md", "after")
    wait_for(lambda: sync_rig.remote_has("n0.md", b"after"))


def test_dir_swapped_while_stopped_merges_afresh(sync_rig: SyncRig) -> None:
    files = seed_files(sync_rig, 2)
    sync_rig.once()
    old = sync_rig.dir.rename(sync_rig.tmp / "old-mirror")
    sync_rig.dir.mkdir()
    (sync_rig.dir / "n0.md").write_text("an older copy")
    sync_rig.once()
    remote = sync_rig.remote()
    assert deletes_in_feed(sync_rig) == []
    assert {p: remote[p] for p in files} == files  # nothing in the store overwritten
    (copy,) = [p for p in remote if p.startswith("n0.conflict-")]
    assert remote[copy] == b"an older copy"
    assert sync_rig.disk() == remote
    assert old.is_dir()


def test_a_file_missing_for_a_moment_is_not_deleted(sync_rig: SyncRig) -> None:
    sync_rig.store.write("a.md", b"keep", author=AGENT)
    sync_rig.start()
    wait_for(lambda: sync_rig.disk_has("a.md", b"keep"))
    sync_rig.settle()
    aside = sync_rig.tmp / "elsewhere.md"
    os.rename(sync_rig.dir / "a.md", aside)  # moved out of DIR: looks deleted...
    time.sleep(0.1)  # ...for longer than the debounce (the point of the test)
    os.rename(aside, sync_rig.dir / "a.md")
    sync_rig.settle()
    assert deletes_in_feed(sync_rig) == []
    assert sync_rig.remote() == {"a.md": b"keep"}


def test_binary_oversized_refused_and_symlinked_files(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    sync_rig.start(max_file_bytes=1000)
    binary = bytes(range(256))
    sync_rig.write("image.bin", binary)
    sync_rig.write("big.md", b"x" * 2000)
    sync_rig.write("bad\u200bname.md", "invisible character")
    os.symlink("/etc/passwd", sync_rig.dir / "link.md")
    sync_rig.write("fine.md", "fine")
    wait_for(lambda: sync_rig.remote_has("fine.md", b"fine"))
    wait_for(lambda: sync_rig.remote_has("image.bin", binary))
    sync_rig.settle()
    assert set(sync_rig.remote()) == {"fine.md", "image.bin"}
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("big.md" in m and "over the limit" in m for m in messages) == 1
    assert sum("bad\u200bname.md" in m and "U+200B" in m for m in messages) == 1
    assert sum("link.md" in m and "symlink" in m for m in messages) == 1
    # Touching the big file again with the same size does not warn again...
    sync_rig.write("fine.md", "fine 2")
    wait_for(lambda: sync_rig.remote_has("fine.md", b"fine 2"))
    # ...and once it fits, it is synced.
    sync_rig.write("big.md", b"small now")
    wait_for(lambda: sync_rig.remote_has("big.md", b"small now"))
    sync_rig.settle()
    assert (sync_rig.dir / "bad\u200bname.md").exists()  # skipped, never deleted


def test_a_slow_writer_is_never_synced_half_done(sync_rig: SyncRig) -> None:
    sync_rig.start(quiet=0.3)
    sync_rig.settle()
    with open(sync_rig.dir / "slow.md", "wb") as f:
        for i in range(20):
            f.write(f"line {i}\n".encode())
            f.flush()
            time.sleep(0.01)
    final = (sync_rig.dir / "slow.md").read_bytes()
    wait_for(lambda: sync_rig.remote_has("slow.md", final))
    sync_rig.settle()
    assert [r.size for r in sync_rig.store.history("slow.md")] == [len(final)]


def test_a_writer_paused_after_truncating_is_not_synced_half_done(sync_rig: SyncRig) -> None:
    sync_rig.store.write("notes.md", b"old notes\n", author=AGENT)
    sync_rig.start()  # default quiet: far shorter than the writer's pause below
    wait_for(sync_rig.converged)
    with open(sync_rig.dir / "notes.md", "wb") as f:
        # Truncated and still open: the file looks settled long before the writer goes
        # on (a person's program swapped out, a slow network write).
        time.sleep(0.5)
        f.write(b"half ")
        f.flush()
        time.sleep(0.5)
        f.write(b"and whole\n")
    wait_for(lambda: sync_rig.remote_has("notes.md", b"half and whole\n"))
    sync_rig.settle()
    contents = [
        sync_rig.store.read_revision("notes.md", r.rev) for r in sync_rig.store.history("notes.md")
    ]
    assert contents == [b"half and whole\n", b"old notes\n"]


def test_leftovers_of_a_killed_mirror_are_recovered(sync_rig: SyncRig) -> None:
    sync_rig.store.write("notes.md", b"synced", author=AGENT)
    sync_rig.once()
    # A temp file (harmless) and an aside copy holding a save the mirror never saw.
    (sync_rig.dir / ".memfs-tmp-0123456789ab-").write_bytes(b"partial")
    (sync_rig.dir / ".memfs-aside-0123456789ab-notes.md").write_bytes(b"unsaved words")
    (sync_rig.dir / ".memfs-aside-ba9876543210-notes.md").write_bytes(b"synced")
    sync_rig.once()
    disk = sync_rig.disk()
    assert not any(p.startswith(".memfs") for p in disk)
    (recovered,) = [p for p, d in disk.items() if d == b"unsaved words"]
    assert recovered.startswith("notes.recovered-")
    assert sync_rig.remote() == disk


def test_kind_clash_keeps_both(sync_rig: SyncRig) -> None:
    sync_rig.store.write("thing", b"a file in the store", author=AGENT)
    (sync_rig.dir / "thing").mkdir()
    (sync_rig.dir / "thing" / "inside.md").write_text("inside")
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote["thing"] == b"a file in the store"
    (inside,) = [p for p in remote if p.endswith("/inside.md")]
    assert inside.startswith("thing.conflict-") and remote[inside] == b"inside"
    assert sync_rig.disk() == remote


def test_two_mirrors_cannot_share_one_state(sync_rig: SyncRig) -> None:
    sync_rig.start()
    with pytest.raises(SyncError, match="already running"):
        sync_rig.once()


def test_a_read_only_directory_is_synced_once_it_can_be_written(
    sync_rig: SyncRig,
    read_only_dir: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mirror whose directory is read-only says so once, not once a try (each try's
    message names a new temporary file), looks again at its rescans, and syncs as soon
    as the directory can be written."""
    sync_rig.store.write("a.md", b"a\n", author=AGENT)
    tries: list[str] = []
    real_replace = Disk.replace

    def replace(
        self: Disk, rel: str, data: bytes, expected_sha: str | None, mode: int = 0o600
    ) -> Replaced | None:
        tries.append(rel)
        return real_replace(self, rel, data, expected_sha, mode)

    monkeypatch.setattr(Disk, "replace", replace)
    caplog.set_level(logging.WARNING, logger="memfs.sync")
    state = sync_rig.tmp / "ro-state" / "sync.json"
    mirror = Mirror(read_only_dir, sync_rig.url, state_path=state, rescan=0.2)
    mirror.start()
    try:
        wait_for(lambda: len(tries) >= 3, what="three tries at the read-only directory")
        subprocess.run(["mount", "-o", "remount,rw", str(read_only_dir)], check=True)
        written = read_only_dir / "a.md"
        wait_for(lambda: written.exists() and written.read_bytes() == b"a\n", what="a.md")
    finally:
        mirror.stop()
    warned = [r for r in caplog.records if r.getMessage().startswith("cannot sync a.md now")]
    assert len(warned) == 1, [r.getMessage() for r in warned]


def test_a_damaged_state_costs_a_rescan_not_data(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    files = seed_files(sync_rig, 3)
    sync_rig.once()
    sync_rig.write("n1.md", "edited while the state was damaged")
    sync_rig.state_path.write_text("{not json")
    sync_rig.once()
    remote = sync_rig.remote()
    assert remote["n1.md"] == files["n1.md"]
    assert b"edited while the state was damaged" in remote.values()
    assert deletes_in_feed(sync_rig) == []
    assert any("damaged" in r.getMessage() for r in caplog.records)


def test_disk_replace_and_remove_refuse_unexpected_content(tmp_path: Path) -> None:
    disk = Disk(tmp_path, 1 << 20)
    (tmp_path / "f.md").write_bytes(b"the person's")
    assert disk.replace("f.md", b"new", expected_sha=sha256(b"something else")) is None
    assert (tmp_path / "f.md").read_bytes() == b"the person's"
    # Must be absent: it is not.
    assert disk.replace("f.md", b"new", expected_sha=None) is None
    assert (tmp_path / "f.md").read_bytes() == b"the person's"
    assert not disk.remove("f.md", sha256(b"something else"))
    assert (tmp_path / "f.md").read_bytes() == b"the person's"
    assert disk.remove("f.md", sha256(b"the person's"))
    assert list(tmp_path.iterdir()) == []


def test_disk_leaves_a_file_open_for_writing_alone(tmp_path: Path) -> None:
    disk = Disk(tmp_path, 1 << 20)
    path = tmp_path / "f.md"
    path.write_bytes(b"old")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        with pytest.raises(Busy):
            disk.replace("f.md", b"new", expected_sha=sha256(b"old"))
        with pytest.raises(Busy):
            disk.remove("f.md", sha256(b"old"))
        os.write(fd, b" and more")  # still the file the writer opened
    finally:
        os.close(fd)
    assert path.read_bytes() == b"old and more"
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]  # no temp or aside left
    done = disk.replace("f.md", b"new", expected_sha=sha256(b"old and more"))
    assert done is not None and done.before == b"old and more" and done.displaced is None
    assert path.read_bytes() == b"new"


def test_disk_replace_refuses_a_file_that_became_a_symlink(tmp_path: Path) -> None:
    disk = Disk(tmp_path, 1 << 20)
    (tmp_path / "target.md").write_bytes(b"old")
    (tmp_path / "f.md").symlink_to("target.md")
    assert disk.replace("f.md", b"new", expected_sha=sha256(b"old")) is None
    assert (tmp_path / "f.md").is_symlink() and (tmp_path / "target.md").read_bytes() == b"old"
    assert not disk.remove("f.md", sha256(b"old"))
    assert (tmp_path / "f.md").is_symlink()


def test_stop_flushes_a_pending_edit(sync_rig: SyncRig) -> None:
    mirror = sync_rig.start(quiet=5.0)
    sync_rig.write("late.md", "written just before stop")
    wait_for(lambda: mirror.debouncer.pending("late.md"))
    stopper = threading.Thread(target=sync_rig.stop)
    stopper.start()
    stopper.join(20)
    assert not stopper.is_alive()
    assert sync_rig.remote_has("late.md", b"written just before stop")


def test_a_recreated_store_is_merged_not_taken_for_deletions(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    files = seed_files(sync_rig, 4)
    sync_rig.store.write("n0.md", b"more history", author=AGENT)  # feed now past a new store's
    files["n0.md"] = b"more history"
    sync_rig.once()
    assert sync_rig.disk() == files
    sync_rig.store.close()
    db = Path(sync_rig.url.removeprefix("sqlite://"))
    for leftover in db.parent.glob(db.name + "*"):
        leftover.unlink()  # the store file is lost and re-created empty
    sync_rig.store = open_store(sync_rig.url)
    sync_rig.store.write("fresh.md", b"new store", author=AGENT)
    sync_rig.once()
    assert sync_rig.disk() == sync_rig.remote() == {**files, "fresh.md": b"new store"}
    assert any("older than the last sync" in r.getMessage() for r in caplog.records)


def test_a_busy_store_delays_an_edit_but_does_not_stop_the_mirror(
    sync_rig: SyncRig, caplog: pytest.LogCaptureFixture
) -> None:
    mirror = Mirror(
        sync_rig.dir, sync_rig.url + "?busy_timeout=0.1", state_path=sync_rig.state_path
    )
    mirror.start()
    try:
        wait_for(mirror.ready.is_set)
        blocker = sqlite3.connect(sync_rig.url.removeprefix("sqlite://"), isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock
            sync_rig.write("patient.md", "waits for the lock")
            wait_for(
                lambda: any("busy" in r.getMessage() for r in caplog.records),
                what="the mirror to meet the held lock",
            )
            assert not sync_rig.remote_has("patient.md", b"waits for the lock")
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        wait_for(lambda: sync_rig.remote_has("patient.md", b"waits for the lock"))
        sync_rig.store.write("after.md", b"still following the feed", author=AGENT)
        wait_for(lambda: sync_rig.disk_has("after.md", b"still following the feed"))
    finally:
        mirror.stop()


def test_pushes_whose_state_save_was_lost_are_not_conflicts(sync_rig: SyncRig) -> None:
    """A kill after a push but before the state save: the store's head is the mirror's
    own, so the person's newer edits are pushed over it, not filed as conflicts."""
    sync_rig.store.write("old.md", b"v1", author=AGENT)
    sync_rig.once()
    stale = sync_rig.state_path.read_bytes()  # the state before the pushes below
    sync_rig.start()
    sync_rig.write("old.md", "v2")
    sync_rig.write("new.md", "created")
    wait_for(
        lambda: sync_rig.remote_has("old.md", b"v2") and sync_rig.remote_has("new.md", b"created")
    )
    sync_rig.stop()
    sync_rig.state_path.write_bytes(stale)  # as if the saves after the pushes were lost
    sync_rig.write("old.md", "v3")
    sync_rig.write("new.md", "edited")
    sync_rig.once()
    assert sync_rig.remote() == sync_rig.disk() == {"old.md": b"v3", "new.md": b"edited"}


LEASE_PROBE = """
import os, sys, time
from memfs.sync.leases import open_for_writing
path = sys.argv[1]
end = time.monotonic() + 1.0
checks = 0
while time.monotonic() < end:
    fd = os.open(path, os.O_RDONLY)
    try:
        open_for_writing(fd)
    finally:
        os.close(fd)
    checks += 1
print(checks)
"""


def test_the_open_for_writing_probe_survives_writers(tmp_path: Path) -> None:
    # The probe takes a read lease for an instant; a writer opening the file then makes
    # the kernel signal the prober (SIGIO by default, which ends a process).
    path = tmp_path / "busy.md"
    path.write_text("x")
    probe = subprocess.Popen([sys.executable, "-c", LEASE_PROBE, str(path)], stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and probe.poll() is None:
            with open(path, "a") as f:
                f.write("y")
        out, _ = probe.communicate(timeout=30)
    finally:
        if probe.poll() is None:
            probe.kill()
            probe.wait(10)
    assert probe.returncode == 0
    assert int(out) > 0
