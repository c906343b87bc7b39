"""The SQLite store's file format: schema, migrations, and the checks made before opening.

A memfs SQLite file is recognised by ``PRAGMA application_id`` (:data:`APPLICATION_ID`)
and versioned by ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`). Opening goes in two
steps so that a file that is not ours is never modified:

1. :func:`inspect` looks at the file without writing: the first 100 bytes read as plain
   bytes (SQLite magic, application id, schema version, page count against file size),
   and for an SQLite file without our id a read-only connection listing its tables.
   While this process already has the file open through SQLite, only the read-only
   connection looks: see :mod:`memfs.store.sqlite_files` for why a plain read must not.
2. :func:`prepare` opens it read-write, applies pending migrations in one
   ``BEGIN IMMEDIATE`` transaction and switches the file to WAL; or, for a store opened
   read-only, :func:`open_readonly` opens it without ever writing (no creation, no
   migration).

A new file is created in rollback-journal mode and switched to WAL only after the
schema and the application id are committed, so the id is in the main file's header from
the first commit on and step 1 can trust the raw bytes even after a crash.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from memfs.errors import CorruptStore, StoreError, StoreFull, StoreUnavailable
from memfs.store import evolution
from memfs.store.base import DEFAULT_DIR_MODE
from memfs.store.evolution import Step
from memfs.store.sqlite_checks import check_pages, unwritable
from memfs.store.sqlite_files import Connection, count_open, read_header

APPLICATION_ID = 0x6D656D66  # "memf"
SQLITE_MAGIC = b"SQLite format 3\x00"
# The size a writer cuts the -wal file back to when it starts the log over. Without it
# the file keeps the largest size the log ever reached: four appenders on two mounts grew
# it by 190 MiB every 3 s (readers in every pass keep a checkpoint from finishing until
# the writes pause), and the 571 MiB file stayed beside the store until its last
# connection closed.
WAL_SIZE_LIMIT = 64 << 20

Migration = Callable[[sqlite3.Connection], None]


def _v1(db: sqlite3.Connection) -> None:
    # Entries are keyed by their full path: stat is one index lookup, listdir one range
    # on (parent, path), and a directory rename rewrites its subtree's paths, which is
    # cheap for trees of thousands of entries. ``id`` is stable across renames, so a
    # file's revisions follow it.
    db.execute(
        """CREATE TABLE entries (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            parent TEXT,
            kind TEXT NOT NULL CHECK (kind IN ('file', 'dir', 'symlink')),
            size INTEGER NOT NULL DEFAULT 0,
            mode INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            ctime_ns INTEGER NOT NULL,
            rev INTEGER NOT NULL,
            uid INTEGER,
            gid INTEGER,
            target TEXT
        )"""
    )
    db.execute("CREATE INDEX entries_by_parent ON entries (parent, path)")
    # The current content is the revision row named by entries.rev: one copy of each
    # version, and reading the current content is a primary-key lookup.
    db.execute(
        """CREATE TABLE revisions (
            rev INTEGER PRIMARY KEY,
            entry_id INTEGER NOT NULL,
            author TEXT NOT NULL,
            time_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            content BLOB NOT NULL
        )"""
    )
    db.execute("CREATE INDEX revisions_by_entry ON revisions (entry_id, rev)")
    db.execute(
        """CREATE TABLE changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            path TEXT NOT NULL,
            old_path TEXT,
            author TEXT NOT NULL,
            time_ns INTEGER NOT NULL,
            rev INTEGER
        )"""
    )
    # The store-wide revision counter (a sequence, as PostgreSQL would have it).
    db.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    db.execute("INSERT INTO counters (name, value) VALUES ('rev', 0)")
    now = time.time_ns()
    db.execute(
        "INSERT INTO entries (path, parent, kind, size, mode, mtime_ns, ctime_ns, rev)"
        " VALUES ('', NULL, 'dir', 0, ?, ?, ?, 0)",
        (DEFAULT_DIR_MODE, now, now),
    )


def _v2(db: sqlite3.Connection) -> None:
    # History belongs to paths, not entries (memfs.store.retention): a revision
    # records the path it was made at, so atomic saves (rename over the file) keep it.
    # Content moves to blobs, one row per SHA-256, so a rename's arrival revision and
    # repeated contents cost no copy; blob_refs maps a SHA-256 to its blob and counts the
    # revisions using it, kept apart from the (large) content so counting rewrites a
    # small row. Revisions are keyed by (path, rev): every lookup names the path, and one
    # b-tree instead of a table plus an index keeps each commit's page count low.
    # Each existing revision takes its entry's current path: under schema 1 a renamed
    # file's history followed it there.
    db.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, content BLOB NOT NULL)")
    db.execute(
        "CREATE TABLE blob_refs (sha256 TEXT PRIMARY KEY, blob_id INTEGER NOT NULL,"
        " refs INTEGER NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        """CREATE TABLE revisions_v2 (
            path TEXT NOT NULL,
            rev INTEGER NOT NULL,
            author TEXT NOT NULL,
            time_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            PRIMARY KEY (path, rev)
        ) WITHOUT ROWID"""
    )
    rows = db.execute(
        "SELECT e.path, r.rev, r.author, r.time_ns, r.size, r.sha256, r.content"
        " FROM revisions r JOIN entries e ON e.id = r.entry_id"
    )
    for path, rev, author, time_ns, size, sha, content in rows:
        found = db.execute("SELECT 1 FROM blob_refs WHERE sha256 = ?", (sha,)).fetchone()
        if found is None:
            blob = db.execute("INSERT INTO blobs (content) VALUES (?)", (content,)).lastrowid
            db.execute("INSERT INTO blob_refs VALUES (?, ?, 0)", (sha, blob))
        db.execute("UPDATE blob_refs SET refs = refs + 1 WHERE sha256 = ?", (sha,))
        db.execute(
            "INSERT INTO revisions_v2 VALUES (?, ?, ?, ?, ?, ?)",
            (path, rev, author, time_ns, size, sha),
        )
    db.execute("DROP TABLE revisions")
    db.execute("ALTER TABLE revisions_v2 RENAME TO revisions")
    db.execute(
        "CREATE TRIGGER revision_added AFTER INSERT ON revisions BEGIN"
        " UPDATE blob_refs SET refs = refs + 1 WHERE sha256 = NEW.sha256; END"
    )
    db.execute(
        "CREATE TRIGGER revision_removed AFTER DELETE ON revisions BEGIN"
        " UPDATE blob_refs SET refs = refs - 1 WHERE sha256 = OLD.sha256;"
        " DELETE FROM blobs WHERE id ="
        " (SELECT blob_id FROM blob_refs WHERE sha256 = OLD.sha256 AND refs = 0);"
        " DELETE FROM blob_refs WHERE sha256 = OLD.sha256 AND refs = 0; END"
    )
    # Paths that no longer exist but keep a tombstoned history; due_ns is when the lazy
    # sweep next has rows to remove there (one index serves both kinds of removal).
    db.execute(
        "CREATE TABLE gone (path TEXT PRIMARY KEY, deleted_ns INTEGER NOT NULL,"
        " trim_ns INTEGER, due_ns INTEGER NOT NULL) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX gone_by_due ON gone (due_ns)")


def _v3(db: sqlite3.Connection) -> None:
    # Blobs may be stored compressed (memfs.store.sqlite.pack_blob); existing ones
    # stay as they are, raw.
    db.execute("ALTER TABLE blobs ADD COLUMN codec INTEGER NOT NULL DEFAULT 0")


def _v4(db: sqlite3.Connection) -> None:
    # Caps are checked on every mutation, so the tree's totals are counters kept by
    # triggers (every statement that adds, removes or resizes a file passes them)
    # rather than a scan of entries per write.
    files, dirs, total = db.execute(
        "SELECT count(*) FILTER (WHERE kind = 'file'),"
        " count(*) FILTER (WHERE kind = 'dir' AND path != ''),"
        " coalesce(sum(size) FILTER (WHERE kind = 'file'), 0) FROM entries"
    ).fetchone()
    db.executemany(
        "INSERT INTO counters (name, value) VALUES (?, ?)",
        [("files", files), ("dirs", dirs), ("bytes", total)],
    )
    db.execute(
        "CREATE TRIGGER entry_added AFTER INSERT ON entries BEGIN"
        " UPDATE counters SET value = value + 1 WHERE name = 'files' AND NEW.kind = 'file';"
        " UPDATE counters SET value = value + 1 WHERE name = 'dirs' AND NEW.kind = 'dir';"
        " UPDATE counters SET value = value + NEW.size"
        " WHERE name = 'bytes' AND NEW.kind = 'file'; END"
    )
    db.execute(
        "CREATE TRIGGER entry_removed AFTER DELETE ON entries BEGIN"
        " UPDATE counters SET value = value - 1 WHERE name = 'files' AND OLD.kind = 'file';"
        " UPDATE counters SET value = value - 1 WHERE name = 'dirs' AND OLD.kind = 'dir';"
        " UPDATE counters SET value = value - OLD.size"
        " WHERE name = 'bytes' AND OLD.kind = 'file'; END"
    )
    db.execute(
        "CREATE TRIGGER entry_resized AFTER UPDATE OF size ON entries"
        " WHEN NEW.kind = 'file' AND NEW.size != OLD.size BEGIN"
        " UPDATE counters SET value = value + NEW.size - OLD.size WHERE name = 'bytes'; END"
    )
    # The model's last read of a file (NULL: never); its last write is its current
    # revision's time, so writes pay nothing for expiry.
    db.execute("ALTER TABLE entries ADD COLUMN used_ns INTEGER")
    # Changes keep their content's hash and size even after the revision row is pruned.
    db.execute("ALTER TABLE changes ADD COLUMN size INTEGER")
    db.execute("ALTER TABLE changes ADD COLUMN sha256 TEXT")
    db.execute(
        "UPDATE changes SET (size, sha256) = (SELECT r.size, r.sha256 FROM revisions r"
        " WHERE r.path = changes.path AND r.rev = changes.rev)"
        " WHERE kind IN ('create', 'modify') AND rev IS NOT NULL"
    )
    db.execute("ALTER TABLE revisions ADD COLUMN redacted_by TEXT")
    db.execute("ALTER TABLE revisions ADD COLUMN redacted_ns INTEGER")
    db.execute(
        "CREATE TABLE checkpoints (name TEXT PRIMARY KEY, seq INTEGER NOT NULL,"
        " time_ns INTEGER NOT NULL, author TEXT NOT NULL) WITHOUT ROWID"
    )


def _v5(db: sqlite3.Connection) -> None:
    # The full-text index (memfs.store.sqlite_search).
    # Every existing file is listed stale: the first search (or `memfs search`, with a
    # progress bar) indexes them, not this migration, which holds the write lock.
    db.execute("CREATE VIRTUAL TABLE search_text USING fts5(body, tokenize = 'trigram')")
    db.execute(
        "CREATE TABLE search_docs (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL,"
        " kind INTEGER NOT NULL)"
    )
    db.execute("CREATE INDEX search_docs_partial ON search_docs (id) WHERE kind = 1")
    db.execute("CREATE TABLE search_stale (id INTEGER PRIMARY KEY)")
    db.execute("INSERT INTO search_stale (id) SELECT id FROM entries WHERE kind = 'file'")
    # A revision with content the index does not hold for the file at its path makes the
    # file stale, whoever wrote it; the writer's _index() takes it off again. A rename's
    # arrival keeps the content, and the file (keyed by entries.id) stays indexed.
    db.execute(
        "CREATE TRIGGER search_revision AFTER INSERT ON revisions BEGIN"
        " INSERT OR IGNORE INTO search_stale (id) SELECT e.id FROM entries e"
        " WHERE e.path = NEW.path AND e.kind = 'file' AND NOT EXISTS (SELECT 1 FROM"
        " search_docs d WHERE d.id = e.id AND d.sha256 = NEW.sha256); END"
    )
    db.execute(
        "CREATE TRIGGER search_entry_gone AFTER DELETE ON entries WHEN OLD.kind = 'file' BEGIN"
        " DELETE FROM search_text WHERE rowid = OLD.id;"
        " DELETE FROM search_docs WHERE id = OLD.id;"
        " DELETE FROM search_stale WHERE id = OLD.id; END"
    )


def _shared(step: Step) -> Migration:
    """A step of :mod:`memfs.store.evolution`, in SQLite's words."""

    def migrate(db: sqlite3.Connection) -> None:
        for statement in step(evolution.SQLITE):
            db.execute(statement)

    return migrate


