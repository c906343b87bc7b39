"""Many writers, one memory: a Jepsen-style list-append run over two mounts of one store.

Writers append unique tokens to one file, ``log.md``, through every door at once, with
random pauses: a shell's ``echo >>`` (O_APPEND) on each mount, ``memfs tool`` (insert at
line 0) on one, an MCP client (insert at line 0) on the other, and threads of one
process's handler on a mount. Each writer records what was acknowledged (an ``echo``
that exited 0, a result that was not an error). Meanwhile a process holding
``other.md`` open with O_APPEND writes to it every few milliseconds, ``memfs restore``
puts ``other.md``'s first revision back, and ``memfs undo`` takes back one actor's
create. One variant kills a daemon with ``kill -9`` halfway and mounts it again.

At the end (and again after every mount was unmounted and mounted anew):

- every acknowledged token is in ``log.md`` exactly once, each writer's in its own
  order (appends in file order, inserts at line 0 in reverse), and no door answered an
  error (no ESTALE, no "kept changing");
- ``other.md`` is the restored revision plus every append acknowledged after the
  restore, none from before it: a restore is never reverted by writes that predate it;
- the undone create is gone.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from memfs.backing import Backing, store_behind
from memfs.handler import MemoryHandler
from memfs.mount import state
from memfs.mount.ops import MountOptions
from memfs.store import open_store
from tests.fixtures.mcp import stdio_client, text_of
from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.postgres import PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))
SHELL_APPENDS = 60
TOOL_INSERTS = 25
MCP_INSERTS = 20
THREADS, THREAD_INSERTS = 4, 6
HOLDER_APPENDS = 80


@dataclass
class Writer:
    """One writer's acknowledged tokens, in the order they were acknowledged."""

    tag: str
    appends: bool  # True: tokens go at the end; False: inserted at line 0 (reverse)
    acked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, token: str) -> None:
        with self.lock:
            self.acked.append(token)


def _insert(token: str) -> dict[str, Any]:
    return {
        "command": "insert",
        "path": "/memories/log.md",
        "insert_line": 0,
        "insert_text": token + "\n",
    }


def _shell(
    mount: Path, writer: Writer, count: int, tmp: Path, keep_going: bool = False
) -> subprocess.Popen[str]:
    """``echo TOKEN >> log.md`` ``count`` times, each acknowledged into an ack file;
    ``keep_going``: an append that fails is noted in a fail file and the next one tried
    (a writer that does not stop at its first error), else the writer stops there."""
    ack, fail = tmp / f"{writer.tag}.ack", tmp / f"{writer.tag}.fail"
    failed = 'echo "$i" >> "$3"; continue' if keep_going else "exit 0"
    script = (
        f'for i in $(seq {count}); do echo "{writer.tag}-$i" >> "$1" || {{ {failed}; }};'
        ' echo "' + writer.tag + '-$i" >> "$2"; sleep 0.00$((RANDOM % 8)); done'
    )
    return subprocess.Popen(
        ["bash", "-c", script, "bash", str(mount / "log.md"), str(ack), str(fail)],
        text=True,
        stderr=subprocess.DEVNULL,
    )


def _collect_shell(writer: Writer, tmp: Path) -> None:
    ack = tmp / f"{writer.tag}.ack"
    writer.acked = ack.read_text().split() if ack.exists() else []


