"""The project's own fsx: random POSIX operations on a real mount and on a plain directory.

A Hypothesis state machine applies every operation twice, to a reference directory
(tmp_path) and to a directory on a real ``memfs`` daemon's mount (one daemon and SQLite
store per test, a fresh directory per example), and requires the same outcome: the same
return value or errno, or a difference listed in ALLOWED with its reason (and the
README's ESTALE cases for unlinked files, see ``Fsx._gone_unseen``). After every
step both trees must agree: sorted listings, and each file's st_size and bytes.

Operations: open (O_CREAT, O_TRUNC, O_APPEND, O_EXCL; three access modes), write, pwrite
(past EOF: holes), read, pread, lseek, fstat, ftruncate, truncate, fsync, close; several
descriptors per file; rename of files and directories (over files, into other
directories, into themselves); unlink, also of an open file, which is then used and
closed; mkdir; rmdir. A second process (fixtures.fsx.Helper, fed over a pipe) writes,
truncates, renames, unlinks and reads too, so requests come from two pids.

- ``Fsx`` adds ``remount``: every descriptor closed, the daemon stopped cleanly, a new
  one started on the same store: everything must be there.
- ``CrashFsx`` adds ``kill9``: SIGKILL to the daemon (its MountRecord pid), the dead
  mount cleared with ``fusermount3 -uz``, a new daemon on the same store. Every
  acknowledged operation must have survived, fsynced or not: the whole tree, except the
  content of files an open descriptor wrote to (memfs/mount/writes.py, promise 1).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memfs import host
from tests.fixtures import fsx
from tests.fixtures.fsx import FsxEnv, Outcome
from tests.fixtures.mount import require_fuse, wait_for

# Hundreds of examples of many syscalls each, on a loaded 2-core machine: minutes.
pytestmark = [pytest.mark.fuse, pytest.mark.timeout(600)]

# The only accepted differences: (operation, reference outcome, mount outcome) -> why.
# An outcome is "ok" or an errno name. Anything not listed must match exactly.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("rmdir", "ENOTEMPTY", "EEXIST"): "POSIX rmdir(2) allows either for a non-empty directory",
    ("rename", "ENOTEMPTY", "EEXIST"): "POSIX rename(2) allows either for a non-empty target",
}

SETTINGS = settings(
    max_examples=150,
    stateful_step_count=50,
    deadline=None,
    derandomize=True,  # the same sequences on every run and in CI
    report_multiple_bugs=False,
    # No "explain" phase: it replays many more examples (each a daemon) for a hint.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Few names, so operations keep meeting each other; any of them can be a file or a dir.
DIRS = ("d", "e", "d/e")
FILES = ("f", "g", "d/f", "d/g", "e/f", "d/e/f")
paths = st.sampled_from(DIRS + FILES)
files = st.sampled_from(FILES)
tags = st.integers(0, 250)
lengths = st.one_of(st.sampled_from([1, 4096, 4097]), st.integers(0, 9000))
offsets = st.one_of(st.sampled_from([0, 1, 4095, 4096, 65536, 131075]), st.integers(0, 20000))
open_flags = st.builds(
    lambda access, extra: "|".join([access, *sorted(extra)]),
    st.sampled_from(["O_RDWR", "O_RDWR", "O_WRONLY", "O_RDONLY"]),
    st.sets(st.sampled_from(["O_CREAT", "O_CREAT", "O_TRUNC", "O_APPEND", "O_EXCL"])),
)
helper_flags = st.sampled_from(
    ["O_WRONLY|O_CREAT", "O_RDWR|O_CREAT|O_TRUNC", "O_WRONLY|O_APPEND", "O_WRONLY|O_CREAT|O_APPEND"]
)
# Successes of these change nothing; every other success is acknowledged work.
READ_ONLY = {"read", "pread", "lseek", "fstat", "fsync", "close"}


@dataclass(eq=False)
class Handle:
    """One open file: its descriptor on each side."""

    label: str
    ref: int
    mnt: int
    is_dir: bool
    created: bool = False  # the open made the file (on the mount: a CREATE)
    dirty: bool = False  # written or truncated through this descriptor
    closed: bool = False
    # A change through it answered ESTALE (its file unlinked while open, see
    # _gone_unseen): the mount's side of this descriptor went its own way, and the kernel
    # may go on answering reads from its cache of the file as it was.
    stale: bool = False


@pytest.fixture
def fsx_env(tmp_path: Path, memfs_state_dir: Path) -> Iterator[FsxEnv]:
    require_fuse()
    env = FsxEnv(tmp_path, fsx.Helper(tmp_path))
    try:
        yield env
    finally:
        env.close()
    if env.problems:
        pytest.fail("mount teardown: " + "; ".join(env.problems), pytrace=False)


class Fsx(RuleBasedStateMachine):
    handles = Bundle("handles")

    def __init__(self, env: FsxEnv) -> None:
        super().__init__()
        self.env = env
        self.mount, self.ref, self.mnt = env.example()
        self.open: list[Handle] = []
        self.opened = 0
        self.acked = 0  # successful changes since the daemon started

    def teardown(self) -> None:
        for h in self.open:
            for fd in (h.ref, h.mnt):
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(self.ref)

    # --- comparing ----------------------------------------------------------------------
    def same(self, op: str, what: str, ref: Outcome, mnt: Outcome) -> Outcome:
        """The outcome both sides agree on; ``op`` names the call, ``what`` its arguments."""
        if ref == mnt:
            if ref[0] == "ok" and op not in READ_ONLY:
                self.acked += 1
            return ref
        key = (op, ref[1] if ref[0] == "err" else "ok", mnt[1] if mnt[0] == "err" else "ok")
        if key in ALLOWED:
            return ref
        raise AssertionError(f"{op} {what}: reference {fsx.shown(ref)}, mount {fsx.shown(mnt)}")

    def both(self, op: str, what: str, call: Callable[[Path], Any]) -> Outcome:
        return self.same(
            op, what, fsx.attempt(lambda: call(self.ref)), fsx.attempt(lambda: call(self.mnt))
        )

    def both_fd(self, op: str, h: Handle, call: Callable[[int], Any]) -> Outcome:
        ref, mnt = fsx.attempt(lambda: call(h.ref)), fsx.attempt(lambda: call(h.mnt))
        if mnt == ("err", "ESTALE") and ref[0] == "ok" and self._gone_unseen(op, h):
            h.stale = h.stale or op in ("write", "pwrite", "ftruncate")
            return ref
        if h.stale and ref[0] == "ok" and mnt[0] == "ok":
            return ref
        out = self.same(op, f"on {h.label}", ref, mnt)
        if out[0] == "ok" and op in ("write", "pwrite", "ftruncate"):
            h.dirty = True
        return out

    def _gone_unseen(self, op: str, h: Handle) -> bool:
        """The README's deliberate differences for a descriptor whose file is no longer
        linked (unlinked, or replaced by a rename): ``fstat`` answers ESTALE for any of
        them (libfuse keeps no path for it), and every call answers ESTALE on one that
        was opened rather than created (no-open mode gives the daemon no handle)."""
        if os.fstat(h.ref).st_nlink != 0:
            return False
        return op == "fstat" or not h.created

    def expect_same(self, when: str) -> None:
        diff = fsx.differences(fsx.snapshot(self.ref), fsx.snapshot(self.mnt))
        if diff:
            raise AssertionError(f"{when}, the trees differ:\n  " + "\n  ".join(diff))

    @initialize(
        target=handles,
        dirs=st.sets(st.sampled_from(DIRS), min_size=1),
        contents=st.dictionaries(files, st.tuples(tags, lengths), max_size=4),
        opens=st.lists(st.tuples(files, open_flags), max_size=2),
    )
    def populate(
        self, dirs: set[str], contents: dict[str, tuple[int, int]], opens: list[tuple[str, str]]
    ) -> Any:
        # Start from a tree with something in it, or most operations only meet ENOENT,
        # and with descriptors open, or few steps exercise them.
        for d in sorted(dirs):
            self.mkdir(d)
        for path, (tag, length) in sorted(contents.items()):
            self.helper_write(path, "O_WRONLY|O_CREAT", None, tag, length)
        return multiple(*filter(None, (self._open(path, flags) for path, flags in opens)))

    @invariant()
    def trees_agree(self) -> None:
        self.expect_same("after this step")

    # --- descriptors --------------------------------------------------------------------
    @rule(target=handles, path=st.one_of(files, paths), flags=open_flags)
    def open_file(self, path: str, flags: str) -> Any:
        h = self._open(path, flags)
        return multiple() if h is None else h

    def _open(self, path: str, flags: str) -> Handle | None:
        n = fsx.bits(flags)
        existed = os.path.lexists(self.ref / path)
        ref = fsx.attempt(lambda: os.open(self.ref / path, n, 0o644))
        mnt = fsx.attempt(lambda: os.open(self.mnt / path, n, 0o644))
        if ref[0] == mnt[0] == "ok":
            self.acked += 1
            self.opened += 1
            is_dir = stat.S_ISDIR(os.fstat(ref[1]).st_mode)
            h = Handle(f"h{self.opened} ({path}, {flags})", ref[1], mnt[1], is_dir)
            h.created = not existed
            h.dirty = bool(n & os.O_TRUNC)
            self.open.append(h)
            return h
        for kind, fd in (ref, mnt):
            if kind == "ok":
                os.close(fd)
        fd_or_errno = [(kind, "fd" if kind == "ok" else v) for kind, v in (ref, mnt)]
        self.same("open", f"{path} {flags}", *fd_or_errno)
        return None

    @rule(h=handles, tag=tags, length=lengths, offset=st.none() | offsets)
    def write(self, h: Handle, tag: int, length: int, offset: int | None) -> None:
        data = fsx.payload(tag, length)
        if h.closed:
            pass
        elif offset is None:
            self.both_fd("write", h, lambda fd: os.write(fd, data))
        else:
            self.both_fd("pwrite", h, lambda fd: os.pwrite(fd, data, offset))

    @rule(h=handles, size=lengths, offset=st.none() | offsets)
    def read(self, h: Handle, size: int, offset: int | None) -> None:
        if h.closed:
            pass
        elif offset is None:
            self.both_fd("read", h, lambda fd: os.read(fd, size))
        else:
            self.both_fd("pread", h, lambda fd: os.pread(fd, size, offset))

    @rule(h=handles, offset=offsets, whence=st.sampled_from(["SEEK_SET", "SEEK_END"]))
    def lseek(self, h: Handle, offset: int, whence: str) -> None:
        # A directory's offsets are opaque cookies that differ between file systems.
        if not h.closed and not h.is_dir:
            self.both_fd("lseek", h, lambda fd: os.lseek(fd, offset, getattr(os, whence)))

    @rule(h=handles)
    def fstat(self, h: Handle) -> None:
        def look(fd: int) -> tuple[int, int | None]:
            st_ = os.fstat(fd)
            return stat.S_IFMT(st_.st_mode), st_.st_size if stat.S_ISREG(st_.st_mode) else None

        if not h.closed:
            self.both_fd("fstat", h, look)

    @rule(h=handles, size=offsets)
    def ftruncate(self, h: Handle, size: int) -> None:
        if not h.closed:
            self.both_fd("ftruncate", h, lambda fd: os.ftruncate(fd, size))

    @rule(h=handles)
    def fsync(self, h: Handle) -> None:
        if not h.closed:
            self.both_fd("fsync", h, os.fsync)

    @rule(h=consumes(handles))
    def close(self, h: Handle) -> None:
        if not h.closed:
            self._close(h)

    def _close(self, h: Handle) -> None:
        h.closed = True
        self.open.remove(h)
        self.both_fd("close", h, os.close)

    # Random paths rarely meet an open file; these two rules aim at one on purpose.
    @rule(h=handles, by_helper=st.booleans())
    def unlink_open_file(self, h: Handle, by_helper: bool) -> None:
        path = None if h.closed else fsx.path_of_inode(self.ref, os.fstat(h.ref).st_ino)
        if path is not None and by_helper:
            self.on_helper("unlink", path, path)
        elif path is not None:
            self.unlink(path)

    @rule(h=handles, src=paths)
    def rename_over_open_file(self, h: Handle, src: str) -> None:
        path = None if h.closed else fsx.path_of_inode(self.ref, os.fstat(h.ref).st_ino)
        if path is not None:
            self.rename(src, path)

    # --- paths --------------------------------------------------------------------------
    @rule(path=paths, size=offsets)
    def truncate(self, path: str, size: int) -> None:
        self.both("truncate", f"{path} {size}", lambda root: os.truncate(root / path, size))

    @rule(src=paths, dst=paths)
    def rename(self, src: str, dst: str) -> None:
        self.both("rename", f"{src} {dst}", lambda root: os.rename(root / src, root / dst))

    @rule(path=paths)
    def unlink(self, path: str) -> None:
        self.both("unlink", path, lambda root: os.unlink(root / path))

    @rule(path=paths)
    def mkdir(self, path: str) -> None:
        self.both("mkdir", path, lambda root: os.mkdir(root / path, 0o755))

    @rule(path=paths)
    def rmdir(self, path: str) -> None:
        self.both("rmdir", path, lambda root: os.rmdir(root / path))

    # --- the second process -------------------------------------------------------------
    def on_helper(self, op: str, what: str, path: str, **args: Any) -> Outcome:
        def side(root: Path) -> Outcome:
            extra = {k: str(root / v) if k == "dst" else v for k, v in args.items()}
            return self.env.helper.call(op, root / path, **extra)

        return self.same(
            op, f"{what} by helper pid {self.env.helper.pid}", side(self.ref), side(self.mnt)
        )

    @rule(path=files, flags=helper_flags, offset=st.none() | offsets, tag=tags, length=lengths)
    def helper_write(
        self, path: str, flags: str, offset: int | None, tag: int, length: int
    ) -> None:
        data = fsx.payload(tag, length).hex()
        self.on_helper(
            "write", f"{path} {flags}", path, flags=fsx.bits(flags), offset=offset, data=data
        )

    @rule(
        op=st.sampled_from(["truncate", "rename", "unlink", "read"]),
        path=paths,
        dst=paths,
        size=offsets,
    )
    def helper_change(self, op: str, path: str, dst: str, size: int) -> None:
        """The helper runs ``op`` on ``path`` (``dst`` is for rename, ``size`` for truncate)."""
        if op == "rename":
            self.on_helper(op, f"{path} {dst}", path, dst=dst)
        elif op == "truncate":
            self.on_helper(op, f"{path} {size}", path, size=size)
        else:
            self.on_helper(op, path, path)

    # --- the daemon's life --------------------------------------------------------------
    @precondition(lambda self: self.acked >= 3)
    @rule()
    def remount(self) -> None:
        for h in list(self.open):
            self._close(h)
        self.mount.stop()
        assert self.mount.restart() == [], "a cleanly stopped daemon left a stale mount"
        self.acked = 0
        self.expect_same("after a clean unmount and a new daemon on the same store")


class CrashFsx(Fsx):
    @precondition(lambda self: self.acked >= 3)
    @rule()
    def kill9(self) -> None:
        # Acknowledged: the whole reference tree, except the content of files that an
        # open descriptor wrote to (those descriptors die with the daemon, unclosed).
        inodes: dict[str, int] = {}
        ref = fsx.snapshot(self.ref, inodes)
        written = {os.fstat(h.ref).st_ino for h in self.open if h.dirty}
        pid = self.mount.pid
        self.mount.kill9()  # SIGKILL to the MountRecord's pid, then reaped
        # The mount is left dead (no auto_unmount, unless the options asked for it).
        mountpoint = self.mount.mountpoint
        subprocess.run(["fusermount3", "-uz", str(mountpoint)], capture_output=True, check=False)
        wait_for(lambda: host.mount_entry(mountpoint) is None, 10, what="the dead mount to go")
        for h in list(self.open):
            h.closed = True
            self.open.remove(h)
            for fd in (h.ref, h.mnt):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.mount.restart()
        self.acked = 0
        mnt = fsx.snapshot(self.mnt)
        unsettled = [p for p, ino in inodes.items() if ino in written]
        for p in unsettled:
            if mnt.get(p, ("",))[0] == "file":
                ref[p] = mnt[p]  # its content is unspecified; it must still exist
        diff = fsx.differences(ref, mnt)
        if diff:
            raise AssertionError(
                f"after kill -9 of daemon pid {pid} and a new daemon on the same store, "
                "acknowledged operations are lost:\n  " + "\n  ".join(diff)
            )
        for p in unsettled:  # adopt what survived, so the machine goes on from here
            (self.ref / p).write_bytes(mnt[p][2])


def test_mount_behaves_like_a_local_directory(fsx_env: FsxEnv) -> None:
    class OnThisMount(Fsx):  # hypothesis builds the machine from a class, without arguments
        def __init__(self) -> None:
            super().__init__(fsx_env)

    run_state_machine_as_test(OnThisMount, settings=SETTINGS)


def test_kill9_loses_no_acknowledged_operation(fsx_env: FsxEnv) -> None:
    # Fewer examples: each kill -9 costs a daemon start, and the other rules are Fsx's.
    crash_settings = settings(SETTINGS, max_examples=60)

    class OnThisMount(CrashFsx):
        def __init__(self) -> None:
            super().__init__(fsx_env)

    run_state_machine_as_test(OnThisMount, settings=crash_settings)