# MIGRATIONS[i] takes a store from schema version i to i + 1: SQLite's own, then the
# steps written once for every backend. Append only.
MIGRATIONS: list[Migration] = [_v1, _v2, _v3, _v4, _v5, *map(_shared, evolution.STEPS)]
SCHEMA_VERSION = len(MIGRATIONS)

FileState = Literal["new", "empty", "ours"]


# What a person can do about a file that is not (or no longer) a usable store, besides
# using another store (see StoreUnavailable.advice).
MOVE_ASIDE = "move it aside"
RESTORE = "restore it from a backup, move it aside"


def inspect(path: Path) -> FileState:
    """Classify the file at ``path`` without modifying it, or raise a one-line error.

    ``"new"``: nothing there (or a 0-byte file); ``"empty"``: an SQLite database with no
    tables and no application id (schema version 0); ``"ours"``: a memfs store whose
    schema this code knows.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "new"
    except OSError as e:
        raise StoreUnavailable(f"cannot use the store {path}: {e.strerror}", remedy="") from e
    if stat.S_ISDIR(st.st_mode):
        raise StoreUnavailable(
            f"the store path {path} is a directory; give a file path such as {path}/memory.db"
        )
    if not stat.S_ISREG(st.st_mode):
        raise StoreUnavailable(f"the store path {path} is not a regular file", remedy="")
    try:
        header = read_header(path)
    except OSError as e:
        raise StoreUnavailable(f"cannot read the store {path}: {e.strerror}", remedy="") from e
    if header is None:
        # Open here already, so it passed the byte checks then; SQLite's view is safe.
        return _classify(path)
    if not header:
        return "new"
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise CorruptStore(
            f"{path} is not a memfs store (not an SQLite database, or damaged)", remedy=RESTORE
        )
    app_id = int.from_bytes(header[68:72], "big", signed=True)
    version = int.from_bytes(header[60:64], "big", signed=True)
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise newer_version(path, version)
        _check_length(path, header, st.st_size)
        return "ours"
    if app_id != 0:
        raise CorruptStore(
            f"{path} is an SQLite database of another application"
            f" (application_id {app_id:#x}), not a memfs store",
            remedy=MOVE_ASIDE,
        )
    # The raw header said "no id", but another process may be creating a store here right
    # now: ask SQLite, which waits for that commit and reads id and tables together.
    return _classify(path)


def _classify(path: Path) -> FileState:
    """:func:`inspect`'s answer from what a read-only SQLite connection sees."""
    app_id, version, tables = _read_only_look(path)
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise newer_version(path, version)
        return "ours"
    if app_id != 0:
        raise CorruptStore(
            f"{path} is an SQLite database of another application"
            f" (application_id {app_id:#x}), not a memfs store",
            remedy=MOVE_ASIDE,
        )
    if tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise CorruptStore(
            f"{path} is an SQLite database of another application (tables: {shown}),"
            " not a memfs store",
            remedy=MOVE_ASIDE,
        )
    return "empty"


