"""The mirror among many writers (issue #15): a real mount and a mirror of one store,
appending to one file from both sides at once.

What the issue saw, reproduced: with a line appended to ``app.md`` every 20 ms on each
side, the lines written in DIR were gone on both sides with no conflict copy; at 100 ms
apart every round made one more conflict copy. The rules now (memfs/store/rebase.py):
appends on both sides merge, the store's first, and every acknowledged line is in the
one file exactly once, in its writer's order, in DIR, in the store and on the mount.

The list-append run adds more writers (the handler inserting at line 0 on the mount, a
second shell in DIR with random pauses, a process holding a file in DIR open with
O_APPEND while the mount appends to it).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memfs.backing import store_behind
from memfs.errors import NotFound, StoreError
from memfs.handler import MemoryHandler
from memfs.store import Store
from memfs.sync import Mirror
from tests.fixtures.mount import MountHandle
from tests.fixtures.sync import SyncRig, wait_for

DEADLINE = 60.0
AGENT = "agent"


@dataclass
class Writer:
    """One writer's acknowledged tokens (``TAG-i``), in the order acknowledged."""

    tag: str
    appends: bool = True  # False: each token inserted at line 0, so they read reversed
    acked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def check_list(text: str, writers: list[Writer]) -> None:
    """Every acknowledged token in ``text`` exactly once, each writer's in its order,
    and nothing else in it."""
    lines = text.split()
    assert len(lines) == len(set(lines)), "a token twice"
    assert sorted(lines) == sorted(t for w in writers for t in w.acked), "an unknown token"
    for w in writers:
        assert w.errors == [], (w.tag, w.errors[:3])
        mine = [t for t in lines if t.rsplit("-", 1)[0] == w.tag]
        assert set(mine) == set(w.acked), f"{w.tag}: lost {sorted(set(w.acked) - set(mine))[:5]}"
        assert mine == (w.acked if w.appends else w.acked[::-1]), f"{w.tag}: out of its order"


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    """Writer processes, killed and reaped at the end whatever the test did."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _appender(
    procs: list[subprocess.Popen[str]], path: Path, tag: str, count: int, pace: str, ack: Path
) -> subprocess.Popen[str]:
    """``echo TAG-i >> path`` ``count`` times, ``pace`` apart (a ``sleep`` argument, or
    "random" for 0-7 ms); each append that exited 0 is noted in ``ack``."""
    pause = "0.00$((RANDOM % 8))" if pace == "random" else pace
    script = (
        f'for i in $(seq {count}); do echo "{tag}-$i" >> "$1" || exit 1;'
        f' echo "{tag}-$i" >> "$2"; sleep {pause}; done'
    )
    proc = subprocess.Popen(["bash", "-c", script, "bash", str(path), str(ack)], text=True)
    procs.append(proc)
    return proc


def _acked(writer: Writer, ack: Path) -> Writer:
    writer.acked = ack.read_text().split() if ack.exists() else []
    return writer


def _exists(store: Store, path: str) -> bool:
    try:
        store.stat(path)
    except NotFound:
        return False
    return True


def _files(rig: SyncRig) -> tuple[set[str], set[str]]:
    return set(rig.synced_files()), set(rig.remote())


def _settled_on(rig: SyncRig, mount: MountHandle, name: str, writers: list[Writer]) -> bool:
    """Every acknowledged token in the store's ``name``, and DIR, the store and the
    mount all showing the same bytes, with the mirror idle."""
    assert rig.mirror is not None
    try:
        data = rig.store.read(name)[0]
    except StoreError:
        return False
    tokens = set(data.decode().split())
    if not all(set(w.acked) <= tokens for w in writers):
        return False
    if not rig.mirror.settled():
        return False
    return rig.disk_has(name, data) and (mount.mountpoint / name).read_bytes() == data


def _await(rig: SyncRig, mount: MountHandle, name: str, writers: list[Writer]) -> None:
    """Wait (up to DEADLINE) for :func:`_settled_on`; what is still wrong after it is
    for the checks that follow to name."""
    with contextlib.suppress(pytest.fail.Exception):
        wait_for(lambda: _settled_on(rig, mount, name, writers), DEADLINE, what="settled")


def _start(
    sync_rig: SyncRig, mount_factory: Callable[..., MountHandle], *names: str
) -> tuple[MountHandle, Mirror, Store]:
    """A mount and a mirror of one SQLite store, ``names`` created empty and seen by
    both."""
    mount = mount_factory("mnt", store_url=sync_rig.url)
    for name in names:
        (mount.mountpoint / name).write_text("")
    store = sync_rig.store
    wait_for(lambda: all(_exists(store, n) for n in names), what="the files in the store")
    mirror = sync_rig.start()
    wait_for(lambda: all((sync_rig.dir / n).exists() for n in names), what="the files in DIR")
    sync_rig.settle()
    return mount, mirror, store


@pytest.mark.parametrize(
    ("pace", "count"),
    [
        pytest.param("0.02", 50, id="20ms-50-each"),
        pytest.param("0.1", 20, id="100ms-20-each"),
    ],
)
def test_appends_on_both_sides_all_land_in_one_file(
    sync_rig: SyncRig,
    mount_factory: Callable[..., MountHandle],
    tmp_path: Path,
    procs: list[subprocess.Popen[str]],
    pace: str,
    count: int,
) -> None:
    mount, _, _ = _start(sync_rig, mount_factory, "app.md")
    m = _appender(procs, mount.mountpoint / "app.md", "M", count, pace, tmp_path / "M.ack")
    d = _appender(procs, sync_rig.dir / "app.md", "D", count, pace, tmp_path / "D.ack")
    assert m.wait(timeout=120) == 0 and d.wait(timeout=120) == 0
    writers = [_acked(Writer("M", True), tmp_path / "M.ack")]
    writers.append(_acked(Writer("D", True), tmp_path / "D.ack"))
    assert [len(w.acked) for w in writers] == [count, count]

    _await(sync_rig, mount, "app.md", writers)
    for where, text in (
        ("store", sync_rig.store.read("app.md")[0].decode()),
        ("DIR", (sync_rig.dir / "app.md").read_text()),
        ("mount", (mount.mountpoint / "app.md").read_text()),
    ):
        assert len(text.split()) == 2 * count, where
        check_list(text, writers)
    # One file, not one conflict copy per round.
    assert _files(sync_rig) == ({"app.md"}, {"app.md"})


def _insert(handler: MemoryHandler, writer: Writer, count: int) -> None:
    """The model's ``insert`` at line 0 of log.md, through the mount's store."""
    for i in range(1, count + 1):
        token = f"{writer.tag}-{i}"
        command = {"command": "insert", "path": "/memories/log.md", "insert_line": 0}
        result = handler.execute({**command, "insert_text": token + "\n"})
        if result.is_error:
            writer.errors.append(str(result.content))
        else:
            writer.acked.append(token)


HOLDER = """
import os, random, sys, time
path, count, ack = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
with open(ack, "w") as out:
    for i in range(1, count + 1):
        os.write(fd, f"H-{i}\\n".encode())
        out.write(f"H-{i}\\n")
        out.flush()
        # Pacing, not waiting: the holder keeps its descriptor open across the others'
        # writes, a few milliseconds apart at random, so their commits interleave.
        time.sleep(random.uniform(0.002, 0.02))
