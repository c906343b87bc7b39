"""Crashes and concurrency on real mounts: a daemon killed mid-burst loses nothing it had
acknowledged and tears nothing; two mounts of one store see each other within the bound."""

from __future__ import annotations

import errno
import hashlib
import inspect
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memfs import host
from memfs.mount.ops import MountOptions
from memfs.mount.writes import SYNC_IN_JOURNAL_FROM
from tests.fixtures.mount import MountHandle, wait_for

pytestmark = pytest.mark.fuse

NAMES = 12


# Shared by the writer subprocess (as source) and the checks: version v of the burst goes
# to file f{v % NAMES}, and its content says which version it is on every line, over
# several pages, so a torn write (a mix of two versions, or a prefix) cannot pass for a
# whole one. ``scale`` makes each version that many times longer.
def content(v: int, scale: int = 1) -> bytes:
    return (f"version {v:06d} ".encode() * 4 + b"\n") * ((((v * 7919) % 700) + 40) * scale)


def name_of(v: int) -> str:
    return f"f{v % NAMES:02d}.txt"


WRITER = (
    f"NAMES = {NAMES}\n"
    + inspect.getsource(content)
    + inspect.getsource(name_of)
    + r"""
import hashlib, os, sys

# Names are opened relative to the mount's root directory, never by path: once the
# mount is gone (auto-unmount), a path would reach the empty directory beneath it and
# the writer would go on writing to the plain disk.
root = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for v in range(int(sys.argv[2])):
    data = content(v, int(sys.argv[3]))
    try:
        fd = os.open(name_of(v), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=root)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        print(f"stopped {v} {exc.errno}", flush=True)
        sys.exit(0)
    print(f"{name_of(v)} {v} {hashlib.sha256(data).hexdigest()}", flush=True)
"""
)


def _start_writer(mountpoint: Path, scale: int = 1) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(mountpoint), "1000000", str(scale)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


@pytest.mark.parametrize(
    ("auto_unmount", "scale", "writes"),
    # Scaled 160 times a version is 0.4-7 MB: most are past the size whose fsync syncs
    # the daemon's journal and leaves the commit to follow, so the kill meets those
    # commits in flight or not yet begun.
    [(False, 1, 60), (True, 1, 60), (False, 160, 12)],
    ids=["dead-mount", "auto-unmount", "large-files"],
)
def test_kill9_mid_burst_keeps_every_acknowledged_write(
    mount_factory: Callable[..., MountHandle], auto_unmount: bool, scale: int, writes: int
) -> None:
    mount = mount_factory(options=MountOptions(auto_unmount=auto_unmount))
    proc, lines = _start_writer(mount.mountpoint, scale)
    try:
        wait_for(lambda: len(lines) >= writes, 60, what=f"{writes} reported writes")
        mount.kill9()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    wait_for(lambda: lines and lines[-1].startswith("stopped"), 10, what="the writer to stop")
    stopped = lines.pop().split()
    assert int(stopped[2]) in (errno.ENOTCONN, errno.ECONNABORTED, errno.ENOENT), stopped
    reported: dict[str, int] = {}
    for line in lines:
        name, v, sha = line.split()
        assert sha == hashlib.sha256(content(int(v), scale)).hexdigest()
        reported[name] = int(v)
    last_attempt = int(stopped[1])

    if auto_unmount:
        # fusermount3's helper notices the daemon's death and takes the mount away; on a
        # loaded machine (the whole suite beside other jobs) it was seen taking over 10 s.
        wait_for(lambda: host.mount_entry(mount.mountpoint) is None, 60, what="auto unmount")
        assert mount.restart() == []
    else:
        with pytest.raises(OSError) as info:
            os.statvfs(mount.mountpoint)  # stat may be answered from the attr cache
        assert info.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
        assert mount.restart() == [
            f"Recovered a stale memfs mount at {mount.mountpoint} (its daemon had died)."
        ]

    store = mount.store()
    entries = {e.path: e for e in store.walk()}
    assert set(entries) <= {name_of(v) for v in range(last_attempt + 1)}, sorted(entries)
    in_flight = name_of(last_attempt)
    for name, entry in entries.items():
        data = store.read(name)[0]
        floor = reported.get(name, -1)
        if name == in_flight:
            # The version being written when the daemon died: its open(O_TRUNC) and
            # every write(2) that returned were acknowledged, so what is there is the
            # last finished version, or a prefix (maybe empty) of the one in flight.
            newest = content(last_attempt, scale)
            fsynced = floor >= 0 and data == content(floor, scale)
            assert fsynced or newest[: len(data)] == data, (
                f"{name} is torn: {len(data)} bytes starting {data[:24]!r}; "
                f"last fsynced version {floor}, in flight {last_attempt}"
            )
        else:
            # Closed files lose nothing, fsynced or not: exactly the last version.
            assert data == content(floor, scale), (
                f"{name} is stale or torn: {len(data)} bytes starting {data[:24]!r}; "
                f"last written version {floor}"
            )
        assert entry.kind == "file"
        assert (mount.mountpoint / name).read_bytes() == data
    assert set(reported) <= set(entries), "a file the writer wrote is missing"


