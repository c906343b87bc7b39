"""The FUSE operations, through real mounts of real SQLite stores.

Each test mounts with ``memfs.mount.fuse.serve`` in a child process (a local fixture:
the shared mount fixture belongs to the lifecycle tests) and reads the store file
directly from this process to check what was committed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memfs.errors import MountError, NotFound
from memfs.mount.writes import SYNC_IN_JOURNAL_FROM
from memfs.paths import name_problem
from memfs.store import open_store
from memfs.store.base import Store
from tests.fixtures.mount import made_by
from tests.fixtures.waiting import wait_for as shared_wait_for

pytestmark = [
    pytest.mark.fuse,
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="needs /dev/fuse"),
]

SERVE = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from memfs.store import open_store
from memfs.mount.daemon import reset_stop_signals
from memfs.mount.fuse import serve
from memfs.mount.options import MountOptions
reset_stop_signals()  # as the daemon's entry does: the signals may come in ignored
store = open_store(sys.argv[1])
def ready():
    sys.stdout.write("READY\\n")
    sys.stdout.flush()
serve(store, sys.argv[2], options=MountOptions(**json.loads(sys.argv[3])), ready=ready)
store.close()
"""

START_DEADLINE_S = 20.0
STOP_DEADLINE_S = 15.0
# Change-feed poll interval used by these mounts, and the slack allowed on top of it for
# a loaded 2-core machine: a reader must see another writer's change within this.
POLL_S = 0.1
VISIBLE_DEADLINE_S = POLL_S * 30

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


@dataclass
class Mount:
    path: Path
    db: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """``sig``, then the last resorts; returns the serving process's exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=STOP_DEADLINE_S)
        if self.proc.poll() is None or os.path.ismount(self.path):
            subprocess.run(["fusermount3", "-uz", str(self.path)], capture_output=True, check=False)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_DEADLINE_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


def start_mount(
    db: Path | str, mnt: Path, env: dict[str, str] | None = None, **options: Any
) -> Mount:
    options.setdefault("poll_interval", POLL_S)
    mnt.mkdir(parents=True, exist_ok=True)
    log = mnt.parent / f"{mnt.name}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, str(db), str(mnt), json.dumps(options)],
            stdout=subprocess.PIPE,
            stderr=err,
            # The daemon's journal goes beside the mount, not into the user's state dir.
            env={
                **os.environ,
                "MEMFS_STATE_DIR": str(mnt.parent / f"{mnt.name}.state"),
                **(env or {}),
            },
            cwd=Path(__file__).resolve().parents[1],
        )
    mount = Mount(mnt, Path(str(db).split("?")[0].removeprefix("sqlite://")), proc, log)
    assert proc.stdout is not None
    deadline = time.monotonic() + START_DEADLINE_S
    line = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            line = proc.stdout.readline()
            break
        if proc.poll() is not None:
            break
    if line.strip() != b"READY":
        mount.stop()
        raise AssertionError(f"mount did not come up: {log.read_text(errors='replace')}")
    return mount


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Callable[..., Mount]]:
    started: list[Mount] = []

    def make(name: str = "mnt", db: Path | None = None, **options: Any) -> Mount:
        m = start_mount(db or tmp_path / "store.db", tmp_path / name, **options)
        started.append(m)
        return m

    yield make
    for m in reversed(started):
        m.stop()


@pytest.fixture
def mnt(mounts: Callable[..., Mount]) -> Mount:
    return mounts()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(str(tmp_path / "store.db"))
    yield s
    s.close()


def wait_for(check: Callable[[], bool], deadline_s: float, what: str) -> float:
    """The shared wait, also saying how long it took (for a quiet period's tests)."""
    start = time.monotonic()
    shared_wait_for(check, timeout=deadline_s, what=what)
    return time.monotonic() - start


def write_synced(path: Path, data: bytes, mode: str = "wb") -> None:
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def renameat2(src: Path, dst: Path, flags: int) -> int:
    rc = libc.renameat2(AT_FDCWD, bytes(src), AT_FDCWD, bytes(dst), flags)
    return 0 if rc == 0 else ctypes.get_errno()


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path: Path, atime: tuple[int, int], mtime: tuple[int, int]) -> None:
    times = (Timespec * 2)(Timespec(*atime), Timespec(*mtime))
    if libc.utimensat(AT_FDCWD, bytes(path), times, 0) != 0:
        raise OSError(ctypes.get_errno(), "utimensat")