os.close(fd)
"""


def test_list_append_through_every_door_of_both_sides(
    sync_rig: SyncRig,
    mount_factory: Callable[..., MountHandle],
    tmp_path: Path,
    procs: list[subprocess.Popen[str]],
) -> None:
    """Jepsen-style: writers on the mount (a shell's ``>>``, handler threads inserting at
    line 0) and in DIR (two shells, one a steady pace, one random; a process holding
    ``held.md`` open with O_APPEND while the mount appends to it). Every acknowledged
    token is there exactly once, each writer's in its own order, everywhere."""
    mount, _, _ = _start(sync_rig, mount_factory, "log.md", "held.md")
    shells = {
        "sm": _appender(
            procs, mount.mountpoint / "log.md", "sm", 60, "random", tmp_path / "sm.ack"
        ),
        "sd": _appender(procs, sync_rig.dir / "log.md", "sd", 40, "0.02", tmp_path / "sd.ack"),
        "rd": _appender(procs, sync_rig.dir / "log.md", "rd", 60, "random", tmp_path / "rd.ack"),
        "hm": _appender(procs, mount.mountpoint / "held.md", "hm", 40, "0.01", tmp_path / "hm.ack"),
    }
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER,
            str(sync_rig.dir / "held.md"),
            "40",
            str(tmp_path / "H.ack"),
        ],
        text=True,
    )
    procs.append(holder)
    inserters = [Writer(f"ins{t}", appends=False) for t in range(2)]
    backing = store_behind(mount.mountpoint)
    assert backing is not None and backing.mounted
    handler = MemoryHandler(
        mount.mountpoint,
        store=backing.store,
        store_prefix=backing.prefix,
        neighbours=backing.link,
        actor="inserter",
    )
    threads = [threading.Thread(target=_insert, args=(handler, w, 10)) for w in inserters]
    for t in threads:
        t.start()
    try:
        for proc in shells.values():
            assert proc.wait(timeout=120) == 0
        assert holder.wait(timeout=120) == 0
    finally:
        for t in threads:
            t.join(timeout=120)
        backing.close()
    assert not any(t.is_alive() for t in threads)
    log_writers = [_acked(Writer(tag, True), tmp_path / f"{tag}.ack") for tag in ("sm", "sd", "rd")]
    log_writers += inserters
    held_writers = [_acked(Writer(tag, True), tmp_path / f"{tag}.ack") for tag in ("hm", "H")]
    assert [len(w.acked) for w in log_writers] == [60, 40, 60, 10, 10]
    assert [len(w.acked) for w in held_writers] == [40, 40]

    for name, writers in (("log.md", log_writers), ("held.md", held_writers)):
        _await(sync_rig, mount, name, writers)
    sync_rig.settle()
    for name, writers in (("log.md", log_writers), ("held.md", held_writers)):
        total = sum(len(w.acked) for w in writers)
        for text in (
            sync_rig.store.read(name)[0].decode(),
            (sync_rig.dir / name).read_text(),
            (mount.mountpoint / name).read_text(),
        ):
            assert len(text.split()) == total, name
            check_list(text, writers)
    assert _files(sync_rig) == ({"log.md", "held.md"}, {"log.md", "held.md"})


