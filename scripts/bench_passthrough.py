"""A bare passthrough file system on mfusepy: the floor memfs's mount is measured against.

It forwards every operation to a directory on the native disk, with no logic of its own,
on the same binding (mfusepy, libfuse 3) and with the same kernel options memfs mounts
with (default_permissions, hard_remove; the libfuse defaults of 1 s entry and attribute
timeouts), so what it costs over native is what the binding and the kernel round trips
cost. ``scripts/bench_mount.py`` mounts it in the same run as memfs.

    .venv/bin/python scripts/bench_passthrough.py SOURCE_DIR MOUNTPOINT

Prints READY once the mount answers, serves until unmounted.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")

import mfusepy


class Passthrough(mfusepy.Operations):  # type: ignore[misc]  # mfusepy ships no types
    """Every path is ``root`` + the FUSE path; handles are the native descriptors."""

    use_ns = True

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)

    def _p(self, path: str) -> str:
        return self.root + path

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        st = os.lstat(self._p(path)) if fh is None else os.fstat(fh)
        return {
            key: getattr(st, key)
            for key in (
                "st_mode",
                "st_nlink",
                "st_size",
                "st_uid",
                "st_gid",
                "st_blocks",
            )
        } | {
            "st_atime": st.st_atime_ns,
            "st_mtime": st.st_mtime_ns,
            "st_ctime": st.st_ctime_ns,
        }

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._p(path))]

    def readlink(self, path: str) -> str:
        return os.readlink(self._p(path))

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._p(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._p(path))
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._p(path))
        return 0

    def symlink(self, target: str, source: str) -> int:
        os.symlink(source, self._p(target))
        return 0

    def link(self, target: str, source: str) -> int:
        os.link(self._p(source), self._p(target))
        return 0

    def rename(self, old: str, new: str) -> int:
        os.rename(self._p(old), self._p(new))
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._p(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.lchown(self._p(path), uid, gid)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        if times is None:
            os.utime(self._p(path), follow_symlinks=False)
        else:
            os.utime(self._p(path), ns=times, follow_symlinks=False)
        return 0

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        with open(self._p(path), "r+b") as f:
            f.truncate(length)
        return 0

    def open(self, path: str, flags: int) -> int:
        return os.open(self._p(path), flags)

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        if datasync:
            os.fdatasync(fh)
        else:
            os.fsync(fh)
        return 0

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._p(path))
        return {
            key: getattr(sv, key)
            for key in (
                "f_bavail",
                "f_bfree",
                "f_blocks",
                "f_bsize",
                "f_favail",
                "f_ffree",
                "f_files",
                "f_flag",
                "f_frsize",
                "f_namemax",
            )
        }


def _announce(mountpoint: str) -> None:
    parent = os.stat(os.path.dirname(mountpoint.rstrip("/"))).st_dev
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.stat(mountpoint).st_dev != parent:
            print("READY", flush=True)
            return
        time.sleep(0.01)


def main() -> int:
    source, mountpoint = sys.argv[1], os.path.abspath(sys.argv[2])
    threading.Thread(target=_announce, args=(mountpoint,), daemon=True).start()
    mfusepy.FUSE(
        Passthrough(source),
        mountpoint,
        foreground=True,
        nothreads=False,
        default_permissions=True,
        hard_remove=True,
        fsname="passthrough",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
