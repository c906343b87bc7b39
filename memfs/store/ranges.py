"""Reading a revision by byte range: large files served in pieces, checked once.

:meth:`memfs.store.base.Store.open_revision` gives a :class:`RevisionReader`. Opening
it checks the revision's stored bytes against their SHA-256 once, streaming them in
chunks (never the whole file in memory), and raises
:class:`~memfs.errors.Damaged` as :meth:`~memfs.store.base.Store.read_revision` does;
each :meth:`RevisionReader.read` then fetches only the range asked for. Content is
addressed by its hash and never changes in place (a damaged blob is only ever put back
to the bytes it should hold), so bytes checked at the open are the bytes served; a
range that comes back short, or content that went away since (redacted), raises
instead of returning other bytes.

:class:`StoredReader` serves a backend's stored bytes through one callable that reads a
stored range (SQLite's incremental blob I/O, PostgreSQL's ``substring`` of an
uncompressed value); bytes stored zlib-packed are inflated as a stream, forward from
where the last read ended (a sequential read costs one pass; a read behind it starts
again from the beginning). :class:`WholeReader` is the fallback for a backend that only
reads whole revisions.
"""

from __future__ import annotations

import hashlib
import io
import threading
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from memfs.errors import Damaged, NotFound
from memfs.store.rules import damaged

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

# Stored bytes are fetched in chunks this large to check them and to inflate them.
CHUNK = 1 << 20
# Content no larger is read whole by one query and served by slicing (a reader of its
# own, a connection and a blob handle, would cost more than it saves).
SMALL_CONTENT = 1 << 20

# fetch(offset, size) -> up to size stored bytes from offset (fewer only at the end), or
# None when the content is no longer stored.
Fetch = Callable[[int, int], "bytes | None"]


