"""The on-disk forms of an exported tree: a directory, a tar (plain or gzip) or a zip.

Readers turn a source into a stream of :class:`Member` records, parents before children
where the source has an order (a directory, a tar as written); they judge nothing about
names or kinds beyond what the format says: :mod:`memfs.history.transfer` decides what
memfs accepts. Each member carries the size its source declares (a tar or zip header, a
file's ``stat``) so limits are checked before any byte is read, and content is opened on
demand, one member at a time, so a tree is never held in memory whole. A tar is read
front to back (forward seeks over a compressed stream are served by reading on;
tarfile's pure stream mode ``r|*`` was 2.3x slower on 10,000 files).

A compressed tar (gzip, bzip2 or xz, whatever its suffix says) is decompressed through
:class:`Guarded`, which refuses the source (:class:`Bomb`) as soon as more than
``max_ratio`` times the bytes read from the disk come out of it, past a floor of
:data:`RATIO_FLOOR`: skipping a member's data costs its decompression too, so a
compression bomb is refused however the archive is walked, in constant memory. A zip's
ratio is judged from its headers, and its entry count from its end record before
:mod:`zipfile` reads the central directory.

Writers take directories and files and put them in place only when the whole export is
written (:meth:`Writer.finish`): a failed export leaves nothing at the destination.

What each form keeps:

- a directory: bytes, names, modes, mtimes to the nanosecond (as the file system does);
- tar: PAX format, UTF-8 names, modes, mtimes to the nanosecond (the PAX ``mtime``
  record, read back from its text, not through a float);
- zip: modes (Unix attributes), mtimes to the second in the standard ``UT`` extra field
  and to the nanosecond in a memfs extra field (other tools ignore it).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import stat
import struct
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from memfs.errors import Bomb, TransferError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

MemberKind = Literal["file", "dir", "link", "special"]
Format = Literal["directory", "tar", "tar.gz", "zip"]

SECOND_NS = 10**9
_UT = 0x5455  # Info-ZIP extended timestamp: flags byte + mtime seconds (UTC)
_MEMFS_NS = 0x6D66  # memfs's own: version byte + mtime in nanoseconds (int64)
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


# Decompressed output below this is never judged by its ratio (small, very repetitive
# files compress far better than whole trees do).
RATIO_FLOOR = 16 * 1024 * 1024
DEFAULT_MAX_RATIO = 250  # deflate's best is ~1,030:1; text trees compress 3-30:1
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of a source as the format names it (``name`` uses ``/``)."""

    name: str
    kind: MemberKind
    mode: int | None = None  # permission bits, when the format holds them
    mtime_ns: int | None = None
    # files only: the content as a binary stream; open it before the next member
    open: Callable[[], IO[bytes]] | None = None
    size: int | None = None  # bytes the source declares for a file's content
    packed: int | None = None  # a zip member's compressed size, for its ratio


def ratio_problem(out: int, packed: int, max_ratio: int) -> str | None:
    """Why ``out`` bytes made from ``packed`` look like a compression bomb, or None."""
    if out <= RATIO_FLOOR or out <= max_ratio * max(packed, 1):
        return None
    return f"{out / max(packed, 1):,.0f} times the size it takes on disk"


