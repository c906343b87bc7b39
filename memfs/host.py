"""What the host says about FUSE and mounts, without loading libfuse.

Used by the daemon's lifecycle, the memory tool's handler and the test fixtures: whether
FUSE can work here at all, which mount (if any) sits on a directory or holds a path,
whether it is dead (its daemon was killed: every access gets ENOTCONN), and
``fusermount3`` to take one down.
"""

from __future__ import annotations

import ctypes.util
import errno
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memfs.errors import MountError
from memfs.program import command

FUSE_DEVICE = "/dev/fuse"
FSNAME = "memfs"


@dataclass(frozen=True, slots=True)
class MountEntry:
    mountpoint: str
    fstype: str
    source: str

    @property
    def is_memfs(self) -> bool:
        return self.fstype.startswith("fuse") and FSNAME in (self.source, self.fstype[5:])


def fusermount_binary() -> str | None:
    return shutil.which("fusermount3") or shutil.which("fusermount")


def fuse_problem(device: str = FUSE_DEVICE) -> str | None:
    """Why FUSE mounts cannot work on this machine, as one actionable line, or None."""
    if not os.path.exists(device):
        return (
            f"{device} does not exist, so FUSE cannot mount here; load the fuse module "
            f"(modprobe fuse) or run {command('sync')} DIR instead."
        )
    if not os.access(device, os.R_OK | os.W_OK):
        return (
            f"{device} is not usable by this user; add yourself to the fuse group "
            f"or run {command('sync')} DIR instead."
        )
    if not (ctypes.util.find_library("fuse3") or ctypes.util.find_library("fuse")):
        return "libfuse is not installed; install it with: apt-get install fuse3"
    if fusermount_binary() is None:
        return "fusermount3 is not installed; install it with: apt-get install fuse3"
    return None


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as three-digit octal escapes.
    out = bytearray()
    raw = field.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(raw):
        if raw[i] == 0x5C and i + 4 <= len(raw) and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


def mounts() -> list[MountEntry]:
    """Every mount this process can see, in mount order (later ones lie on top)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        try:
            sep = fields.index("-")
        except ValueError:
            continue
        if len(fields) >= sep + 3 and len(fields) > 4:
            found.append(
                MountEntry(_unescape(fields[4]), fields[sep + 1], _unescape(fields[sep + 2]))
            )
    return found


def mount_entry(path: str | os.PathLike[str]) -> MountEntry | None:
    """The topmost mount sitting exactly on ``path`` (already absolute and resolved)."""
    target = os.fspath(path)
    on_path = [entry for entry in mounts() if entry.mountpoint == target]
    return on_path[-1] if on_path else None


def mount_holding(path: str | os.PathLike[str]) -> MountEntry | None:
    """The mount ``path`` (absolute and resolved) lies in: the topmost one on it or on
    its nearest ancestor (None where this process sees no mounts)."""
    target = os.fspath(path).rstrip("/") or "/"
    best: MountEntry | None = None
    depth = -1  # the length of best's mount point; a later mount at the same one is on top
    for entry in mounts():
        point = entry.mountpoint.rstrip("/") or "/"
        inside = point == "/" or target == point or target.startswith(point + "/")
        if inside and len(point) >= depth:
            best, depth = entry, len(point)
    return best


def is_dead(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a FUSE mount whose daemon is gone (ENOTCONN / ECONNABORTED).

    Asks with statfs: the kernel answers ``stat`` of a dead mount's root from its
    attribute cache for as long as the attr timeout, but never caches statfs.
    """
    try:
        os.statvfs(path)
    except OSError as exc:
        return exc.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    return False


def fusermount(path: str | os.PathLike[str], *, lazy: bool, timeout: float = 10.0) -> None:
    """Unmount ``path`` with ``fusermount3 -u`` (``-uz`` when ``lazy``)."""
    binary = fusermount_binary()
    if binary is None:
        raise MountError("fusermount3 is not installed; install it with: apt-get install fuse3")
    flags = "-uz" if lazy else "-u"
    try:
        done = subprocess.run(
            [binary, flags, os.fspath(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise MountError(f"{binary} {flags} {path} hung for {timeout:g} s.") from exc
    if done.returncode != 0 and mount_entry(Path(path)) is not None:
        reason = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise MountError(f"Cannot unmount {path}: {reason}")


FUSE_CONF = "/etc/fuse.conf"


def check_allow_other(conf: str = FUSE_CONF) -> None:
    """Raise MountError unless this user may mount with allow_other: root may; anyone
    else needs ``user_allow_other`` in /etc/fuse.conf (fusermount3 refuses otherwise)."""
    if os.geteuid() == 0:
        return
    try:
        with open(conf, encoding="utf-8", errors="replace") as f:
            lines = [line.split("#", 1)[0].strip() for line in f]
    except OSError:
        lines = []
    if "user_allow_other" not in lines:
        raise MountError(
            f"--allow-other needs 'user_allow_other' in {conf} (add that line as root), "
            "or mount as root"
        )
