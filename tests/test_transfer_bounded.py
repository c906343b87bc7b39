"""Imports are streamed and bounded (#17.2): compression bombs, a sparse member and an
over-long tree are refused from their headers or while being read, at under 100 MiB of
memory, by the installed ``memfs import``; truncated and garbage archives are one line
naming the file; a directory's hard links, devices and sockets are refused as a tar's.

Memory is the import process's own peak RSS, from ``os.wait4``; every process has a
deadline (``DEADLINE``): before the bounds, the same imports ran to 2-4 GiB of RSS.
"""

from __future__ import annotations

import gzip
import io
import os
import socket
import stat
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from memfs.store import open_store

MEMFS = str(Path(sys.executable).with_name("memfs"))
DEADLINE = 60.0
MIB = 1 << 20
RSS_LIMIT_KIB = 100 * 1024


# Runs one command and prints its peak RSS: RUSAGE_CHILDREN of a process whose only
# child is that command is that command's own.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(r.returncode)\n"
)


def memfs_import(*args: str) -> tuple[int, str, int]:
    """Run the installed ``memfs import ARGS``: exit status, stderr, peak RSS in KiB."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, MEMFS, "import", *args],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    return out.returncode, out.stderr, int(out.stdout)


def _refused(db: Path, status: int, err: str, rss: int, line: str) -> None:
    assert (status, err) == (1, f"Error: {line}\n")
    assert rss < RSS_LIMIT_KIB, f"peak RSS {rss} KiB"
    with open_store(db) as store:
        assert (store.last_seq(), list(store.walk())) == (0, [])


# --- archives made cheaply: gzip members concatenate, deflate flushes align ------------


def _zero_gz_members(n_mib: int) -> bytes:
    one = gzip.compress(bytes(MIB), 9)
    return one * n_mib


def _tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode = size, 0o644
    return info.tobuf(tarfile.PAX_FORMAT)


def _tgz_of_zero_files(path: Path, files: dict[str, int]) -> None:
    """A .tar.gz of files of zeros (name -> MiB) without compressing the zeros each time."""
    with path.open("wb") as out:
        for name, mib in files.items():
            out.write(gzip.compress(_tar_header(name, mib * MIB)))
            out.write(_zero_gz_members(mib))
        out.write(gzip.compress(bytes(1024)))  # the two zero blocks that end a tar


class _Precompressed:
    """Stands in for zipfile's deflate compressor: each 1 MiB of zeros written becomes
    the same full-flushed deflate block, computed once."""

    def __init__(self) -> None:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.block = c.compress(bytes(MIB)) + c.flush(zlib.Z_FULL_FLUSH)
        self.end = c.flush()

    def compress(self, data: bytes) -> bytes:
        assert data == bytes(MIB)
        return self.block

    def flush(self) -> bytes:
        return self.end


def _zip_of_zero_files(path: Path, files: dict[str, int]) -> None:
    zero = bytes(MIB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, mib in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as f:
                f._compressor = _Precompressed()  # type: ignore[attr-defined]  # the test's shortcut
                for _ in range(mib):
                    f.write(zero)


def test_the_archives_made_here_are_real(tmp_path: Path) -> None:
    _tgz_of_zero_files(tmp_path / "t.tgz", {"a.bin": 2, "b.bin": 1})
    with tarfile.open(tmp_path / "t.tgz") as tar:
        assert [(m.name, m.size) for m in tar] == [("a.bin", 2 * MIB), ("b.bin", MIB)]
        f = tar.extractfile("a.bin")
        assert f is not None and f.read() == bytes(2 * MIB)
    _zip_of_zero_files(tmp_path / "z.zip", {"a.bin": 3})
    with zipfile.ZipFile(tmp_path / "z.zip") as zf:
        assert zf.read("a.bin") == bytes(3 * MIB)  # the CRC checks out


# --- bombs ---------------------------------------------------------------------------


def test_two_gib_of_zeros_in_one_tgz_member_is_refused_from_its_header(tmp_path: Path) -> None:
    archive, db = tmp_path / "bomb.tar.gz", tmp_path / "m.db"
    _tgz_of_zero_files(archive, {"zeros.bin": 2048})
    assert archive.stat().st_size < 3 * MIB
    status, err, rss = memfs_import(str(archive), "--store", str(db))
    _refused(
        db, status, err, rss,
        "import refused, nothing was imported: zeros.bin holds 2.0 GiB, over the limit of"
        " 64.0 MiB a file",
    )  # fmt: skip


def test_two_gib_of_zeros_in_small_tgz_members_is_refused_by_its_ratio(tmp_path: Path) -> None:
    archive, db = tmp_path / "bomb.tgz", tmp_path / "m.db"
    _tgz_of_zero_files(archive, {f"z{i:02}.bin": 50 for i in range(41)})
    status, err, rss = memfs_import(str(archive), "--store", str(db))
    assert err.startswith("Error: import refused, nothing was imported: bomb.tgz expands to ")
    assert err.endswith(
        " times the size it takes on disk (more than 250 times), as a compression bomb does\n"
    )
    _refused(db, status, err, rss, err.removeprefix("Error: ").rstrip("\n"))


def test_a_gib_in_a_zip_member_is_refused_from_its_header(tmp_path: Path) -> None:
    archive, db = tmp_path / "bomb.zip", tmp_path / "m.db"
    _zip_of_zero_files(archive, {"zeros.bin": 1024})
    assert archive.stat().st_size < 2 * MIB
    status, err, rss = memfs_import(str(archive), "--store", str(db))
    assert err.startswith("Error: import refused, nothing was imported: bomb.zip declares ")
    _refused(db, status, err, rss, err.removeprefix("Error: ").rstrip("\n"))


def test_zip_members_each_under_the_file_limit_are_refused_by_their_ratio(
    tmp_path: Path,
) -> None:
    archive, db = tmp_path / "many.zip", tmp_path / "m.db"
    _zip_of_zero_files(archive, {f"z{i:02}.bin": 40 for i in range(4)})
    status, err, rss = memfs_import(str(archive), "--store", str(db))
    assert err.endswith("(more than 250 times), as a compression bomb does\n")
    _refused(db, status, err, rss, err.removeprefix("Error: ").rstrip("\n"))


def test_a_four_gib_sparse_tar_member_is_refused_from_its_header(tmp_path: Path) -> None:
    sparse, archive, db = tmp_path / "hole.bin", tmp_path / "sparse.tar", tmp_path / "m.db"
    with sparse.open("wb") as f:
        f.truncate(4 << 30)
    subprocess.run(["tar", "-cSf", str(archive), "-C", str(tmp_path), "hole.bin"], check=True)
    sparse.unlink()
    assert archive.stat().st_size < MIB
    status, err, rss = memfs_import(str(archive), "--store", str(db))
    _refused(
        db, status, err, rss,
        "import refused, nothing was imported: hole.bin holds 4.0 GiB, over the limit of"
        " 64.0 MiB a file",
    )  # fmt: skip


def test_the_stores_own_file_cap_bounds_an_import(tmp_path: Path) -> None:
    src, db = tmp_path / "src", tmp_path / "m.db"
    src.mkdir()
    (src / "big.md").write_bytes(b"x" * 5000)
    status, err, _ = memfs_import(str(src), "--store", f"sqlite://{db}?max_file_bytes=1000")
    assert (status, err) == (
        1,
        "Error: import refused, nothing was imported: big.md holds 4.9 KiB, over the limit"
        " of 1,000 bytes a file\n",
    )


# --- damaged archives ----------------------------------------------------------------


def _good_tar(path: Path, gz: bool) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for i in range(5):
            data = os.urandom(20_000)
            info = tarfile.TarInfo(f"f{i}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _good_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(5):
            zf.writestr(f"f{i}.bin", os.urandom(20_000))
    return buf.getvalue()


DAMAGED = {
    "truncated.tar": lambda: _good_tar(Path(), False)[:50_000],
    "truncated.tar.gz": lambda: _good_tar(Path(), True)[:50_000],
    "garbage.tar": lambda: os.urandom(20_000),
    "garbage.tgz": lambda: b"\x1f\x8b" + os.urandom(20_000),
    "garbage.zip": lambda: os.urandom(20_000),
    "truncated.zip": lambda: _good_zip()[:-30],
    "cut-inside.zip": lambda: _good_zip()[:30_000] + _good_zip()[-200:],
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_archive_is_one_line_naming_it(tmp_path: Path, name: str) -> None:
    archive, db = tmp_path / name, tmp_path / "m.db"
    archive.write_bytes(DAMAGED[name]())
    status, err, _ = memfs_import(str(archive), "--store", str(db))
    assert status == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"Error: cannot import {archive}: it is truncated, damaged or not a ")
    with open_store(db) as store:
        assert store.last_seq() == 0


# --- a directory's entries that are not files of its own -------------------------------


def test_a_directory_import_refuses_hard_links_devices_and_sockets(tmp_path: Path) -> None:
    outside, src, db = tmp_path / "canary.txt", tmp_path / "src", tmp_path / "m.db"
    outside.write_text("outside the tree\n")
    src.mkdir()
    (src / "ok.md").write_text("ok\n")
    os.link(outside, src / "hard.md")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(src / "sock"))
    try:
        devices = []
        try:
            os.mknod(src / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
            devices.append("null: not a regular file or directory")
        except PermissionError:
            pass  # not root: the socket and the link still show the rule
        status, err, _ = memfs_import(str(src), "--store", str(db))
    finally:
        listener.close()
    problems = ["hard.md: a link (import never follows links)", *devices,
                "sock: not a regular file or directory"]  # fmt: skip
    assert status == 1
    assert err == "".join(f"  {p}\n" for p in problems) + (
        f"Error: import refused, nothing was imported: {len(problems)} entries memfs would refuse\n"
    )
    with open_store(db) as store:
        assert store.last_seq() == 0