class Guarded(io.RawIOBase):
    """A decompressing stream (gzip, bzip2, xz) over ``raw`` that raises :class:`Bomb`
    once its output passes ``max_ratio`` times what was read from ``raw``. Seeks forward
    read on through the guard; a seek backward rewinds the decompressor."""

    def __init__(self, raw: IO[bytes], inner: io.BufferedIOBase, max_ratio: int, name: str) -> None:
        super().__init__()
        self.raw, self.inner, self.max_ratio, self.name = raw, inner, max_ratio, name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _check(self) -> None:
        out, packed = self.inner.tell(), self.raw.tell()
        why = ratio_problem(out, packed, self.max_ratio)
        if why is not None:
            raise Bomb(
                f"{self.name} expands to {why} (more than {self.max_ratio} times), as a"
                " compression bomb does",
                packed=packed,
                out=out,
            )

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            parts = []
            while chunk := self.read(_CHUNK):
                parts.append(chunk)
            return b"".join(parts)
        data = self.inner.read(n)
        self._check()
        return data

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer)  # what io passes already is one; slices are writable
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        here = self.inner.tell()
        target = offset if whence == io.SEEK_SET else here + offset
        if whence not in (io.SEEK_SET, io.SEEK_CUR) or target < here:
            return self.inner.seek(offset, whence)
        while here < target and (chunk := self.read(min(target - here, _CHUNK))):
            here += len(chunk)
        return here

    def tell(self) -> int:
        return self.inner.tell()

    def close(self) -> None:
        if not self.closed:
            self.inner.close()
            self.raw.close()
        super().close()


def _decompressor(raw: IO[bytes]) -> io.BufferedIOBase | None:
    """The decompressing reader of ``raw`` by its magic bytes, or None for a plain tar."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)
    return None


# Archive suffixes memfs does not write: a destination so named is refused, not made a
# directory that only looks like an archive.
OTHER_ARCHIVES = (
    ".rar", ".7z", ".tar.bz2", ".tbz", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst",
    ".tar.lz", ".tar.lzma", ".bz2", ".xz", ".gz", ".zst", ".lz", ".lzma", ".z", ".cpio",
    ".jar", ".war", ".iso", ".cab", ".arj", ".lzh", ".ar", ".deb", ".rpm", ".dmg", ".tar.z",
)  # fmt: skip
WRITTEN = ".tar, .tar.gz, .tgz or .zip"


def unknown_archive(path: Path) -> str | None:
    """The suffix of an archive form memfs does not write that ``path`` names, or None."""
    name = path.name.lower()
    if format_of(path) != "directory":
        return None
    return next(
        (s for s in sorted(OTHER_ARCHIVES, key=len, reverse=True) if name.endswith(s)), None
    )


def format_of(path: Path) -> Format:
    """The form a destination's name asks for: an archive by suffix, else a directory."""
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".tar"):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    return "directory"


def source_format(path: Path) -> Format | None:
    """How to read ``path``: a directory, or an archive by suffix or by content."""
    if path.is_dir():
        return "directory"
    fmt = format_of(path)
    if fmt != "directory":
        return fmt
    if zipfile.is_zipfile(path):
        return "zip"
    if tarfile.is_tarfile(path):
        return "tar"
    return None


# --- reading -----------------------------------------------------------------------------


def read_source(path: Path, fmt: Format, max_ratio: int = DEFAULT_MAX_RATIO) -> Iterator[Member]:
    if fmt == "directory":
        return read_directory(path)
    if fmt == "zip":
        return read_zip(path, max_ratio)
    return read_tar(path, max_ratio)


def read_directory(root: Path) -> Iterator[Member]:
    """Every entry below ``root``, through directory descriptors and ``O_NOFOLLOW``: a
    link is reported as one and never followed, and a directory swapped for a link while
    the walk runs is refused by the open, not entered."""
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield from _walk_fd(top, "")
    finally:
        os.close(top)


def _walk_fd(dir_fd: int, prefix: str) -> Iterator[Member]:
    with os.scandir(dir_fd) as it:
        names = sorted(entry.name for entry in it)
    for name in names:
        rel = prefix + name
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue  # gone since the listing
        mode, mtime = stat.S_IMODE(st.st_mode), st.st_mtime_ns
        if stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
            # A hard link is a name for a file that may live outside the tree.
            yield Member(rel, "link")
        elif stat.S_ISREG(st.st_mode):
            yield Member(rel, "file", mode, mtime, _file_opener(dir_fd, name), st.st_size)
        elif stat.S_ISDIR(st.st_mode):
            yield Member(rel, "dir", mode, mtime)
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            child = os.open(name, flags, dir_fd=dir_fd)
            try:
                yield from _walk_fd(child, rel + "/")
            finally:
                os.close(child)
        else:
            yield Member(rel, "special")