def newer_version(path: Path, version: int) -> StoreUnavailable:
    return StoreUnavailable(
        f"the store {path} was created by a newer memfs (schema {version}, this memfs"
        f" knows up to {SCHEMA_VERSION})",
        remedy="upgrade memfs to use it",
    )


def _check_length(path: Path, header: bytes, size: int) -> None:
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The in-header page count is only meaningful while its "valid-for" stamp matches
    # the change counter (SQLite's own rule). A checkpoint cut short by a crash writes
    # page 1 before the pages after it, so with a non-empty WAL beside the file a short
    # file is what SQLite's recovery repairs, not damage.
    counter_valid = header[92:96] == header[24:28]
    try:
        wal_pending = os.stat(f"{path}-wal").st_size > 0
    except OSError:
        wal_pending = False
    if counter_valid and pages and size < pages * page_size and not wal_pending:
        raise CorruptStore(
            f"the store {path} is truncated ({size} bytes, its header says {pages * page_size})",
            remedy=RESTORE,
        )


def _read_only_look(path: Path) -> tuple[int, int, list[str]]:
    """Application id, schema version and table names, read in one read transaction."""
    uri = f"file:{quote(str(path))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, factory=Connection)
    except sqlite3.Error as e:
        raise CorruptStore(f"cannot inspect {path} ({e})", remedy=MOVE_ASIDE) from e
    count_open(db, path)
    try:
        db.execute("BEGIN")
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        rows = db.execute(
            "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        db.execute("COMMIT")
    except sqlite3.Error as e:
        raise CorruptStore(f"{path} is a damaged SQLite database ({e})", remedy=RESTORE) from e
    finally:
        db.close()
    return int(app_id), int(version), [r[0] for r in rows]


def open_readonly(path: Path, *, busy_timeout: float) -> tuple[sqlite3.Connection, str]:
    """A checked read-only connection to the store at ``path`` and the URI that opens
    more like it; never creates, migrates or writes anything of the store.

    SQLite's rule for a WAL database opened read-only: it needs ``-shm`` (and ``-wal``)
    to exist already, or to be able to create them beside the file, or the file to be
    opened ``immutable``. ``mode=ro`` covers the first two, and follows other processes'
    commits. When neither works (a read-only directory or file system, and no process
    has the store open), ``immutable`` is right only if the file holds every commit: no
    ``-wal`` with frames in it (the last connection to close folds it into the file and
    deletes it). Such a connection does not see a writer that starts later, which only
    someone allowed to write that directory can be.
    """
    state = inspect(path)
    if state == "new":
        raise StoreUnavailable(f"there is no store at {path} to read", remedy="")
    if state == "empty":
        raise StoreUnavailable(f"{path} holds no memfs store yet (an empty database)", remedy="")
    uri = f"file:{quote(str(path))}?mode=ro"
    try:
        db = connect_uri(uri, path, busy_timeout)
        try:
            db.execute("PRAGMA user_version").fetchone()
        except BaseException:
            db.close()
            raise
    except sqlite3.Error as e:
        name = getattr(e, "sqlite_errorname", "")
        if not name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY")):
            raise translate(e, path) from e
        try:
            pending = os.stat(f"{path}-wal").st_size > 0
        except OSError:
            pending = False
        if pending:
            raise StoreUnavailable(
                f"cannot read the store {path} read-only: its write-ahead log {path}-wal"
                f" holds changes SQLite can only read by creating {path}-shm, and"
                f" {path.parent} cannot be written",
                remedy="open it once where it can be written, so memfs folds the log into it,",
            ) from e
        uri += "&immutable=1"
        try:
            db = connect_uri(uri, path, busy_timeout)
        except sqlite3.Error as again:
            raise translate(again, path) from again
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise newer_version(path, version)
        if version < SCHEMA_VERSION:
            raise StoreUnavailable(
                f"the store {path} was written by an older memfs (schema {version}; this"
                f" memfs reads schema {SCHEMA_VERSION}) and a read-only open does not"
                " upgrade it",
                remedy="open it once with write access to upgrade it",
            )
        check_pages(db, path, remedy=RESTORE)
    except sqlite3.Error as e:
        db.close()
        raise translate(e, path) from e
    except BaseException:
        db.close()
        raise
    return db, uri


def connect_uri(uri: str, path: Path, busy_timeout: float) -> sqlite3.Connection:
    """A read-only connection by URI (see :func:`open_readonly`)."""
    return _connect(uri, path, busy_timeout, [])


def connect(path: Path, *, busy_timeout: float, synchronous: str) -> sqlite3.Connection:
    """A read-write connection with memfs's per-connection settings, to a file that
    exists: never a new, empty one (a store file deleted under a running process must
    not come back empty when one of its threads connects; prepare() creates stores)."""
    pragmas = [
        f"PRAGMA synchronous = {synchronous.upper()}",
        f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}",
    ]
    return _connect(f"file:{quote(str(path))}?mode=rw", path, busy_timeout, pragmas)