def _tool(root: Path, writer: Writer, count: int, env: dict[str, str]) -> None:
    """``memfs tool --root ROOT`` over a pipe, one insert per line."""
    proc = subprocess.Popen(
        [MEMFS, "tool", "--root", str(root), "--actor", writer.tag],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for i in range(1, count + 1):
            token = f"{writer.tag}-{i}"
            proc.stdin.write(json.dumps(_insert(token)) + "\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            if answer["is_error"]:
                writer.errors.append(answer["content"])
            else:
                writer.ack(token)
            time.sleep(random.uniform(0, 0.01))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _backing(root: Path) -> Backing:
    backing = store_behind(root)
    assert backing is not None and backing.mounted
    return backing


def _threads(root: Path, backing: Backing, writer: Writer, threads: int, count: int) -> None:
    """Threads of one process sharing one handler on a mount's store."""
    handler = MemoryHandler(
        root,
        store=backing.store,
        store_prefix=backing.prefix,
        neighbours=backing.link,
        actor=writer.tag,
    )

    def one(t: int) -> None:
        for i in range(1, count + 1):
            token = f"{writer.tag}{t}-{i}"
            result = handler.execute(_insert(token))
            if result.is_error:
                writer.errors.append(str(result.content))
            else:
                writer.ack(token)

    workers = [threading.Thread(target=one, args=(t,)) for t in range(threads)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=120)
    finally:
        backing.close()


def _mcp(root: Path, writer: Writer, count: int, env: dict[str, str]) -> None:
    async def run() -> None:
        args = ["--root", str(root)]
        async with stdio_client(args, name=writer.tag, env=env) as (client, _):
            for i in range(1, count + 1):
                token = f"{writer.tag}-{i}"
                result = await client.call_tool("memory", _insert(token))
                if result.is_error:
                    writer.errors.append(text_of(result))
                else:
                    writer.ack(token)
                await anyio.sleep(random.uniform(0, 0.01))

    anyio.run(run)


HOLDER = """
import os, sys, time
path, count, ack = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
with open(ack, "w") as out:
    for i in range(1, count + 1):
        try:
            os.write(fd, f"H-{i}\\n".encode())
        except OSError:
            break
        out.write(f"{time.monotonic()} H-{i}\\n")
        out.flush()
        # Pacing, not waiting: one write every 20 ms through a descriptor held open all
        # along, so the other writers (and the restore, undo and kill -9) come between.
        time.sleep(0.02)
"""


def _holder(mount: Path, tmp: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER,
            str(mount / "other.md"),
            str(HOLDER_APPENDS),
            str(tmp / "H"),
        ],
        text=True,
    )


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMFS, *args], capture_output=True, text=True, timeout=60, **kwargs)


def _check_log(text: str, writers: list[Writer]) -> None:
    lines = text.split()
    for w in writers:
        assert w.errors == [], (w.tag, w.errors[:3])
        mine = [line for line in lines if line.rsplit("-", 1)[0].rstrip("0123456789") == w.tag]
        if not w.appends:
            mine.reverse()
        acked = set(w.acked)
        # Exactly once each; an append whose echo died with a daemon may be there or not.
        assert len(mine) == len(set(mine)), f"{w.tag}: a token twice"
        assert acked <= set(mine), f"{w.tag}: lost {sorted(acked - set(mine))[:5]}"
        if w.appends:
            # An append that failed (the daemon killed under it) may have landed, before
            # later ones: the acknowledged ones keep their order among themselves.
            assert [t for t in mine if t in acked] == w.acked, f"{w.tag}: out of its order"
        else:
            for sub in {t.rsplit("-", 1)[0] for t in mine}:
                own = [t for t in mine if t.rsplit("-", 1)[0] == sub]
                assert own == sorted(own, key=lambda t: int(t.rsplit("-", 1)[1])), sub


def _acks(tmp: Path) -> list[list[str]]:
    """The holder's acknowledgements: (monotonic time, token) each."""
    return [line.split() for line in (tmp / "H").read_text().splitlines()]


def _acked_after(tmp: Path, ended: float) -> list[str]:
    return [tok for at, tok in _acks(tmp) if float(at) > ended]


def _check_restore(text: str, tmp: Path, started: float, ended: float) -> None:
    """other.md: the restored first revision, then what was acknowledged after the
    restore, in order; nothing acknowledged before it (the restore replaced that)."""
    lines = text.splitlines()
    assert lines[0] == "base"
    before = {tok for at, tok in _acks(tmp) if float(at) < started}
    after = _acked_after(tmp, ended)
    assert before.isdisjoint(lines), f"reverted: {sorted(before & set(lines))[:5]}"
    assert [t for t in lines[1:] if t in after] == after, "lost or reordered after the restore"
    assert len(lines[1:]) == len(set(lines[1:]))