class RevisionReader:
    """Revision ``rev`` of ``path`` to read by range; see the module docstring."""

    path: str
    rev: int
    size: int
    sha256: str

    def read(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset`` (fewer past the end, b"" beyond it)."""
        raise NotImplementedError

    @property
    def held(self) -> int:
        """About how many bytes of content the reader holds in memory at most."""
        return 2 * CHUNK

    def close(self) -> None:
        """Let go of what the reader holds in the store (reads after it may fail)."""
        return None


class WholeReader(RevisionReader):
    """A revision read whole (and checked) by the backend, served by slicing."""

    def __init__(self, path: str, rev: int, data: bytes) -> None:
        self.path = path
        self.rev = rev
        self.size = len(data)
        self.sha256 = hashlib.sha256(data).hexdigest()
        self._data = data

    def read(self, offset: int, size: int) -> bytes:
        return self._data[offset : offset + size]

    @property
    def held(self) -> int:
        return self.size


class StoredReader(RevisionReader):
    """A revision's stored bytes read in ranges through ``fetch``; ``packed``: they are
    zlib-packed (``stored`` bytes of them), else they are the content itself."""

    def __init__(
        self,
        path: str,
        rev: int,
        size: int,
        sha256: str,
        *,
        fetch: Fetch,
        packed: bool,
        stored: int,
        close: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.rev = rev
        self.size = size
        self.sha256 = sha256
        self._fetch = fetch
        self._close = close
        self._packed = packed
        self._stored = stored
        self._lock = threading.Lock()
        self._inflater: _Inflater | None = None
        self._check()

    def _damaged(self) -> Damaged:
        return damaged(self.path, self.rev, self.sha256)

    def _gone(self) -> NotFound:
        return NotFound(
            f"revision {self.rev} of '{self.path}' is no longer stored (redacted or removed)",
            path=self.path,
        )

    def _stored_range(self, offset: int, size: int) -> bytes:
        got = self._fetch(offset, size)
        if got is None:
            raise self._gone()
        if len(got) != min(size, max(self._stored - offset, 0)):
            raise self._damaged()  # stored bytes shorter than when they were checked
        return got

    def _check(self) -> None:
        """The once-per-open check: every stored byte, in chunks, against the hash."""
        digest = hashlib.sha256()
        if self._packed:
            inflater = _Inflater(self._stored_range, self._stored)
            try:
                for piece in inflater.stream():
                    digest.update(piece)
            except zlib.error as e:
                raise self._damaged() from e
            length = inflater.out
        else:
            length = 0
            while length < self._stored:
                piece = self._stored_range(length, CHUNK)
                digest.update(piece)
                length += len(piece)
        if length != self.size or digest.hexdigest() != self.sha256:
            raise self._damaged()

    def read(self, offset: int, size: int) -> bytes:
        if offset >= self.size or size <= 0:
            return b""
        size = min(size, self.size - offset)
        if not self._packed:
            return self._stored_range(offset, size)
        with self._lock:
            if self._inflater is None or offset < self._inflater.start:
                self._inflater = _Inflater(self._stored_range, self._stored)
            try:
                got = self._inflater.take(offset, size)
            except zlib.error as e:
                raise self._damaged() from e
        if len(got) != size:
            raise self._damaged()
        return got

    def close(self) -> None:
        if self._close is not None:
            self._close()


class _Inflater:
    """zlib-packed stored bytes inflated forward, keeping the output from ``start`` on
    (at most what one request asked for plus one chunk's worth)."""

    def __init__(self, fetch: Callable[[int, int], bytes], stored: int) -> None:
        self._fetch = fetch
        self._stored = stored
        self._z = zlib.decompressobj()
        self._in = 0  # stored bytes taken
        self._pending = b""  # taken but not yet inflated (the output bound stopped it)
        self.start = 0  # the offset of the kept output's first byte
        self.out = 0  # the offset just past the kept output
        self._kept = bytearray()

    def _more(self) -> bytes:
        """The next piece of output (b"" at the end)."""
        while True:
            if not self._pending and self._in < self._stored:
                self._pending = self._fetch(self._in, CHUNK)
                self._in += len(self._pending)
            if self._pending:
                piece = self._z.decompress(self._pending, CHUNK)
                self._pending = self._z.unconsumed_tail
                if piece:
                    self.out += len(piece)
                    return piece
                continue
            if self._in >= self._stored:
                piece = self._z.flush()
                self.out += len(piece)
                if not self._z.eof:
                    raise zlib.error("the packed content ends early")
                return piece

    def stream(self) -> _Stream:
        return _Stream(self)

    def take(self, offset: int, size: int) -> bytes:
        # Drop what lies before the range: reads go forward.
        if offset > self.start:
            del self._kept[: offset - self.start]
            self.start = min(offset, self.out)
        while self.out < offset + size:
            piece = self._more()
            if not piece:
                break
            self._kept += piece
            if self.start < offset:  # output that was all before the range
                cut = min(offset - self.start, len(self._kept))
                del self._kept[:cut]
                self.start += cut
        return bytes(self._kept[offset - self.start : offset - self.start + size])


class _Stream:
    """Every piece of an inflater's output, in order."""

    def __init__(self, inflater: _Inflater) -> None:
        self._inflater = inflater

    def __iter__(self) -> _Stream:
        return self

    def __next__(self) -> bytes:
        piece = self._inflater._more()
        if not piece:
            raise StopIteration
        return piece


class ReaderFile(io.RawIOBase):
    """A :class:`RevisionReader` as a read-only, seekable file object, for servers
    that stream a file object by range (WebDAV's GET): only the ranges read are
    fetched. Closing it closes the reader."""

    def __init__(self, reader: RevisionReader) -> None:
        super().__init__()
        self._reader = reader
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._reader.size}
        if whence not in base:
            raise ValueError(f"invalid whence {whence}")
        pos = base[whence] + offset
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self._reader.read(self._pos, min(len(view), CHUNK))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()