def _connect(
    target: str, path: Path, busy_timeout: float, pragmas: list[str]
) -> sqlite3.Connection:
    # check_same_thread=False only so close() can close every thread's connection; each
    # connection is otherwise used by the one thread that made it.
    db = sqlite3.connect(
        target,
        uri=target.startswith("file:"),
        timeout=busy_timeout,
        isolation_level=None,
        check_same_thread=False,
        factory=Connection,
    )
    count_open(db, path)
    try:
        for pragma in [f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}", *pragmas]:
            db.execute(pragma)
    except BaseException:
        db.close()  # not left to the garbage collector, with the file counted open
        raise
    return db


def prepare(path: Path, *, busy_timeout: float, synchronous: str) -> sqlite3.Connection:
    """Create or migrate the store at ``path`` to :data:`SCHEMA_VERSION` in WAL mode.

    Returns the connection it used, for the caller to keep: closing the last connection
    checkpoints and removes the WAL, which reopening would then recreate.
    """
    state = inspect(path)
    if state == "new":
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _cannot_create(path, e) from e
        if not path.exists():
            _publish_new(path, busy_timeout=busy_timeout, synchronous=synchronous)
    try:
        db = connect(path, busy_timeout=busy_timeout, synchronous=synchronous)
    except sqlite3.Error as e:
        error = translate(e, path)
        if isinstance(error, StoreFull):
            raise error from e
        raise _cannot_open(path, e) from e
    try:
        if state == "ours":
            # Before anything is written: a damaged file is refused, never migrated.
            check_pages(db, path, remedy=RESTORE)
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise newer_version(path, version)
        if version < SCHEMA_VERSION:
            _migrate(db, path)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreUnavailable(f"cannot switch the store {path} to WAL mode (got {mode})")
    except sqlite3.Error as e:
        db.close()
        raise translate(e, path) from e
    except BaseException:
        db.close()
        raise
    return db


