"""Run the daemon as a detached child and know when it is up, or why it is not.

The child (``python -m memfs.mount.daemon``) gets a new session, stdin from /dev/null
and the log file as stdout and stderr, plus the write end of a pipe on which it says
``ready`` once the mount answers, or ``error MESSAGE``. The parent waits for that line
against a deadline, then for the kernel to list the mount; a child that fails is
stopped and leaves no mount behind, and the error carries the end of its log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memfs import host
from memfs.errors import MountError
from memfs.mount import state
from memfs.mount.state import MountRecord
from memfs.private import open_private_log

if TYPE_CHECKING:
    from memfs.mount.ops import MountOptions

_LOG_TAIL_LINES = 12
_LOG_ROTATE_BYTES = 4 << 20

# Daemons this process spawned, kept so they can be reaped (a killed child stays a zombie
# until its parent waits for it) and so Popen does not warn about them.
_children: dict[int, subprocess.Popen[bytes]] = {}


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child (no-op otherwise)."""
    child = _children.get(pid)
    if child is not None:
        if child.poll() is not None:
            _children.pop(pid, None)
        return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def options_json(options: MountOptions | None) -> str | None:
    """The options as JSON for the child; a field that cannot cross a process boundary
    (a live counter object) is refused unless it is unset."""
    if options is None:
        return None
    fields = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        try:
            json.dumps(value)
        except TypeError:
            raise MountError(
                f"The mount option {f.name} cannot be passed to a background daemon; "
                "mount in the foreground to use it."
            ) from None
        fields[f.name] = value
    return json.dumps(fields)


def _child_env() -> dict[str, str]:
    """The caller's environment, with this very memfs first on the import path so the
    child runs the same code as its parent, installed or not."""
    import memfs

    source_root = str(Path(memfs.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH", "")
    return {
        # glibc gives each of libfuse's worker threads its own malloc arena, and freed
        # blocks of large files' buffers stay in them. Measured under fsstress -n 10000
        # -p 8 (posix-suites.sh): peak RSS 1,937 MiB with the default, 777 MiB with two.
        "MALLOC_ARENA_MAX": "2",
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": source_root + (os.pathsep + path if path else ""),
    }


def spawn(
    mountpoint: Path,
    store_url: str,
    *,
    debug: bool,
    options: MountOptions | None,
    timeout: float,
    subtree: str = "",
) -> MountRecord:
    log = state.log_path(mountpoint)
    with contextlib.suppress(OSError):
        if log.stat().st_size > _LOG_ROTATE_BYTES:
            # One old generation is enough to read why the previous daemon ended.
            os.replace(log, log.with_name(log.name + ".1"))
    read_fd, write_fd = os.pipe()
    cmd = [sys.executable, "-m", "memfs.mount.daemon", "--ready-fd", str(write_fd)]
    if debug:
        cmd.append("--debug")
    opts = options_json(options)
    if opts is not None:
        cmd += ["--options", opts]
    if subtree:
        cmd += ["--subtree", subtree]
    # The URL goes on the daemon's standard input: a command line is every user's to read.
    cmd += ["--", str(mountpoint), "-"]
    with os.fdopen(open_private_log(log), "ab") as logf:
        offset = logf.tell()
        logf.write(f"--- memfs daemon starting at {time.ctime()}\n".encode())
        logf.flush()
        try:
            child = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=logf,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                start_new_session=True,
                # Out of the caller's directory, so the daemon pins nothing there (the
                # store URL and mountpoint are absolute by now).
                cwd="/",
                env=_child_env(),
            )
        finally:
            os.close(write_fd)
    _children[child.pid] = child
    assert child.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # a daemon that died at once: told below
        child.stdin.write(store_url.encode("utf-8", "surrogateescape") + b"\n")
    with contextlib.suppress(BrokenPipeError):
        child.stdin.close()
    try:
        message = read_ready(read_fd, child, timeout)
    finally:
        os.close(read_fd)
    if message == "ready" and wait_until(lambda: host.mount_entry(mountpoint) is not None, 2.0):
        record = state.lookup(mountpoint)
        if record is not None and record.pid == child.pid:
            return record
    abandon(child, mountpoint)
    if message.startswith("error "):
        raise MountError(message[len("error ") :])
    why = "did not come up" if message == "" else f"failed ({message})"
    tail = log_tail(log, offset)
    raise MountError(
        f"The memfs daemon for {mountpoint} {why} within {timeout:g} s; its log {log} ends:"
        + "".join(f"\n  {line}" for line in tail)
    )


def read_ready(fd: int, child: subprocess.Popen[bytes], timeout: float) -> str:
    """The child's one-line verdict ("ready" or "error MSG"), or "" on silence/death."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            return ""
        readable, _, _ = select.select([fd], [], [], min(left, 0.2))
        if readable:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
        elif child.poll() is not None:
            break
    return data.decode("utf-8", "replace").split("\n", 1)[0].strip()


def abandon(child: subprocess.Popen[bytes], mountpoint: Path) -> None:
    """Make sure a daemon that failed to start leaves nothing behind."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(3)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(3)
    _children.pop(child.pid, None)
    if host.mount_entry(mountpoint) is not None:
        host.fusermount(mountpoint, lazy=True)
    state.remove(mountpoint, pid=child.pid)


def log_tail(log: Path, offset: int) -> list[str]:
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ["(the log cannot be read)"]
    return lines[-_LOG_TAIL_LINES:] or ["(empty)"]
