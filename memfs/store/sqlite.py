"""The embedded default store: one SQLite file shared by every process that opens it.

Durability: WAL with ``synchronous=NORMAL`` by default. A call that returned has its
transaction in the WAL, so it survives the process being killed (kill -9, a crash of the
FUSE daemon); only a power loss or OS crash can drop the last few commits.
``synchronous=full`` (URL option) makes each commit wait for fsync and survive that too.

Concurrency: every mutation is one ``BEGIN IMMEDIATE`` transaction; writers in other
processes wait up to ``busy_timeout`` seconds (default 5) for the lock. Readers never
wait (WAL). Each thread gets its own connection (:mod:`memfs.store.sqlite_conn`), so the
FUSE daemon's threads read in parallel. The file must be on a local file system: WAL
coordinates processes through shared memory, which network file systems do not
provide; several hosts sharing one tree need a server backend (PostgreSQL).

The algorithm is :mod:`memfs.store.engine`'s; this module is the SQLite page of it
(:class:`SqliteDialect`): one tree per file, so no tree column; the counters in the
``counters`` table; content in ``blobs``, zlib-packed where that pays, one row per
SHA-256 counted by ``blob_refs`` (triggers on ``revisions``). URL forms and options:
:mod:`memfs.store.sqlite_options`; the file format, its checks and migrations:
:mod:`memfs.store.sqlite_schema`; the full-text index: :mod:`memfs.store.sqlite_search`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import weakref
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from memfs.store import sqlite_wake
from memfs.store.base import Usage
from memfs.store.deltas import Bases, content_of
from memfs.store.engine import SqlStore
from memfs.store.sql import Cursor, Params
from memfs.store.sqlite_conn import SqliteConnections, SqliteCursor
from memfs.store.sqlite_options import SqliteOptions, parse_options, path_from_url
from memfs.store.sqlite_schema import translate
from memfs.store.sqlite_search import BASE_JOIN as _BASE
from memfs.store.sqlite_search import SqliteSearch
from memfs.store.sqlite_watch import FileWatch, rescue

__all__ = ["SqliteDialect", "SqliteStore", "open_sqlite"]

# blobs.codec: how blobs.content holds a revision's bytes.
RAW, ZLIB = 0, 1
# Bases met while checking a blob that is written again are not kept.
_UNCACHED = Bases(0, 0)
_PACK_FROM = 4096
_SAMPLE = 64 << 10
# Content at least this large goes into its row in chunks of _STREAM_CHUNK.
_STREAM_FROM = 4 << 20
_STREAM_CHUNK = 1 << 20


def pack_blob(data: bytes | bytearray) -> tuple[int, bytes | bytearray]:
    """``(codec, stored)`` for ``data``: zlib (level 1) where it saves at least an
    eighth. Files written at offsets (holes of zeros, repeated patterns) and text shrink
    many times over, and every commit writes its blob twice (WAL, then checkpoint); a
    sample decides first so incompressible data costs no full compression."""
    if len(data) < _PACK_FROM:
        return RAW, data
    if len(data) > 2 * _SAMPLE:
        sample = data[:_SAMPLE]
        if len(zlib.compress(sample, 1)) > len(sample) * 7 // 8:
            return RAW, data
    packed = zlib.compress(data, 1)
    if len(packed) > len(data) * 7 // 8:
        return RAW, data
    return ZLIB, packed


class SqliteDialect:
    """:class:`memfs.store.sql.Dialect` for SQLite (3.35 or newer: RETURNING)."""

    tree_column = ""
    tree_value = ""
    stored = "b.codec, b.content, b.base, bb.codec, bb.content"
    begin = (
        "SELECT (SELECT value FROM counters WHERE name = 'rev'),"
        " (SELECT seq FROM changes ORDER BY seq DESC LIMIT 1), (SELECT min(due_ns) FROM gone),"
        " (SELECT max(id) FROM operations)"
    )
    usage = (
        "SELECT (SELECT value FROM counters WHERE name = 'files'),"
        " (SELECT value FROM counters WHERE name = 'dirs'),"
        " (SELECT value FROM counters WHERE name = 'bytes')"
    )
    # refs > 0: a blob only while a revision (or a row continuing it) holds it.
    blob = (
        f"SELECT {stored} FROM blob_refs br JOIN blobs b ON b.id = br.blob_id{_BASE}"
        " WHERE br.sha256 = :sha AND br.refs > 0"
    )
    blob_base = (
        "SELECT b.base FROM blob_refs br JOIN blobs b ON b.id = br.blob_id"
        " WHERE br.sha256 = :sha AND br.refs > 0"
    )
    continuing = (
        "SELECT br.sha256 FROM blobs b JOIN blob_refs br ON br.blob_id = b.id WHERE b.base = :sha"
    )
    # A row continuing a base is small (memfs.store.deltas): never read by range.
    blob_extent = (
        "SELECT b.codec = 1, length(b.content), b.base IS NULL FROM blob_refs br JOIN blobs b"
        " ON b.id = br.blob_id WHERE br.sha256 = :sha AND br.refs > 0"
    )

    _record = (
        "INSERT INTO changes (seq, kind, path, old_path, author, time_ns, rev, size, sha256,"
        " op, mode, target, prior_kind, prior_sha256, prior_size, prior_mode, prior_target)"
        " VALUES (:seq, :kind, :p, :old, :author, :now, :rev, :size, :sha, :op, :mode,"
        " :target, :pkind, :psha, :psize, :pmode, :ptarget)"
    )

    def t(self, alias: str = "") -> str:
        return ""

    def greatest(self, a: str, b: str) -> str:
        return f"max({a}, {b})"

    def contains(self, text: str, part: str) -> str:
        return f"instr({text}, {part}) > 0"

    def octets(self, column: str) -> str:
        return f"length(CAST({column} AS BLOB))"  # the text's UTF-8 bytes

    def content(self, rev: str, *, left: bool = False, on: str = "") -> str:
        join = "LEFT JOIN" if left else "JOIN"
        cond = f"{on} AND " if on else ""
        return (
            f"{join} blob_refs br ON {cond}br.sha256 = {rev}.sha256"
            f" {join} blobs b ON b.id = br.blob_id{_BASE}"
        )

    def render(self, sql: str) -> str:
        return sql  # sqlite3 takes :name placeholders as they are

    def append(self, db: Cursor, records: Sequence[Params]) -> None:
        db.many(self._record, records)

    def finish(
        self,
        db: Cursor,
        rev: int,
        seq: int,
        op: int,
        records: Sequence[Params],
        grown: Usage,
        operations: Sequence[tuple[str, Params]],
    ) -> None:
        for sql, params in operations:
            db.run(sql, params)
        db.many(self._record, records)
        # The feed's numbers are its rows' own (changes.seq); only the revision counter
        # and the totals are kept apart.
        db.run(
            "UPDATE counters SET value = CASE name WHEN 'rev' THEN :rev"
            " ELSE value + CASE name WHEN 'files' THEN :files WHEN 'dirs' THEN :dirs"
            " ELSE :bytes END END WHERE name IN ('rev', 'files', 'dirs', 'bytes')",
            {"rev": rev, "files": grown.files, "dirs": grown.dirs, "bytes": grown.bytes},
        )

    def put_blob(self, db: Cursor, sha256: str, data: bytes | bytearray) -> None:
        held = db.one(
            f"SELECT b.id, {self.stored} FROM blob_refs br JOIN blobs b ON b.id = br.blob_id"
            f"{_BASE} WHERE br.sha256 = :sha",
            {"sha": sha256},
        )
        if held is not None:
            if content_of(self.unpack, held, 1, _UNCACHED) != data:
                # Damaged: the bytes written now are the ones it should hold.
                self._rewrite(db, int(held[0]), data, held[3])
            return
        codec, stored = pack_blob(data)
        if len(stored) < _STREAM_FROM:
            row = db.one(
                "INSERT INTO blobs (codec, content) VALUES (:codec, :content) RETURNING id",
                {"codec": codec, "content": stored},
            )
            assert row is not None
        else:
            # Bound as a parameter, the bytes would be copied whole into SQLite first:
            # the row is made at its size and filled in chunks by incremental blob I/O.
            row = db.one(
                "INSERT INTO blobs (codec, content) VALUES (:codec, zeroblob(:n)) RETURNING id",
                {"codec": codec, "n": len(stored)},
            )
            assert row is not None and isinstance(db, SqliteCursor)
            view = memoryview(stored)
            try:
                with db.db.blobopen("blobs", "content", row[0]) as blob:
                    for start in range(0, len(view), _STREAM_CHUNK):
                        blob.write(view[start : start + _STREAM_CHUNK])
            except sqlite3.Error as e:
                raise translate(e, db.path) from e
        # refs starts at 0: the revision row's insert trigger counts it.
        db.run(
            "INSERT INTO blob_refs (sha256, blob_id, refs) VALUES (:sha, :id, 0)",
            {"sha": sha256, "id": row[0]},
        )

    def put_delta(
        self, db: Cursor, sha256: str, base: str, tail: bytes, *, sure: bool = False
    ) -> bool:
        # (``sure`` saves nothing here: the answer is at hand.)
        if db.one("SELECT 1 FROM blob_refs WHERE sha256 = :sha", {"sha": sha256}) is not None:
            return False
        # The new row is one more user of its base, which must be held and whole.
        counted = db.one(
            "UPDATE blob_refs SET refs = refs + 1 WHERE sha256 = :base AND refs > 0"
            " AND (SELECT b.base FROM blobs b WHERE b.id = blob_refs.blob_id) IS NULL"
            " RETURNING 1",
            {"base": base},
        )
        if counted is None:
            return False
        row = db.one(
            "INSERT INTO blobs (codec, content, base) VALUES (:codec, :content, :base)"
            " RETURNING id",
            {"codec": RAW, "content": tail, "base": base},  # a tail is small (deltas.MAX_TAIL)
        )
        assert row is not None
        db.run(
            "INSERT INTO blob_refs (sha256, blob_id, refs) VALUES (:sha, :id, 0)",
            {"sha": sha256, "id": row[0]},
        )
        return True

    def make_whole(self, db: Cursor, sha256: str, data: bytes) -> None:
        row = db.one(
            "SELECT b.id, b.base FROM blob_refs br JOIN blobs b ON b.id = br.blob_id"
            " WHERE br.sha256 = :sha",
            {"sha": sha256},
        )
        if row is not None and row[1] is not None:
            self._rewrite(db, int(row[0]), data, row[1])

    def _rewrite(self, db: Cursor, blob_id: int, data: bytes | bytearray, base: object) -> None:
        """Row ``blob_id`` holds ``data`` whole from now on, and lets its base go."""
        codec, stored = pack_blob(data)
        db.run(
            "UPDATE blobs SET codec = :codec, content = :content, base = NULL WHERE id = :id",
            {"codec": codec, "content": stored, "id": blob_id},
        )
        if base is not None:
            # What the blob_removed trigger does when a continuing row goes.
            db.run("UPDATE blob_refs SET refs = refs - 1 WHERE sha256 = :b", {"b": base})
            db.run(
                "DELETE FROM blobs WHERE id ="
                " (SELECT blob_id FROM blob_refs WHERE sha256 = :b AND refs = 0)",
                {"b": base},
            )
            db.run("DELETE FROM blob_refs WHERE sha256 = :b AND refs = 0", {"b": base})

    def drop_blob(self, db: Cursor, sha256: str) -> None:
        # The rows were renamed away from this hash (an UPDATE: the counting triggers do
        # not fire), so the same bytes written again get a fresh blob and an honest count.
        # A row continuing a base lets it go as it goes (the blob_removed trigger).
        row = db.one("SELECT blob_id FROM blob_refs WHERE sha256 = :sha", {"sha": sha256})
        if row is not None:
            db.run("DELETE FROM blobs WHERE id = :id", {"id": row[0]})
        db.run("DELETE FROM blob_refs WHERE sha256 = :sha", {"sha": sha256})

    def slice(self, db: Cursor, sha256: str, offset: int, size: int) -> bytes | None:
        # Incremental blob I/O reads only the pages of the range; substr() would load
        # the whole value for every call.
        assert isinstance(db, SqliteCursor)
        conn = db.db
        own = not conn.in_transaction  # the id and the bytes read from one snapshot
        try:
            if own:
                conn.execute("BEGIN")
            try:
                row = conn.execute(
                    "SELECT blob_id FROM blob_refs WHERE sha256 = :sha AND refs > 0",
                    {"sha": sha256},
                ).fetchone()
                if row is None:
                    return None
                with conn.blobopen("blobs", "content", row[0], readonly=True) as blob:
                    if offset >= len(blob):
                        return b""
                    blob.seek(offset)
                    return blob.read(size)
            finally:
                if own:
                    conn.execute("COMMIT")
        except sqlite3.Error as e:
            raise translate(e, db.path) from e

    def unpack_head(self, db: Cursor, blob_id: int, codec: int | None, n: int) -> bytes:
        """The first ``n`` bytes of blob ``blob_id``'s content, read from its row in
        pieces (incremental blob I/O): a large file's head without loading it whole.
        Not checked against the content's SHA-256, which needs every byte; ValueError
        if packed bytes do not unpack."""
        assert isinstance(db, SqliteCursor)
        try:
            with db.db.blobopen("blobs", "content", blob_id, readonly=True) as blob:
                if codec != ZLIB:
                    return blob.read(n)
                out = zlib.decompressobj()
                head = b""
                while len(head) < n:
                    piece = blob.read(_STREAM_CHUNK)
                    if not piece:
                        break
                    # Capped at what is still wanted: the rest of the piece waits
                    # in unconsumed_tail, never unpacked.
                    head += out.decompress(piece, n - len(head))
                return head
        except zlib.error as e:
            raise ValueError(f"packed content does not unpack: {e}") from e
        except sqlite3.Error as e:
            raise translate(e, db.path) from e

    def unpack(self, codec: int | None, stored: bytes | None) -> bytes:
        if stored is None:
            return b""
        if codec == ZLIB:
            try:
                return zlib.decompress(stored)
            except zlib.error as e:
                raise ValueError(f"packed content does not unpack: {e}") from e
        return bytes(stored)


# How long a range handle keeps its blob open (and with it a read snapshot, which the
# WAL cannot be restarted behind) before it opens it again, or, idle, closes it.
_HOLD_S = 2.0
_live: weakref.WeakSet[BlobSlices] = weakref.WeakSet()
_reaper_lock = threading.Lock()
_reaper: threading.Thread | None = None


def _reap() -> None:
    """Close the blob handles of range readers left idle (a file open and not read:
    nobody else would release its snapshot)."""
    while True:
        time.sleep(_HOLD_S / 2)
        for slices in list(_live):
            slices.idle()


def _watch(slices: BlobSlices) -> None:
    global _reaper
    with _reaper_lock:
        _live.add(slices)
        if _reaper is None:
            _reaper = threading.Thread(target=_reap, name="memfs-blob-reaper", daemon=True)
            _reaper.start()


class BlobSlices:
    """Ranges of one content's stored bytes through a connection of its own whose blob
    handle stays open between reads: SQLite finds a blob's pages by walking its
    overflow chain from the first, and an open handle remembers the pages it passed, so
    a sequential read of a large file walks the chain once instead of once per range.
    The handle holds a read snapshot (a WAL checkpoint cannot restart behind it), so it
    is opened again every :data:`_HOLD_S` seconds, and closed with the reader."""

    def __init__(self, backend: SqliteBackend, sha256: str) -> None:
        self._backend = backend
        self._sha = sha256
        self._db: sqlite3.Connection | None = None
        self._blob: sqlite3.Blob | None = None
        self._opened = 0.0
        self._used = 0.0
        self._closed = False
        self._lock = threading.Lock()
        _watch(self)

    def _open(self) -> sqlite3.Blob | None:
        if self._blob is not None:
            self._blob.close()
            self._blob = None
        if self._db is None:
            self._db = self._backend.own_connection()
        row = self._db.execute(
            "SELECT blob_id FROM blob_refs WHERE sha256 = :sha AND refs > 0", {"sha": self._sha}
        ).fetchone()
        if row is None:
            return None
        try:
            self._blob = self._db.blobopen("blobs", "content", row[0], readonly=True)
        except sqlite3.OperationalError:
            return None  # removed between the two (redacted)
        self._opened = time.monotonic()
        return self._blob

    def read(self, offset: int, size: int) -> bytes | None:
        with self._lock:
            if self._closed:  # a read that raced the close: on the thread's connection
                with self._backend.reading() as db:
                    return self._backend.dialect.slice(db, self._sha, offset, size)
            try:
                blob = self._blob
                if blob is None or time.monotonic() - self._opened > _HOLD_S:
                    blob = self._open()
                if blob is None:
                    return None
                self._used = time.monotonic()
                if offset >= len(blob):
                    return b""
                blob.seek(offset)
                return blob.read(size)
            except sqlite3.Error as e:
                raise translate(e, self._backend.path) from e

    def idle(self) -> None:
        """Close the blob handle if no range was read for a while (the next read opens
        it again)."""
        if not self._lock.acquire(blocking=False):
            return  # reading now
        try:
            if self._blob is not None and time.monotonic() - self._used > _HOLD_S:
                with contextlib.suppress(sqlite3.Error):
                    self._blob.close()
                self._blob = None
        finally:
            self._lock.release()

    def close(self) -> None:
        _live.discard(self)
        with self._lock:
            self._closed = True
            blob, db, self._blob, self._db = self._blob, None, None, None
            with contextlib.suppress(sqlite3.Error):
                if blob is not None:
                    blob.close()
            if db is not None:
                self._backend.close_own(db)


class SqliteBackend(SqliteConnections):
    """:class:`memfs.store.sql.Backend` for one SQLite file."""

    pushes_changes = False
    guesses = False

    def __init__(self, path: Path, options: SqliteOptions) -> None:
        super().__init__(path, options)
        self.limits = options.limits
        self.dialect = SqliteDialect()
        # Quoted so that the URL opens this same file again even if its name holds "%",
        # "?" or "#" (the URL's path part is percent-decoded, a "?" starts options).
        self.url = "sqlite://" + quote(str(path), safe="/")
        self._watch = FileWatch(path)
        # Followers wait on the -wal file's writes instead of polling (sqlite_wake).
        self.pushes_changes = sqlite_wake.available()

    def storage_problem(self) -> str | None:
        return self._watch.problem()

    def open_slices(self, sha256: str) -> BlobSlices:
        return BlobSlices(self, sha256)

    def rescue(self, recovery_dir: Path) -> Path | None:
        try:
            return rescue(self.connection(), self.path, recovery_dir)
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def close(self) -> None:
        self._watch.close()
        super().close()


class SqliteStore(SqlStore):
    """A memory tree in one SQLite file; see the module docstring for its guarantees."""

    def __init__(self, path: Path, options: SqliteOptions | None = None) -> None:
        self.path = path
        self.options = options or SqliteOptions()
        self._files = SqliteBackend(path, self.options)
        super().__init__(self._files)
        self.index = SqliteSearch(self, self._files.dialect.unpack_head)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def _db(self) -> sqlite3.Connection:
        """The calling thread's own connection (for tests that look behind the store)."""
        return self._files.connection()


def open_sqlite(url: str, options: Mapping[str, object]) -> SqliteStore:
    """Registry opener for ``sqlite://`` URLs and bare file paths."""
    return SqliteStore(path_from_url(url), parse_options(options))