def _file_opener(dir_fd: int, name: str) -> Callable[[], IO[bytes]]:
    def open_file() -> IO[bytes]:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            os.close(fd)
            raise TransferError(
                f"{name!r} stopped being a regular file of its own during the import"
            )
        return os.fdopen(fd, "rb")

    return open_file


def read_tar(path: Path, max_ratio: int = DEFAULT_MAX_RATIO) -> Iterator[Member]:
    raw = path.open("rb")
    try:
        inner = _decompressor(raw)
    except BaseException:
        raw.close()
        raise
    stream: io.BufferedReader | Guarded = (
        raw if inner is None else Guarded(raw, inner, max_ratio, path.name)
    )
    # Buffered above the guard: tarfile reads 512-byte headers, and the guard's check
    # per read is then one per megabyte, not one per header.
    buffered = io.BufferedReader(stream, _CHUNK) if isinstance(stream, Guarded) else stream
    with stream, buffered, tarfile.open(fileobj=buffered, mode="r:") as tar:
        # tar.next(), not iteration: iterating keeps every member's header in
        # tar.members, memory that grows with the archive; nothing here looks back.
        while (info := tar.next()) is not None:
            tar.members.clear()  # type: ignore[attr-defined]  # typeshed omits it
            kind: MemberKind
            if info.isreg():
                kind = "file"
            elif info.isdir():
                kind = "dir"
            elif info.issym() or info.islnk():
                kind = "link"
            else:
                kind = "special"
            opener = _tar_opener(tar, info) if kind == "file" else None
            size = info.size if kind == "file" else None
            yield Member(info.name, kind, info.mode & 0o7777, _tar_mtime(info), opener, size)


def _tar_opener(tar: tarfile.TarFile, info: tarfile.TarInfo) -> Callable[[], IO[bytes]]:
    def open_member() -> IO[bytes]:
        f = tar.extractfile(info)
        return io.BytesIO() if f is None else f

    return open_member


def _tar_mtime(info: tarfile.TarInfo) -> int:
    text = info.pax_headers.get("mtime")
    if text is not None:
        whole, _, frac = text.partition(".")
        if whole.lstrip("-").isdigit() and (frac == "" or frac.isdigit()):
            sign = -1 if whole.startswith("-") else 1
            ns = int(whole) * SECOND_NS + sign * int((frac + "0" * 9)[:9])
            return ns
    return int(info.mtime) * SECOND_NS


def zip_entries(path: Path) -> int | None:
    """The entry count a zip's end record declares (None if it has none), read before
    :mod:`zipfile` builds an object for every entry of the central directory."""
    with path.open("rb") as f:
        size = f.seek(0, io.SEEK_END)
        f.seek(max(0, size - (1 << 16) - 22))
        tail = f.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) < at + 22:
        return None
    count = int(struct.unpack("<H", tail[at + 10 : at + 12])[0])
    if count == 0xFFFF:  # ZIP64: the count is in its own end record
        at64 = tail.rfind(b"PK\x06\x06", 0, at)
        if at64 >= 0 and len(tail) >= at64 + 40:
            count = int(struct.unpack("<Q", tail[at64 + 32 : at64 + 40])[0])
    return count