def _publish_new(path: Path, *, busy_timeout: float, synchronous: str) -> None:
    """Build a complete store beside ``path`` and link it into place.

    Processes that open a missing store at the same moment (the daemon, the CLI, a
    mirror) would otherwise see each other's half-written first pages and refuse the
    file as damaged. link(2) publishes the finished file atomically and never replaces
    one: whoever loses the race discards its copy and opens the winner's.
    """
    temp = path.with_name(f".{path.name}.creating-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        # Made here, not by SQLite, whose "unable to open database file" says not why.
        os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        raise _cannot_create(path, e) from e
    try:
        db = connect(temp, busy_timeout=busy_timeout, synchronous=synchronous)
        try:
            _migrate(db, temp)
            db.execute("PRAGMA journal_mode = WAL").fetchone()
        finally:
            db.close()  # the last connection checkpoints and removes the temp's WAL
        os.chmod(temp, 0o600)  # memory is private, like the handler's files
        with contextlib.suppress(FileExistsError):  # another process won: use its store
            os.link(temp, path)
    except sqlite3.Error as e:
        raise translate(e, path) from e
    except OSError as e:
        raise _cannot_create(path, e) from e
    finally:
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            # Cleanup must not replace the error that brought us here.
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)


def _cannot_create(path: Path, e: OSError) -> StoreUnavailable:
    if e.errno == errno.ENOSPC:
        return StoreFull(f"the disk holding the store {path} is full")
    found = unwritable(path)
    if found is not None:
        why, remedy = found
        return StoreUnavailable(f"cannot create the store {path}: {why}", remedy=remedy)
    return StoreUnavailable(f"cannot create the store {path}: {e.strerror or e}", remedy="")


