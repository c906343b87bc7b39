"""The mount's write-ahead journal: every acknowledged change to a buffer, on disk first.

A FUSE ``write`` (or ``create``, ``truncate``, ``chmod`` of an uncommitted file) returns
only after its record is in this file, appended with one ``write(2)``. The page cache
keeps what a write(2) wrote when the process dies, so a daemon killed with ``kill -9``
(or OOM-killed, or crashed) leaves every acknowledged change here; the next mount of the
same store replays it (:func:`replay`) and commits the files. Power loss is not covered
by the journal (no fsync per write, like any disk's page cache); fsync of a file
commits it to the store, whose ``synchronous`` setting says how durable that is, except
for a large file: its fsync makes this file durable (:meth:`Journal.sync_data`) and its
commit follows in the background, as a database's log is synced and applied later.

Format: records of ``crc32 (4) | length (4) | type (1) | payload``, little-endian; the
CRC covers length, type and payload. Replay stops at the first record that is short or
fails its CRC: only the last record can be torn, and it was never acknowledged (its
write(2) had not returned when the process died).

A buffer's change lands on the store by compare-and-set, possibly rebased onto newer
content (:mod:`memfs.store.rebase`), so replaying it twice would append its tail twice.
Before each attempt a LANDING record names the target path, the expected revision and
the SHA-256 of the bytes about to be written, and how many bytes of the buffer they
hold (writes that come while a landing is in flight go past them, under the same
buffer); a replay whose last landing is already in the store's history was committed
before the daemon could note it, and is not redone: only the bytes past it are, on top
of the revision it made.
A SHAPE record (written when a buffer's whole content is journaled again: compaction,
recovery) keeps how the change relates to its base; without one it is derived from the
writes (an O_APPEND tail, a rewrite from truncate to 0, an edit in place). A TIMES
record keeps an mtime set after the last write (tar's utimens after close), which the
commit lands with the content; a later WRITE or TRUNCATE forgets it. A TURN record
closes the bytes up to an offset as the revision of the buffer's author so far and
names the author of what follows (another program appending in turn:
:meth:`memfs.mount.buffer.Buffer.queue_turn`), so a replay lands each as its own.

Each daemon writes its own file, ``<dir>/<pid>-<n>.journal``, and holds an exclusive
``flock`` on it while it runs. A journal nobody holds belongs to a daemon that is gone:
:func:`orphans` finds those for recovery.

Records of finished buffers stay until the file is reset or compacted, so a secret
written and then overwritten is still here. ``memfs redact`` has the daemon compact its
journal durably (:meth:`Journal.sync` before the old file goes) and shred the old one
(:func:`shred_file`: its bytes overwritten with zeros and flushed before the unlink, as
SQLite's ``secure_delete`` does for the store), so they are not left in free blocks.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memfs.store.rebase import Shape

_HEAD = struct.Struct("<IIB")  # crc, length of type + payload, type
_OPEN = struct.Struct("<QqIB")  # id, base_rev, mode, flags; then path and author
_POS = struct.Struct("<QQ")  # id, offset or size
_MODE = struct.Struct("<QI")
_TIMES = struct.Struct("<Qq")  # id, mtime (ns) a utimens set after the last write
_ID = struct.Struct("<Q")
_TEXT = struct.Struct("<H")
_SHAPE = struct.Struct("<QBQ")  # id, shape code, base_size
_LANDING = struct.Struct("<Qq32s")  # id, expected revision, sha256; then the target path
# The same, and how many of the buffer's bytes the landing holds.
_LANDING_AT = struct.Struct("<Qq32sQ")

OPEN, WRITE, TRUNCATE, MODE, DONE, SHAPE, LANDING, TIMES, LANDING_AT, TURN, SEAL = range(1, 12)
_SHAPES = {Shape.APPEND: 0, Shape.WHOLE: 1, Shape.EDIT: 2}
_CODES = {code: shape for shape, code in _SHAPES.items()}
# OPEN flags. CREATED: the file did not exist in the store (commit must create it).
# WHOLE: the journal holds the whole content from here on; no base to load at replay.
# SEALED: a buffer journaled anew whole, in several records that a SEAL record ends;
# without it (the daemon died in between) the buffer is torn and the replay drops it,
# keeping the version it was to replace (still pending, or in an older journal).
CREATED, WHOLE, SEALED = 1, 2, 4

SUFFIX = ".journal"
RESET_AT_BYTES = 4 << 20


def _text(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogateescape")
    return _TEXT.pack(len(raw)) + raw


@dataclass(slots=True)
class Recovered:
    """One buffer rebuilt from a journal: what its writer had been acknowledged."""

    path: str
    author: str
    base_rev: int
    mode: int
    created: bool
    whole: bool
    data: bytearray = field(default_factory=bytearray)
    base_size: int = 0
    shape: Shape = Shape.WHOLE
    # The last commit attempt: (target path, expected revision, sha256 of its bytes).
    landing: tuple[str, int, bytes] | None = None
    # How many bytes of ``data`` that attempt held (None: all, as old journals say).
    landing_upto: int | None = None
    # An mtime set (utimens) after the last write: acknowledged, so it lands with it.
    mtime_ns: int | None = None
    # Turns closed before ``author``'s bytes at the end: (end, author), in order.
    turns: list[tuple[int, str]] = field(default_factory=list)


class Journal:
    """The append side, owned by one daemon (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory = directory
        for n in range(1000):
            path = directory / f"{os.getpid()}-{n}{SUFFIX}"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            except FileExistsError:
                continue
            break
        else:  # pragma: no cover - a thousand journals of one pid cannot all exist
            raise OSError(errno.EEXIST, "no free journal name", str(directory))
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.path = path
        self._fd = fd
        self.size = 0
        # Appends come under the mount's lock, except a landing's record, which comes
        # from inside a store transaction that the mount's lock must never wait behind.
        self._appending = threading.Lock()
        self._named = False  # whether the directory's entry for the file is durable

    # --- records ------------------------------------------------------------------------
    def opened(
        self, ident: int, path: str, author: str, base_rev: int, mode: int, flags: int
    ) -> None:
        body = _OPEN.pack(ident, base_rev, mode, flags) + _text(path) + _text(author)
        self._append(OPEN, body)

    def wrote(self, ident: int, offset: int, data: bytes | bytearray | memoryview) -> None:
        self._append(WRITE, _POS.pack(ident, offset), data)

    def truncated(self, ident: int, size: int) -> None:
        self._append(TRUNCATE, _POS.pack(ident, size))

    def moded(self, ident: int, mode: int) -> None:
        self._append(MODE, _MODE.pack(ident, mode))

    def timed(self, ident: int, mtime_ns: int) -> None:
        self._append(TIMES, _TIMES.pack(ident, mtime_ns))

    def done(self, ident: int) -> None:
        self._append(DONE, _ID.pack(ident))

    def sealed(self, ident: int) -> None:
        """Buffer ``ident``, opened SEALED, is whole in the journal from here on."""
        self._append(SEAL, _ID.pack(ident))

    def turned(self, ident: int, end: int, author: str) -> None:
        """The bytes of buffer ``ident`` up to ``end`` are its author's so far; what
        follows is ``author``'s."""
        self._append(TURN, _POS.pack(ident, end) + _text(author))

    def shaped(self, ident: int, shape: Shape, base_size: int) -> None:
        self._append(SHAPE, _SHAPE.pack(ident, _SHAPES[shape], base_size))

    def landing(self, ident: int, target: str, expected: int, sha256: bytes, upto: int) -> None:
        """Buffer ``ident``'s first ``upto`` bytes are about to land at ``target`` as the
        content whose SHA-256 is ``sha256`` (rebased, it may be other bytes)."""
        body = _LANDING_AT.pack(ident, expected, sha256, upto)
        self._append(LANDING_AT, body + _text(target))

    def _append(self, kind: int, body: bytes, data: bytes | bytearray | memoryview = b"") -> None:
        length = 1 + len(body) + len(data)
        crc = zlib.crc32(data, zlib.crc32(body, zlib.crc32(struct.pack("<IB", length, kind))))
        head = _HEAD.pack(crc, length, kind)
        want = 8 + length  # crc and length, then the type and payload they cover
        with self._appending:
            try:
                wrote = os.writev(self._fd, [head, body, data] if data else [head, body])
            except OSError:
                self._cut()
                raise
            if wrote != want:
                # A short append (the disk filled mid-record): take it back, so the
                # journal never holds a half record before later whole ones, and refuse
                # the call.
                self._cut()
                raise OSError(errno.ENOSPC, "the journal's disk is full")
            self.size += want

    def _cut(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self.size)

    # --- housekeeping -------------------------------------------------------------------
    def reset(self) -> None:
        """Nothing is pending any more: start the file over once it has grown. Not on
        every empty moment: freeing a file's blocks can mean a slow discard on the disk,
        and a killed daemon inside that ftruncate cannot die until it ends."""
        with self._appending:
            if self.size > RESET_AT_BYTES:
                os.ftruncate(self._fd, 0)
                self.size = 0

    def sync(self) -> None:
        """Make every record appended so far durable, the file's name too: before the
        journal it replaces goes (a compaction that must survive power loss)."""
        os.fsync(self._fd)
        sync_dir(self.directory)
        self._named = True

    def sync_data(self) -> None:
        """Make every record appended before the call durable (and the file's name, the
        first time): an fsync of a file whose commit follows it (see
        ``PendingWrites.sync``). Appends go on meanwhile: the sync runs on a duplicate
        of the descriptor, taken under the append lock, so a close meanwhile cannot hand
        its number to another file. A journal closed already has nothing to sync (its
        buffers went whole into the one that replaced it, synced by that compaction)."""
        with self._appending:
            if self._fd < 0:
                return
            fd = os.dup(self._fd)
        try:
            os.fdatasync(fd)
            if not self._named:
                sync_dir(self.directory)
                self._named = True
        finally:
            os.close(fd)

    def close(self, *, keep: bool, shred: bool = False) -> None:
        """Stop appending; ``keep`` leaves the file for the next mount to replay, and
        ``shred`` overwrites a file that goes (:func:`shred_file`)."""
        if self._fd < 0:
            return
        if not keep:
            if shred:
                shred_file(self.path)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        with self._appending:
            os.close(self._fd)
            self._fd = -1


def sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_ZEROS = bytes(1 << 20)


def shred_file(path: Path) -> None:
    """Overwrite ``path``'s bytes with zeros and flush them (the caller unlinks it), so
    what it held is not left readable in the disk's free blocks. Its own descriptor:
    a journal's is O_APPEND, where Linux's pwrite ignores the offset."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fd).st_size
        done = 0
        while done < size:
            done += os.pwrite(fd, _ZEROS[: min(len(_ZEROS), size - done)], done)
        os.fsync(fd)
    finally:
        os.close(fd)


def orphans(directory: Path) -> Iterator[tuple[Path, int]]:
    """Journals in ``directory`` whose daemon is gone, each yielded while this process
    holds its lock (as an fd, closed after the caller's step): nobody else replays it."""
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("*" + SUFFIX), key=lambda p: p.stat().st_mtime_ns):
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live daemon's journal
            if not path.exists():
                continue  # replayed and removed by another process just now
            yield path, fd
        finally:
            os.close(fd)


def abandoned(directory: Path) -> list[Path]:
    """Journals in ``directory`` that hold acknowledged writes no live daemon holds
    (nothing is taken: for `memfs status` to say a mount of that store would save them)."""
    found = []
    for path, _fd in orphans(directory):
        with contextlib.suppress(OSError):
            if holds_pending(path):
                found.append(path)
    return found


def holds_pending(path: Path) -> bool:
    """Whether the journal at ``path`` holds a buffer opened and not done (it may be a
    live daemon's: a landing is done in the journal just after the store has it)."""
    return bool(_pending(list(_records(path.read_bytes()))))


def _records(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """``(type, payload)`` of each whole record, up to the first short or damaged one."""
    view = memoryview(data)
    pos = 0
    while pos + _HEAD.size <= len(data):
        crc, length, kind = _HEAD.unpack_from(data, pos)
        end = pos + 8 + length
        if length < 1 or end > len(data) or zlib.crc32(view[pos + 4 : end]) != crc:
            return
        yield kind, view[pos + _HEAD.size : end]
        pos = end


def _pending(records: list[tuple[int, memoryview]]) -> set[int]:
    """Buffers opened and never done: what the journal still holds for the store."""
    live: set[int] = set()
    for kind, body in records:
        if kind == OPEN:
            live.add(_OPEN.unpack_from(body)[0])
        elif kind == DONE:
            live.discard(_ID.unpack_from(body)[0])
    return live


def _text_at(body: memoryview, at: int) -> tuple[str, int]:
    (n,) = _TEXT.unpack_from(body, at)
    return bytes(body[at + 2 : at + 2 + n]).decode("utf-8", "surrogateescape"), at + 2 + n


def replay(path: Path, base: Callable[[str, int], bytes]) -> list[Recovered]:
    """The buffers a journal left pending (opened and not done), in opening order.

    ``base(path, rev)`` gives the content a buffer of an existing file started from (its
    writes are offsets into it); it is asked only for pending buffers that were not
    WHOLE, so a journal full of finished saves costs no store reads."""
    records = list(_records(path.read_bytes()))
    pending = _pending(records)
    live: dict[int, Recovered] = {}
    low: dict[int, int] = {}  # lowest offset touched, for buffers with no SHAPE record
    shaped: set[int] = set()
    unsealed: set[int] = set()  # opened SEALED, their SEAL not (yet) read
    for kind, body in records:
        if kind == OPEN:
            ident, base_rev, mode, flags = _OPEN.unpack_from(body)
            if ident not in pending:
                continue
            name, at = _text_at(body, _OPEN.size)
            author, _ = _text_at(body, at)
            whole = bool(flags & (WHOLE | CREATED))
            opened = Recovered(
                path=name,
                author=author,
                base_rev=base_rev,
                mode=mode,
                created=bool(flags & CREATED),
                whole=whole,
            )
            if not whole:
                opened.data = bytearray(base(name, base_rev))
                opened.base_size = len(opened.data)
                low[ident] = opened.base_size
            live[ident] = opened
            if flags & SEALED:
                unsealed.add(ident)
            continue
        ident = _ID.unpack_from(body)[0]
        buf = live.get(ident)
        if buf is None:
            continue
        if kind == WRITE:
            (_, offset) = _POS.unpack_from(body)
            chunk = body[_POS.size :]
            if offset > len(buf.data):
                buf.data.extend(b"\0" * (offset - len(buf.data)))
            buf.data[offset : offset + len(chunk)] = chunk
            low[ident] = min(low.get(ident, 0), offset)
            buf.mtime_ns = None  # a write moves the mtime
        elif kind == TRUNCATE:
            (_, size) = _POS.unpack_from(body)
            if size < len(buf.data):
                del buf.data[size:]
            else:
                buf.data.extend(b"\0" * (size - len(buf.data)))
            low[ident] = min(low.get(ident, 0), size)
            buf.mtime_ns = None
            if size == 0:
                buf.whole = True
        elif kind == MODE:
            buf.mode = _MODE.unpack_from(body)[1]
        elif kind == TIMES:
            buf.mtime_ns = _TIMES.unpack_from(body)[1]
        elif kind == SEAL:
            unsealed.discard(ident)
        elif kind == TURN:
            (_, end) = _POS.unpack_from(body)
            if end > (buf.turns[-1][0] if buf.turns else buf.base_size):
                buf.turns.append((end, buf.author))
            buf.author, _ = _text_at(body, _POS.size)  # (no bytes since: a hand-over)
        elif kind == SHAPE:
            _, code, buf.base_size = _SHAPE.unpack_from(body)
            buf.shape = _CODES.get(code, Shape.WHOLE)
            shaped.add(ident)
        elif kind == LANDING:
            _, expected, sha = _LANDING.unpack_from(body)
            target, _ = _text_at(body, _LANDING.size)
            buf.landing, buf.landing_upto = (target, expected, bytes(sha)), None
        elif kind == LANDING_AT:
            _, expected, sha, upto = _LANDING_AT.unpack_from(body)
            target, _ = _text_at(body, _LANDING_AT.size)
            buf.landing, buf.landing_upto = (target, expected, bytes(sha)), upto
    for ident in unsealed:
        del live[ident]  # torn: what it was to replace is still pending
    for ident, buf in live.items():
        if ident in shaped:
            continue
        if buf.whole:
            buf.shape = Shape.WHOLE
        else:
            buf.shape = Shape.APPEND if low[ident] >= buf.base_size else Shape.EDIT
    return list(live.values())


def quarantined(directory: Path) -> list[Path]:
    """Journals set aside by :func:`quarantine` in ``directory``, oldest name first."""
    if not directory.is_dir():
        return []
    return sorted(directory.glob("*.failed-*"))


def quarantine(path: Path) -> Path:
    """Set a journal aside that could not be replayed whole, so no later mount retries
    it forever; the file stays for a person (named in the log)."""
    target = path.with_name(f"{path.stem}.failed-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, target)
    return target