def read_zip(path: Path, max_ratio: int = DEFAULT_MAX_RATIO) -> Iterator[Member]:
    with zipfile.ZipFile(path) as zf:
        out = sum(info.file_size for info in zf.infolist())
        why = ratio_problem(out, path.stat().st_size, max_ratio)
        if why is not None:
            raise Bomb(
                f"{path.name} declares {why} (more than {max_ratio} times), as a compression"
                " bomb does",
                packed=path.stat().st_size,
                out=out,
            )
        for info in zf.infolist():
            unix = info.external_attr >> 16 if info.create_system == 3 else 0
            kind: MemberKind
            if stat.S_ISLNK(unix):
                kind = "link"
            elif info.is_dir():
                kind = "dir"
            elif stat.S_IFMT(unix) not in (0, stat.S_IFREG):
                # Many tools record only permission bits; a type other than a file is
                # one import does not take.
                kind = "special"
            else:
                kind = "file"
            mode = stat.S_IMODE(unix) if unix else None
            opener = _zip_opener(zf, info) if kind == "file" else None
            size = info.file_size if kind == "file" else None
            packed = info.compress_size if kind == "file" else None
            yield Member(info.filename, kind, mode, _zip_mtime(info), opener, size, packed)


def _zip_opener(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    # zipfile stops a member at the size its header declares (and checks its CRC), so
    # what is read is bounded by that size whatever the compressed data holds.
    return lambda: zf.open(info)


def _zip_mtime(info: zipfile.ZipInfo) -> int:
    extra, seconds = info.extra, None
    while len(extra) >= 4:
        ident, size = struct.unpack("<HH", extra[:4])
        body, extra = extra[4 : 4 + size], extra[4 + size :]
        if ident == _MEMFS_NS and size == 9 and body[0] == 1:
            return int(struct.unpack("<q", body[1:])[0])
        if ident == _UT and size >= 5 and body[0] & 1:
            seconds = struct.unpack("<i", body[1:5])[0]
    if seconds is not None:
        return int(seconds) * SECOND_NS
    return int(time.mktime((*info.date_time, 0, 0, -1))) * SECOND_NS


# --- writing -----------------------------------------------------------------------------


class Writer:
    """Builds an export beside ``dest`` and moves it into place in :meth:`finish`."""

    def add_dir(self, name: str, mode: int, mtime_ns: int) -> None:
        raise NotImplementedError

    def add_file(self, name: str, data: bytes, mode: int, mtime_ns: int) -> None:
        raise NotImplementedError

    def add_path(self, name: str, source: Path) -> None:
        """Add the file at ``source`` (the history store) under ``name``."""
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError


def open_writer(dest: Path, fmt: Format) -> Writer:
    if fmt == "directory":
        return DirectoryWriter(dest)
    if fmt == "zip":
        return ZipWriter(dest)
    return TarWriter(dest, gzip=fmt == "tar.gz")


def _temp_beside(dest: Path, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix, dir=dest.parent)
    os.close(fd)
    return Path(name)


class DirectoryWriter(Writer):
    def __init__(self, dest: Path) -> None:
        self.dest = dest
        tmp = tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".export", dir=dest.parent)
        self.tmp = Path(tmp)
        # Directory modes and mtimes go on last, deepest first: writing a child changes
        # its directory's mtime, and a read-only mode would stop the children.
        self._dirs: list[tuple[Path, int, int]] = []

    def add_dir(self, name: str, mode: int, mtime_ns: int) -> None:
        path = self.tmp / name
        path.mkdir(mode=0o700)
        self._dirs.append((path, mode, mtime_ns))

    def add_file(self, name: str, data: bytes, mode: int, mtime_ns: int) -> None:
        path = self.tmp / name
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(path, flags, 0o600)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
            os.fchmod(fd, mode)
            os.utime(fd, ns=(mtime_ns, mtime_ns))
        finally:
            os.close(fd)

    def add_path(self, name: str, source: Path) -> None:
        shutil.copyfile(source, self.tmp / name)

    def finish(self) -> None:
        for path, mode, mtime_ns in reversed(self._dirs):
            os.chmod(path, mode)
            os.utime(path, ns=(mtime_ns, mtime_ns))
        # rename(2) replaces an empty directory, so an empty DEST is taken over whole.
        os.rename(self.tmp, self.dest)

    def abort(self) -> None:
        for path, _, _ in self._dirs:
            path.chmod(0o700)  # a read-only directory from the tree must not stop the cleanup
        shutil.rmtree(self.tmp, ignore_errors=True)