def _bound(options: MountOptions) -> float:
    # A change committed by one daemon reaches the other's kernel cache after at most
    # one poll of the change feed; fsync makes the commit itself immediate.
    return options.poll_interval + options.commit_quiet_period


def test_two_mounts_of_one_store_see_each_other(
    mount_factory: Callable[..., MountHandle],
) -> None:
    a = mount_factory("a")
    b = mount_factory("b", store_url=a.store_url)
    deadline = max(5 * _bound(MountOptions()), 1.0)
    latencies: list[float] = []

    def write(mount: MountHandle, rel: str, data: bytes) -> None:
        fd = os.open(mount.mountpoint / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)

    def seen(mount: MountHandle, rel: str, data: bytes | None) -> None:
        t0 = time.monotonic()

        def check() -> bool:
            path = mount.mountpoint / rel
            if data is None:
                return not path.exists() and rel not in os.listdir(mount.mountpoint)
            return path.read_bytes() == data

        wait_for(check, deadline, interval=0.01, what=f"{rel} as written, from {mount.mountpoint}")
        latencies.append(time.monotonic() - t0)

    b_first_look = b.mountpoint / "shared.md"
    assert not b_first_look.exists()  # b has now asked, and must not cache the miss
    write(a, "shared.md", b"from a\n")
    seen(b, "shared.md", b"from a\n")
    write(b, "shared.md", b"from b, longer than before\n")
    seen(a, "shared.md", b"from b, longer than before\n")
    write(a, "shared.md", b"from a again\n")  # shorter: b's cached size must go too
    seen(b, "shared.md", b"from a again\n")
    os.rename(a.mountpoint / "shared.md", a.mountpoint / "moved.md")
    seen(b, "moved.md", b"from a again\n")
    seen(b, "shared.md", None)
    os.unlink(b.mountpoint / "moved.md")
    seen(a, "moved.md", None)
    assert max(latencies) < deadline


ARCHIVED_NS = 1_500_000_000 * 10**9


def test_untar_keeps_the_archives_mtimes_in_one_change_each_and_across_a_kill9(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    """tar -x closes each file, then sets its mtime: the time joins the pending commit
    (one change per file, no attribute change), and it was acknowledged, so a daemon
    killed before the commit keeps it (the journal's TIMES record)."""
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    names = ["a.md", "b.md", "sub/c.md"]
    for i, name in enumerate(names):
        (source / name).write_bytes(f"file {i}\n".encode() * 100)
    archive = tmp_path / "files.tar"
    subprocess.run(
        ["tar", "-cf", str(archive), "--mtime=@1500000000", "-C", str(source), *names],
        check=True,
    )
    mount = mount_factory(options=MountOptions(commit_quiet_period=3600))
    store = mount.store()
    seq = store.last_seq()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(mount.mountpoint)], check=True)
    for name in names:
        assert (mount.mountpoint / name).stat().st_mtime_ns == ARCHIVED_NS, name
    assert [c.path for c in store.changes(seq)] == ["sub"]  # nothing committed yet
    mount.kill9()
    mount.restart()
    for name in names:
        entry = store.stat(name)
        assert (store.read(name)[0], entry.mtime_ns) == (
            source.joinpath(name).read_bytes(),
            ARCHIVED_NS,
        )
        assert (mount.mountpoint / name).stat().st_mtime_ns == ARCHIVED_NS, name
    kinds = [(c.path, c.kind) for c in store.changes(seq)]
    assert sorted(kinds) == sorted([("sub", "mkdir")] + [(n, "create") for n in names])


def test_a_large_file_fsynced_then_a_kill9_is_in_the_store_after_the_next_mount(
    mount_factory: Callable[..., MountHandle],
) -> None:
    """The fsync of a large file returns once the daemon's journal holds it durably, and
    its commit follows in the background: a daemon killed right after the fsync (before
    or during that commit) loses none of it, and it is stored once."""
    mount = mount_factory(options=MountOptions(auto_unmount=False))
    data = os.urandom(SYNC_IN_JOURNAL_FROM + 12345)
    with open(mount.mountpoint / "big.bin", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    mount.kill9()  # (a close commits nothing: the commit is the fsync's, or the quiet's)
    mount.restart()
    store = mount.store()
    assert store.read("big.bin")[0] == data
    assert len(store.history("big.bin")) == 1
    assert (mount.mountpoint / "big.bin").read_bytes() == data