@dataclass
class Host:
    """A mount and the state directory of the machine it is on (two hosts: two)."""

    mount: MountHandle
    state_dir: str

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, state.STATE_DIR_ENV: self.state_dir}

    def __enter__(self) -> MountHandle:
        self._saved = os.environ[state.STATE_DIR_ENV]
        os.environ[state.STATE_DIR_ENV] = self.state_dir
        return self.mount

    def __exit__(self, *exc: object) -> None:
        os.environ[state.STATE_DIR_ENV] = self._saved


def _scenario(ha: Host, hb: Host, tmp: Path, *, kill: bool = False) -> None:
    a, b = ha.mount, hb.mount
    (a.mountpoint / "log.md").write_text("")
    (a.mountpoint / "other.md").write_text("base\n")
    store = a.store()
    wait_for(lambda: store.read("other.md")[0] == b"base\n", 10, what="other.md committed")
    base_rev = store.stat("other.md").rev
    wait_for(lambda: (b.mountpoint / "log.md").exists(), 10, what="log.md on b")

    writers = [
        Writer("sha", True),
        # Two appenders on one mount: each turn of them is a commit, so commits come
        # between the parts of a write(2) the kernel splits at a page, if any can.
        Writer("shc", True),
        Writer("shb", True),
        Writer("tool", False),
        Writer("mcpb", False),
        Writer("thr", False),
    ]
    by = {w.tag: w for w in writers}
    shells = [
        _shell(a.mountpoint, by["sha"], SHELL_APPENDS, tmp),
        _shell(a.mountpoint, by["shc"], SHELL_APPENDS, tmp),
        # Killed under it, b's writer goes on until well after its daemon is back.
        _shell(b.mountpoint, by["shb"], SHELL_APPENDS * (8 if kill else 1), tmp, kill),
    ]
    holder = _holder(a.mountpoint, tmp)
    with hb:
        b_backing = _backing(b.mountpoint)
    jobs: list[tuple[Callable[..., None], tuple[Any, ...]]] = [
        (_tool, (a.mountpoint, by["tool"], TOOL_INSERTS, ha.env)),
        (_mcp, (b.mountpoint, by["mcpb"], MCP_INSERTS, hb.env)),
        (_threads, (b.mountpoint, b_backing, by["thr"], THREADS, THREAD_INSERTS)),
    ]
    failures: list[BaseException] = []

    def guarded(fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # reported by the test, not lost on a thread
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=job) for job in jobs]
    for t in threads:
        t.start()

    # The faults, while all of that runs.
    wait_for(lambda: len((tmp / "H").read_text().splitlines()) >= 15, 30, what="holder")
    created = _run(
        ["tool", "--root", str(a.mountpoint), "--actor", "scratcher"],
        input=json.dumps({"command": "create", "path": "/memories/scratch.md", "file_text": "x\n"}),
        env=ha.env,
    )
    assert '"is_error": false' in created.stdout, created.stdout
    started = time.monotonic()
    restored = _run(
        ["restore", "other.md", "--rev", str(base_rev), "--store", a.store_url], env=ha.env
    )
    ended = time.monotonic()
    assert restored.returncode == 0, restored.stderr
    undone = _run(["undo", "--author", "scratcher", "--store", a.store_url], env=ha.env)
    assert undone.returncode == 0, undone.stderr
    if kill:
        with hb:
            b.kill9()
            # Writes to the dead mount fail (ENOTCONN): none lands in the bare directory
            # under it, where nothing would save it. Mounted again once some have failed.
            fails = tmp / "shb.fail"
            wait_for(
                lambda: fails.exists() and len(fails.read_text().split()) >= 3,
                60,
                what="b's writer refused by the dead mount",
            )
            b.restart()

    for p in shells:
        assert p.wait(timeout=120) == 0
    assert holder.wait(timeout=120) == 0
    for t in threads:
        t.join(timeout=180)
    b_backing.close()
    assert failures == []
    for tag in ("sha", "shc", "shb"):
        _collect_shell(by[tag], tmp)
    assert len(by["sha"].acked) == len(by["shc"].acked) == SHELL_APPENDS
    if not kill:
        assert len(by["shb"].acked) == SHELL_APPENDS

    def settled() -> bool:
        # Every mount's buffers committed: the store holds every acknowledged token (the
        # holder's last appends wait out mount a's quiet period like any write).
        text = store.read("log.md")[0].decode()
        other = set(store.read("other.md")[0].decode().split())
        return (
            all(set(w.acked) <= set(text.split()) for w in writers)
            and set(_acked_after(tmp, ended)) <= other
        )

    wait_for(settled, 30, what="every acknowledged append in the store")
    _check_log(store.read("log.md")[0].decode(), writers)
    _check_restore(store.read("other.md")[0].decode(), tmp, started, ended)
    assert not (a.mountpoint / "scratch.md").exists()
    for m in (a, b):

        def shows_the_store(m: MountHandle = m) -> bool:
            return (m.mountpoint / "log.md").read_text() == store.read("log.md")[0].decode()

        assert wait_for(shows_the_store, 10, what=f"{m.mountpoint} showing the store")
    # Everything survives an unmount and a mount of both.
    for host in (ha, hb):
        with host as m:
            m.stop()
            m.restart()
    with open_store(a.store_url) as fresh:
        _check_log(fresh.read("log.md")[0].decode(), writers)
    _check_log((b.mountpoint / "log.md").read_text(), writers)