class TarWriter(Writer):
    def __init__(self, dest: Path, *, gzip: bool) -> None:
        self.dest = dest
        self.tmp = _temp_beside(dest, ".tmp")
        # Closed by finish() or abort(): the archive lives as long as the export.
        if gzip:
            self.tar = tarfile.open(  # noqa: SIM115
                self.tmp, "w:gz", format=tarfile.PAX_FORMAT, compresslevel=6
            )
        else:
            self.tar = tarfile.open(self.tmp, "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115

    def _info(self, name: str, kind: bytes, mode: int, mtime_ns: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type, info.mode = kind, mode
        seconds, ns = divmod(mtime_ns, SECOND_NS)
        info.mtime = seconds
        info.pax_headers = {"mtime": f"{seconds}.{ns:09d}"}
        return info

    def add_dir(self, name: str, mode: int, mtime_ns: int) -> None:
        self.tar.addfile(self._info(name, tarfile.DIRTYPE, mode, mtime_ns))

    def add_file(self, name: str, data: bytes, mode: int, mtime_ns: int) -> None:
        info = self._info(name, tarfile.REGTYPE, mode, mtime_ns)
        info.size = len(data)
        self.tar.addfile(info, io.BytesIO(data))

    def add_path(self, name: str, source: Path) -> None:
        st = source.stat()
        info = self._info(name, tarfile.REGTYPE, 0o600, st.st_mtime_ns)
        info.size = st.st_size
        with source.open("rb") as f:
            self.tar.addfile(info, f)

    def finish(self) -> None:
        self.tar.close()
        os.rename(self.tmp, self.dest)

    def abort(self) -> None:
        try:
            self.tar.close()
        except OSError:
            pass  # the disk that failed the export fails the close too: remove it anyway
        finally:
            self.tmp.unlink(missing_ok=True)


class ZipWriter(Writer):
    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self.tmp = _temp_beside(dest, ".tmp")
        self.zip = zipfile.ZipFile(self.tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6)

    def _info(self, name: str, unix_mode: int, mtime_ns: int) -> zipfile.ZipInfo:
        seconds = mtime_ns // SECOND_NS
        moment = time.localtime(seconds)[:6]
        info = zipfile.ZipInfo(name, date_time=max(moment, _ZIP_EPOCH))
        info.create_system = 3
        info.external_attr = unix_mode << 16
        ut = struct.pack("<HHBi", _UT, 5, 1, max(min(seconds, 2**31 - 1), -(2**31)))
        info.extra = ut + struct.pack("<HHBq", _MEMFS_NS, 9, 1, mtime_ns)
        return info

    def add_dir(self, name: str, mode: int, mtime_ns: int) -> None:
        info = self._info(name + "/", stat.S_IFDIR | mode, mtime_ns)
        info.external_attr |= 0x10  # the MS-DOS directory bit, for tools that look there
        self.zip.writestr(info, b"")

    def add_file(self, name: str, data: bytes, mode: int, mtime_ns: int) -> None:
        info = self._info(name, stat.S_IFREG | mode, mtime_ns)
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)

    def add_path(self, name: str, source: Path) -> None:
        info = self._info(name, stat.S_IFREG | 0o600, source.stat().st_mtime_ns)
        info.compress_type = zipfile.ZIP_DEFLATED
        with source.open("rb") as f, self.zip.open(info, "w", force_zip64=True) as out:
            shutil.copyfileobj(f, out)

    def finish(self) -> None:
        self.zip.close()
        os.rename(self.tmp, self.dest)

    def abort(self) -> None:
        try:
            self.zip.close()
        except OSError:
            pass  # the disk that failed the export fails the close too: remove it anyway
        finally:
            self.tmp.unlink(missing_ok=True)