def _cannot_open(path: Path, e: sqlite3.Error) -> StoreUnavailable:
    found = unwritable(path)
    if found is not None:
        why, remedy = found
        return StoreUnavailable(f"cannot open the store {path} for writing: {why}", remedy=remedy)
    return StoreUnavailable(f"cannot open the store {path}: {e}", remedy="")


def translate(e: sqlite3.Error, path: Path) -> StoreError:
    """A typed memfs error for an SQLite failure, saying what to do about it."""
    name = getattr(e, "sqlite_errorname", "")
    if isinstance(e, sqlite3.ProgrammingError) and "closed" in str(e):
        return StoreUnavailable(f"the store {path} is closed")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreUnavailable(
            f"the store {path} is busy: another process held its write lock too long; retry"
        )
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return CorruptStore(f"the store {path} is damaged ({e})", remedy=RESTORE)
    if name.startswith("SQLITE_FULL"):
        return StoreFull(f"the disk holding the store {path} is full")
    if name == "SQLITE_IOERR_SHMSIZE":
        # The WAL index ({path}-shm) could not grow: the disk is full. It exists while
        # any process has the store open, so this is met by the first one to open it
        # (even to read) on a full disk; SQLite itself only says "disk I/O error".
        return StoreFull(
            f"the disk holding the store {path} is full: SQLite cannot create the store's"
            f" index {path}-shm there, even to read; free some space"
        )
    if name.startswith("SQLITE_READONLY") and unwritable(path) is None:
        return StoreUnavailable(f"the store {path} is read-only here ({e})", remedy="")
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
        return _cannot_open(path, e)
    return StoreUnavailable(f"the store {path} failed: {e}")


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        # Re-read inside the write lock: another process may have migrated meanwhile.
        version = db.execute("PRAGMA user_version").fetchone()[0]
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        if version == 0 and app_id == 0:
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables:
                raise CorruptStore(f"{path} is not a memfs store", remedy=MOVE_ASIDE)
        elif app_id != APPLICATION_ID:
            raise CorruptStore(f"{path} is not a memfs store", remedy=MOVE_ASIDE)
        if version > SCHEMA_VERSION:
            raise newer_version(path, version)
        for step in MIGRATIONS[version:]:
            step(db)
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