@pytest.mark.parametrize("change", ["edited", "deleted"])
def test_a_file_held_open_for_writing_is_never_swapped_under_its_writer(
    sync_rig: SyncRig, change: str
) -> None:
    """A program holding a file in DIR open for writing writes to that file: were the
    mirror to rename the store's version over it (or unlink it) now, the next writes
    would go to a file no longer in DIR. It waits for the close, then merges."""
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
    expected = b"base\nagent\nperson\n" if change == "edited" else b"base\nperson\n"
    wait_for(lambda: sync_rig.remote_has("held.md", expected), what="the merge in the store")
    sync_rig.settle()
    assert sync_rig.disk() == sync_rig.remote() == {"held.md": expected}


def test_whole_saves_in_dir_and_on_the_mount_both_stay(
    sync_rig: SyncRig, mount_factory: Callable[..., MountHandle]
) -> None:
    # A person's editor saves the whole file in DIR, an agent saves the whole file on
    # the mount, both from the same revision: one merge (the store's rule) keeps both.
    mount, _, store = _start(sync_rig, mount_factory, "MEMORY.md")
    sync_rig.stop()
    (mount.mountpoint / "MEMORY.md").write_text("# Memory\n- one\n- two\n")
    wait_for(lambda: b"two" in store.read("MEMORY.md")[0], what="the first save in the store")
    sync_rig.once()
    assert sync_rig.disk_has("MEMORY.md", b"# Memory\n- one\n- two\n")
    text = (mount.mountpoint / "MEMORY.md").read_text()
    (mount.mountpoint / "MEMORY.md").write_text(text + "- from the agent\n")
    wait_for(lambda: b"agent" in store.read("MEMORY.md")[0], what="the agent's save in the store")
    sync_rig.write("MEMORY.md", "# Memory\n- from the person\n- one\n- two\n")
    sync_rig.once()
    both = b"# Memory\n- from the person\n- one\n- two\n- from the agent\n"
    assert store.read("MEMORY.md")[0] == both
    assert sync_rig.disk_has("MEMORY.md", both)
    wait_for(lambda: (mount.mountpoint / "MEMORY.md").read_bytes() == both, what="on the mount")
    assert not [p for p in sync_rig.disk() if "conflict" in p]