# --- content ---------------------------------------------------------------------------


def test_create_read_overwrite_append(mnt: Mount, store: Store) -> None:
    f = mnt.path / "notes.md"
    write_synced(f, b"hello world")
    assert f.read_bytes() == b"hello world"
    write_synced(f, b"bye")
    assert f.read_bytes() == b"bye"
    write_synced(f, b" and more", "ab")
    assert f.read_bytes() == b"bye and more"
    assert store.read("notes.md")[0] == b"bye and more"
    assert f.stat().st_size == len(b"bye and more")


def test_shorter_overwrite_through_shell_leaves_no_tail(mnt: Mount, store: Store) -> None:
    out = subprocess.run(
        ["sh", "-c", "printf 'long text' > f; printf x > f; cat f"],
        cwd=mnt.path,
        capture_output=True,
        timeout=30,
        check=True,
    )
    assert out.stdout == b"x"
    fd = os.open(mnt.path / "f", os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    assert (mnt.path / "f").read_bytes() == b""
    os.sync()
    wait_for(lambda: store.read("f")[0] == b"", 5, "O_TRUNC committed")


def test_truncate_shrinks_and_zero_extends(mnt: Mount, store: Store) -> None:
    f = mnt.path / "t"
    write_synced(f, b"0123456789")
    os.truncate(f, 3)
    assert f.read_bytes() == b"012"
    os.truncate(f, 6)
    assert f.read_bytes() == b"012\0\0\0"
    with open(f, "rb+") as fh:
        os.fsync(fh.fileno())
    assert store.read("t")[0] == b"012\0\0\0"


def test_large_file_round_trip(mnt: Mount, store: Store) -> None:
    data = os.urandom(3 << 20)
    write_synced(mnt.path / "big.bin", data)
    assert (mnt.path / "big.bin").read_bytes() == data
    assert store.read("big.bin")[0] == data


def test_write_without_fsync_reaches_store_after_quiet_period(mnt: Mount, store: Store) -> None:
    (mnt.path / "q").write_bytes(b"quiet")
    took = wait_for(lambda: store.read("q")[0] == b"quiet", 5, "quiet-period commit")
    assert took < 5


def test_a_write_past_the_size_cap_is_refused_by_the_call_itself(
    tmp_path: Path, store: Store
) -> None:
    m = start_mount(f"sqlite://{tmp_path / 'store.db'}?max_file_bytes=1000", tmp_path / "capped")
    try:
        f = m.path / "big.md"
        fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            assert os.write(fd, b"x" * 600) == 600
            with pytest.raises(OSError) as e:
                os.pwrite(fd, b"y" * 500, 600)  # would end at 1,100 bytes
            assert e.value.errno == errno.EFBIG
            with pytest.raises(OSError) as e:
                os.ftruncate(fd, 999_999_999_999_999)
            assert e.value.errno == errno.EFBIG
            os.fsync(fd)  # what was acknowledged commits fine
        finally:
            os.close(fd)
        assert store.read("big.md")[0] == b"x" * 600
        assert f.read_bytes() == b"x" * 600
        with pytest.raises(OSError) as e:
            os.truncate(f, 1001)
        assert e.value.errno == errno.EFBIG
        os.truncate(f, 1000)  # exactly the cap is fine
        wait_for(lambda: store.read("big.md")[0] == b"x" * 600 + b"\0" * 400, 10, "commit")
    finally:
        assert m.stop() == 0


def test_one_revision_per_write_and_fsync(mnt: Mount, store: Store) -> None:
    f = mnt.path / "rev.md"
    with open(f, "wb") as fh:
        for chunk in (b"a" * 5000, b"b" * 5000, b"c" * 10):
            fh.write(chunk)
            fh.flush()
        os.fsync(fh.fileno())
    assert len(store.history("rev.md")) == 1
    with open(f, "r+b") as fh:
        fh.seek(100)
        fh.write(b"XYZ")
        fh.flush()
        fh.truncate(4000)
        fh.write(b"tail")
        fh.flush()
        os.fsync(fh.fileno())
    history = store.history("rev.md")
    assert len(history) == 2
    assert history[0].size == 4000
    content = store.read("rev.md")[0]
    assert content == f.read_bytes()


def test_parallel_writers_and_readers(mnt: Mount, store: Store) -> None:
    import threading

    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            d = mnt.path / f"w{n}"
            d.mkdir()
            for i in range(15):
                data = f"writer {n} file {i}\n".encode() * (i + 1)
                write_synced(d / f"f{i}", data)
                assert (d / f"f{i}").read_bytes() == data
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    reader = subprocess.run(["grep", "-r", "-c", "writer", str(mnt.path)], timeout=60)
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert reader.returncode in (0, 1)
    for n in range(4):
        for i in range(15):
            expected = f"writer {n} file {i}\n".encode() * (i + 1)
            assert store.read(f"w{n}/f{i}")[0] == expected


def test_temp_file_pattern_makes_one_revision_with_its_mode(mnt: Mount, store: Store) -> None:
    fd = os.open(mnt.path / ".tmp-x", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o640)
        os.write(fd, b"final content")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(mnt.path / ".tmp-x", mnt.path / "x.md")
    history = store.history("x.md")
    assert [r.size for r in history] == [len(b"final content")]
    assert store.stat("x.md").mode == 0o640
    assert stat.S_IMODE(os.stat(mnt.path / "x.md").st_mode) == 0o640


def test_author_is_the_writing_program(mnt: Mount, store: Store) -> None:
    code = (
        "import os, sys\n"
        "with open(sys.argv[1], 'wb') as f:\n"
        "    f.write(b'by child'); f.flush(); os.fsync(f.fileno())\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(mnt.path / "who.md")])
    assert child.wait(timeout=30) == 0
    made = store.history("who.md")[0]
    actor, detail = made_by(store, "who.md", made.rev)
    assert made.author == actor and detail == f"pid {child.pid}"
    assert actor.endswith(" (python3)") or actor.endswith(" (python)"), actor


def test_open_unlinked_created_file_stays_usable_until_closed(mnt: Mount, store: Store) -> None:
    f = mnt.path / "scratch"
    with open(f, "w+b") as fh:
        fh.write(b"first part")
        fh.flush()
        os.unlink(f)
        assert not f.exists()
        fh.seek(0)
        assert fh.read() == b"first part"
        fh.write(b" second part")
        fh.flush()
        fh.seek(0)
        assert fh.read() == b"first part second part"
        # (fstat here may answer ESTALE: the kernel sends GETATTR without the handle.)
    with pytest.raises(NotFound):
        store.stat("scratch")


# --- namespace -------------------------------------------------------------------------


def test_mkdir_rmdir_unlink(mnt: Mount, store: Store) -> None:
    d = mnt.path / "dir"
    d.mkdir()
    write_synced(d / "x", b"1")
    assert sorted(os.listdir(d)) == ["x"]
    with pytest.raises(OSError) as e:
        d.rmdir()
    assert e.value.errno == errno.ENOTEMPTY
    with pytest.raises(OSError) as e:
        os.unlink(d)
    assert e.value.errno in (errno.EISDIR, errno.EPERM)
    (d / "x").unlink()
    d.rmdir()
    assert not d.exists()
    with pytest.raises(NotFound):
        store.stat("dir")


def test_listing_includes_created_but_uncommitted_files(mounts: Callable[..., Mount]) -> None:
    m = mounts(commit_quiet_period=30.0)
    (m.path / "pending").write_bytes(b"p")
    assert "pending" in os.listdir(m.path)
    assert (m.path / "pending").read_bytes() == b"p"


def test_listings_follow_every_change_at_once(mnt: Mount) -> None:
    d = mnt.path / "l"
    d.mkdir()
    assert os.listdir(d) == []
    write_synced(d / "a", b"a")
    assert sorted(os.listdir(d)) == ["a"]
    (d / "sub").mkdir()
    os.symlink("t", d / "ln")
    assert sorted(os.listdir(d)) == ["a", "ln", "sub"]
    os.rename(d / "a", d / "sub" / "b")
    assert sorted(os.listdir(d)) == ["ln", "sub"]
    assert os.listdir(d / "sub") == ["b"]
    os.unlink(d / "ln")
    os.unlink(d / "sub" / "b")
    (d / "sub").rmdir()
    assert os.listdir(d) == []
    assert [e.name for e in os.scandir(d)] == []


def test_listing_many_and_non_ascii_names_with_types(mnt: Mount) -> None:
    names = [f"note-{i:03d}.md" for i in range(300)] + ["café.md", "日本語.txt", "a b"]
    for name in names:
        (mnt.path / name).write_bytes(name.encode())
    (mnt.path / "sub dir").mkdir()
    os.symlink("x", mnt.path / "ln")
    with os.scandir(mnt.path) as it:
        kinds = {e.name: (e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it}
    assert set(kinds) == {*names, "sub dir", "ln"}
    assert kinds["sub dir"] == (True, False)
    assert kinds["ln"] == (False, True)
    assert kinds["café.md"] == (False, False)


def test_rename_file_dir_and_onto_existing(mnt: Mount, store: Store) -> None:
    write_synced(mnt.path / "a", b"A")
    write_synced(mnt.path / "b", b"B")
    os.rename(mnt.path / "a", mnt.path / "b")
    assert (mnt.path / "b").read_bytes() == b"A"
    assert not (mnt.path / "a").exists()
    (mnt.path / "d1").mkdir()
    write_synced(mnt.path / "d1" / "f", b"F")
    os.rename(mnt.path / "d1", mnt.path / "d2")
    assert (mnt.path / "d2" / "f").read_bytes() == b"F"
    assert store.read("d2/f")[0] == b"F"
    assert store.read("b")[0] == b"A"


def test_rename_of_unsynced_file_keeps_its_content(mnt: Mount, store: Store) -> None:
    # The editor pattern: write a temp file, rename it over the original.
    write_synced(mnt.path / "doc", b"old")
    (mnt.path / "doc.tmp").write_bytes(b"new content")
    os.rename(mnt.path / "doc.tmp", mnt.path / "doc")
    assert (mnt.path / "doc").read_bytes() == b"new content"
    assert store.read("doc")[0] == b"new content"


def test_rename_noreplace_refuses_existing_destination(mnt: Mount, store: Store) -> None:
    write_synced(mnt.path / "src", b"S")
    write_synced(mnt.path / "dst", b"D")
    assert renameat2(mnt.path / "src", mnt.path / "dst", 1) == errno.EEXIST
    assert (mnt.path / "dst").read_bytes() == b"D"
    assert (mnt.path / "src").read_bytes() == b"S"
    assert renameat2(mnt.path / "src", mnt.path / "new", 1) == 0
    assert store.read("new")[0] == b"S"


def test_rename_exchange_is_refused(mnt: Mount, store: Store) -> None:
    write_synced(mnt.path / "one", b"1")
    write_synced(mnt.path / "two", b"2")
    assert renameat2(mnt.path / "one", mnt.path / "two", 2) == errno.EINVAL
    assert (mnt.path / "one").read_bytes() == b"1"
    assert (mnt.path / "two").read_bytes() == b"2"
    assert store.read("two")[0] == b"2"


def test_symlink_is_stored_as_data(mnt: Mount, store: Store) -> None:
    os.symlink("user@host.1234:1700000000", mnt.path / ".#notes.md")
    assert os.readlink(mnt.path / ".#notes.md") == "user@host.1234:1700000000"
    assert stat.S_ISLNK(os.lstat(mnt.path / ".#notes.md").st_mode)
    entry = store.stat(".#notes.md")
    assert entry.kind == "symlink"
    assert entry.target == "user@host.1234:1700000000"
    os.unlink(mnt.path / ".#notes.md")
    assert not os.path.lexists(mnt.path / ".#notes.md")


def test_hard_link_is_refused(mnt: Mount) -> None:
    write_synced(mnt.path / "orig", b"o")
    with pytest.raises(OSError) as e:
        os.link(mnt.path / "orig", mnt.path / "copy")
    assert e.value.errno in (errno.EPERM, errno.ENOTSUP)
    assert not (mnt.path / "copy").exists()


EDITOR_NAMES = [
    "4913",
    ".notes.md.swp",
    ".notes.md.swx",
    "notes.md___jb_tmp___",
    "notes.md___jb_old___",
    ".goutputstream-K3Z1Q2",
    "notes.md~",
    "#notes.md#",
]


@pytest.mark.parametrize("name", EDITOR_NAMES)
def test_editor_temp_names_pass_the_gate(mnt: Mount, name: str) -> None:
    assert name_problem(name) is None
    write_synced(mnt.path / name, b"tmp")
    assert (mnt.path / name).read_bytes() == b"tmp"


def test_git_lock_files_and_emacs_lock_links_work(mnt: Mount, store: Store) -> None:
    (mnt.path / ".git").mkdir()
    fd = os.open(mnt.path / ".git" / "index.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, b"lock")
    os.fsync(fd)
    os.close(fd)
    with pytest.raises(FileExistsError):
        os.open(mnt.path / ".git" / "index.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.rename(mnt.path / ".git" / "index.lock", mnt.path / ".git" / "index")
    assert store.read(".git/index")[0] == b"lock"


BAD_NAMES = [
    "con",
    ".memfs-state",
    "tab\there",
    "e\u0301",
    "trailing.",
    "zero\u200bwidth",
    "%2e%2e",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_gate_refuses_names_the_model_could_not_address(
    mnt: Mount, store: Store, name: str
) -> None:
    assert name_problem(name) is not None
    for make in (
        lambda p: p.write_bytes(b"x"),
        lambda p: p.mkdir(),
        lambda p: os.symlink("t", p),
    ):
        with pytest.raises(OSError) as e:
            make(mnt.path / name)
        assert e.value.errno == errno.EINVAL
    write_synced(mnt.path / "good", b"keep me")
    with pytest.raises(OSError) as e:
        os.rename(mnt.path / "good", mnt.path / name)
    assert e.value.errno == errno.EINVAL
    assert (mnt.path / "good").read_bytes() == b"keep me"
    assert [e.name for e in store.listdir("")] == ["good"]
    assert "refused to create" in mnt.log.read_text(errors="replace")


# --- attributes ------------------------------------------------------------------------


def test_chmod_chown(mnt: Mount, store: Store) -> None:
    f = mnt.path / "perm"
    write_synced(f, b"p")
    os.chmod(f, 0o640)
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert store.stat("perm").mode == 0o640
    if os.getuid() == 0:
        os.chown(f, 1234, 5678)
        st = f.stat()
        assert (st.st_uid, st.st_gid) == (1234, 5678)
        os.chown(f, -1, 42)
        assert (f.stat().st_uid, f.stat().st_gid) == (1234, 42)


def test_utimens_with_ns_omit_and_now(mnt: Mount, store: Store) -> None:
    f = mnt.path / "times"
    write_synced(f, b"t")
    os.utime(f, ns=(1_600_000_000_123_456_789, 1_700_000_000_987_654_321))
    st = f.stat()
    assert st.st_mtime_ns == 1_700_000_000_987_654_321
    assert st.st_atime_ns > 10**18  # never 1970
    assert store.stat("times").mtime_ns == 1_700_000_000_987_654_321
    # atime only (mtime UTIME_OMIT): mtime must not move.
    utimensat(f, (1_650_000_000, 0), (0, UTIME_OMIT))
    assert f.stat().st_mtime_ns == 1_700_000_000_987_654_321
    before = time.time_ns()
    utimensat(f, (0, UTIME_OMIT), (0, UTIME_NOW))
    assert f.stat().st_mtime_ns >= before - 10**9
    os.symlink("x", mnt.path / "ln")
    os.utime(mnt.path / "ln", ns=(1_600_000_000_000_000_000,) * 2, follow_symlinks=False)
    assert os.lstat(mnt.path / "ln").st_mtime_ns == 1_600_000_000_000_000_000


def test_statfs(mnt: Mount) -> None:
    write_synced(mnt.path / "s", b"x" * 10000)
    sv = os.statvfs(mnt.path)
    assert sv.f_namemax == 255
    assert sv.f_bavail > 0
    assert sv.f_files > sv.f_ffree >= 0


# --- other writers ----------------------------------------------------------------------


def test_outside_store_writes_show_up_within_the_bound(mnt: Mount, store: Store) -> None:
    write_synced(mnt.path / "shared.md", b"version one")
    assert (mnt.path / "shared.md").read_bytes() == b"version one"
    assert os.listdir(mnt.path) == ["shared.md"]
    store.write("shared.md", b"version two, longer", author="test")
    wait_for(
        lambda: (mnt.path / "shared.md").read_bytes() == b"version two, longer",
        VISIBLE_DEADLINE_S,
        "outside write visible",
    )
    store.write("fresh.md", b"new", author="test")
    wait_for(lambda: "fresh.md" in os.listdir(mnt.path), VISIBLE_DEADLINE_S, "new name listed")
    assert (mnt.path / "fresh.md").read_bytes() == b"new"
    store.delete("shared.md", author="test")
    wait_for(
        lambda: not (mnt.path / "shared.md").exists() and "shared.md" not in os.listdir(mnt.path),
        VISIBLE_DEADLINE_S,
        "outside delete visible",
    )


def test_two_mounts_of_one_store_see_each_other(mounts: Callable[..., Mount]) -> None:
    a = mounts("a")
    b = mounts("b")
    write_synced(a.path / "x.md", b"from a")
    wait_for(lambda: (b.path / "x.md").read_bytes() == b"from a", VISIBLE_DEADLINE_S, "a->b")
    write_synced(b.path / "x.md", b"b rewrote it")
    wait_for(lambda: (a.path / "x.md").read_bytes() == b"b rewrote it", VISIBLE_DEADLINE_S, "b->a")
    os.rename(a.path / "x.md", a.path / "y.md")
    wait_for(lambda: not (b.path / "x.md").exists(), VISIBLE_DEADLINE_S, "rename seen")
    assert (b.path / "y.md").read_bytes() == b"b rewrote it"


# --- lifecycle ------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_commit_buffered_writes_and_unmount(
    mounts: Callable[..., Mount], store: Store, sig: int
) -> None:
    m = mounts(commit_quiet_period=60.0)
    (m.path / "late.md").write_bytes(b"written just before the end")
    with pytest.raises(NotFound):
        store.stat("late.md")
    assert m.stop(sig) == 0
    assert not os.path.ismount(m.path)
    assert store.read("late.md")[0] == b"written just before the end"


def test_commit_on_close_option(mounts: Callable[..., Mount], store: Store) -> None:
    m = mounts(commit_quiet_period=60.0, commit_on_close=True)
    (m.path / "closed.md").write_bytes(b"closed means committed")
    assert store.read("closed.md")[0] == b"closed means committed"
    # A file large enough that an fsync leaves its commit to follow: a close does not.
    large = os.urandom(SYNC_IN_JOURNAL_FROM + 1)
    (m.path / "large.bin").write_bytes(large)
    assert store.read("large.bin")[0] == large


def test_bad_mountpoints_are_refused(tmp_path: Path, store: Store) -> None:
    from memfs.mount.fuse import serve

    with pytest.raises(MountError, match="does not exist"):
        serve(store, str(tmp_path / "missing"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(MountError, match="not a directory"):
        serve(store, str(tmp_path / "file"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep").write_text("mine")
    with pytest.raises(MountError, match="not empty"):
        serve(store, str(tmp_path / "full"))
    assert (tmp_path / "full" / "keep").read_text() == "mine"


def test_libfuse2_mount_works(tmp_path: Path, store: Store) -> None:
    m = start_mount(tmp_path / "store.db", tmp_path / "m2", env={"FUSE_LIBRARY_NAME": "fuse"})
    try:
        write_synced(m.path / "two", b"libfuse 2")
        assert (m.path / "two").read_bytes() == b"libfuse 2"
        subprocess.run(["sh", "-c", "printf 'long text' > f; printf x > f"], cwd=m.path, check=True)
        assert (m.path / "f").read_bytes() == b"x"
        assert sorted(os.listdir(m.path)) == ["f", "two"]
        os.utime(m.path / "two", ns=(1, 1_700_000_000_000_000_000))
        utimensat(m.path / "two", (5, 0), (0, UTIME_OMIT))
        assert (m.path / "two").stat().st_mtime_ns == 1_700_000_000_000_000_000
        assert store.read("two")[0] == b"libfuse 2"
        # libfuse 2 has no RENAME2: the kernel must refuse flags, never drop them.
        assert renameat2(m.path / "f", m.path / "two", 1) in (errno.EINVAL, errno.EEXIST)
        assert renameat2(m.path / "f", m.path / "two", 2) == errno.EINVAL
        assert (m.path / "two").read_bytes() == b"libfuse 2"
        assert (m.path / "f").read_bytes() == b"x"
    finally:
        assert m.stop() == 0