Pair = Callable[..., tuple[Host, Host]]


@pytest.fixture
def two_mounts(mount_factory: Callable[..., MountHandle], tmp_path: Path) -> Iterator[Pair]:
    """``make(url=None, options=None, hosts=1)``: two mounts of one store, on one machine
    or (``hosts=2``) as two machines, each with its own state directory."""

    def make(
        url: str | None = None, options: MountOptions | None = None, hosts: int = 1
    ) -> tuple[Host, Host]:
        here = os.environ[state.STATE_DIR_ENV]
        a = Host(mount_factory("a", store_url=url, options=options), here)
        there = here
        if hosts == 2:
            there = str(tmp_path / "host-b-state")
            os.makedirs(there)
        b = Host(MountHandle(tmp_path / "b", a.mount.store_url, None, options), there)
        with b:
            b.mount.start()
        made.append(b)
        return a, b

    made: list[Host] = []
    yield make
    for host in made:
        with host as m:
            assert m.teardown() == []


def test_every_acknowledged_append_survives_two_sqlite_mounts(
    two_mounts: Pair, tmp_path: Path
) -> None:
    _scenario(*two_mounts(), tmp_path)


def test_the_same_with_commit_on_close(two_mounts: Pair, tmp_path: Path) -> None:
    _scenario(*two_mounts(options=MountOptions(commit_on_close=True)), tmp_path)


def test_the_same_when_one_daemon_is_killed_and_mounted_again(
    two_mounts: Pair, tmp_path: Path
) -> None:
    _scenario(*two_mounts(), tmp_path, kill=True)


def test_every_acknowledged_append_survives_two_postgresql_hosts(
    two_mounts: Pair, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    _scenario(*two_mounts(url=pg_cluster.url("many-writers"), hosts=2), tmp_path)


def test_threads_on_one_mount_never_see_estale(memfs_mount: MountHandle, tmp_path: Path) -> None:
    """50 threads of one handler on one mount, inserting into one file (the issue's
    ESTALE case): every insert is acknowledged and there."""
    (memfs_mount.mountpoint / "log.md").write_text("")
    writer = Writer("t", False)
    backing = _backing(memfs_mount.mountpoint)
    try:
        _threads(memfs_mount.mountpoint, backing, writer, 50, 4)
    finally:
        backing.close()
    assert len(writer.acked) == 200
    _check_log((memfs_mount.mountpoint / "log.md").read_text(), [writer])
