"""The PostgreSQL store's tables: one ``memfs`` schema per database, many trees in it.

Every table is keyed by ``tree`` (``memfs.trees.id``) first, so one database holds any
number of memory trees and every statement names the one it touches. The version lives
in ``memfs.meta`` (key ``schema_version``); :func:`prepare` creates or migrates the
schema in one transaction under an advisory lock (two hosts starting at once migrate
once) and refuses a database whose schema is newer than this code.

The ``trees`` row is also each tree's write lock and counters: every mutation first
locks it (``FOR UPDATE``), then takes revision and feed numbers from it, so a tree's
mutations commit one after another in the order of their numbers. A follower reading
``seq > s`` can therefore never miss a record committed later with a smaller number,
which a plain sequence would allow. ``files``, ``dirs`` and ``bytes`` are kept by
row triggers on ``entries`` that fire only for rows that change them (schema 3; the
statement triggers of schema 1 ran PL/pgSQL over transition tables on every statement,
most of a write's server time), so ``usage()`` and the caps read one row.

After schema 3 come the steps written once for every backend
(:mod:`memfs.store.evolution`), run with ``search_path`` set to ``memfs``.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from memfs.errors import NoSuchTree, StoreUnavailable
from memfs.store import evolution
from memfs.store.base import DEFAULT_DIR_MODE
from memfs.store.evolution import Step

Migration = Callable[[psycopg.Connection], None]
# pg_advisory_xact_lock key of schema changes: "memf".
LOCK_KEY = 0x6D656D66


def _v1(db: psycopg.Connection) -> None:
    db.execute(
        """CREATE TABLE memfs.trees (
            id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL UNIQUE,
            created_ns bigint NOT NULL,
            rev bigint NOT NULL DEFAULT 0,
            seq bigint NOT NULL DEFAULT 0,
            files bigint NOT NULL DEFAULT 0,
            dirs bigint NOT NULL DEFAULT 0,
            bytes bigint NOT NULL DEFAULT 0
        )"""
    )
    # Paths compare as bytes (COLLATE "C"), so a subtree is the range [p/, p0).
    db.execute(
        """CREATE TABLE memfs.entries (
            tree integer NOT NULL REFERENCES memfs.trees (id) ON DELETE CASCADE,
            path text COLLATE "C" NOT NULL,
            parent text COLLATE "C",
            kind text NOT NULL CHECK (kind IN ('file', 'dir', 'symlink')),
            size bigint NOT NULL DEFAULT 0,
            mode integer NOT NULL,
            mtime_ns bigint NOT NULL,
            ctime_ns bigint NOT NULL,
            rev bigint NOT NULL,
            uid bigint,
            gid bigint,
            target text,
            PRIMARY KEY (tree, path)
        )"""
    )
    db.execute("CREATE INDEX entries_by_parent ON memfs.entries (tree, parent, path)")
    db.execute(
        """CREATE TABLE memfs.revisions (
            tree integer NOT NULL REFERENCES memfs.trees (id) ON DELETE CASCADE,
            path text COLLATE "C" NOT NULL,
            rev bigint NOT NULL,
            author text NOT NULL,
            time_ns bigint NOT NULL,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            PRIMARY KEY (tree, path, rev)
        )"""
    )
    db.execute("CREATE INDEX revisions_by_sha ON memfs.revisions (tree, sha256)")
    # One row per content per tree; PostgreSQL compresses large values itself (TOAST).
    db.execute(
        """CREATE TABLE memfs.blobs (
            tree integer NOT NULL REFERENCES memfs.trees (id) ON DELETE CASCADE,
            sha256 text NOT NULL,
            content bytea NOT NULL,
            PRIMARY KEY (tree, sha256)
        )"""
    )
    db.execute(
        """CREATE TABLE memfs.gone (
            tree integer NOT NULL REFERENCES memfs.trees (id) ON DELETE CASCADE,
            path text COLLATE "C" NOT NULL,
            deleted_ns bigint NOT NULL,
            trim_ns bigint,
            due_ns bigint NOT NULL,
            PRIMARY KEY (tree, path)
        )"""
    )
    db.execute("CREATE INDEX gone_by_due ON memfs.gone (tree, due_ns)")
    db.execute(
        """CREATE TABLE memfs.changes (
            tree integer NOT NULL REFERENCES memfs.trees (id) ON DELETE CASCADE,
            seq bigint NOT NULL,
            kind text NOT NULL,
            path text NOT NULL,
            old_path text,
            author text NOT NULL,
            time_ns bigint NOT NULL,
            rev bigint,
            PRIMARY KEY (tree, seq)
        )"""
    )
    # A blob goes with the last revision row that uses it.
    db.execute(
        """CREATE FUNCTION memfs.drop_unused_blobs() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM memfs.blobs b USING (SELECT DISTINCT tree, sha256 FROM old_rows) o
            WHERE b.tree = o.tree AND b.sha256 = o.sha256 AND NOT EXISTS
                (SELECT 1 FROM memfs.revisions r WHERE r.tree = o.tree AND r.sha256 = o.sha256);
            RETURN NULL;
        END $$"""
    )
    db.execute(
        "CREATE TRIGGER revisions_removed AFTER DELETE ON memfs.revisions"
        " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT"
        " EXECUTE FUNCTION memfs.drop_unused_blobs()"
    )
    # Usage counters: one UPDATE of the tree row per statement, whatever it touched.
    for event, tables, rows in (
        ("INSERT", "REFERENCING NEW TABLE AS new_rows", "SELECT * FROM new_rows"),
        ("DELETE", "REFERENCING OLD TABLE AS old_rows", "SELECT * FROM old_rows"),
        (
            "UPDATE",
            "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
            "SELECT * FROM new_rows",
        ),
    ):
        sign = "-" if event == "DELETE" else ""
        delta = (
            f"SELECT tree, {sign}count(*) FILTER (WHERE kind = 'file') AS f,"
            f" {sign}count(*) FILTER (WHERE kind = 'dir' AND path <> '') AS d,"
            f" {sign}coalesce(sum(size) FILTER (WHERE kind = 'file'), 0) AS b FROM ({rows}) x"
            " GROUP BY tree"
        )
        if event == "UPDATE":
            delta = (
                "SELECT tree, sum(f) AS f, sum(d) AS d, sum(b) AS b FROM ("
                + delta
                + " UNION ALL SELECT tree, -count(*) FILTER (WHERE kind = 'file'),"
                " -count(*) FILTER (WHERE kind = 'dir' AND path <> ''),"
                " -coalesce(sum(size) FILTER (WHERE kind = 'file'), 0) FROM old_rows"
                " GROUP BY tree) u GROUP BY tree"
            )
        name = f"count_{event.lower()}"
        db.execute(
            f"""CREATE FUNCTION memfs.{name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE memfs.trees t SET files = t.files + c.f, dirs = t.dirs + c.d,
                    bytes = t.bytes + c.b FROM ({delta}) c
                WHERE t.id = c.tree AND (c.f <> 0 OR c.d <> 0 OR c.b <> 0);
                RETURN NULL;
            END $$"""
        )
        db.execute(
            f"CREATE TRIGGER entries_{name} AFTER {event} ON memfs.entries {tables}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION memfs.{name}()"
        )


def _v2(db: psycopg.Connection) -> None:
    # Last use (the model's reads; writes are the current revision's time), redaction
    # marks on revisions, and named points of each tree's feed.
    db.execute("ALTER TABLE memfs.entries ADD COLUMN used_ns bigint")
    # Changes keep their content's size and hash after the revision row is pruned.
    db.execute("ALTER TABLE memfs.changes ADD COLUMN size bigint")
    db.execute("ALTER TABLE memfs.changes ADD COLUMN sha256 text")
    db.execute(
        "UPDATE memfs.changes c SET size = r.size, sha256 = r.sha256 FROM memfs.revisions r"
        " WHERE r.tree = c.tree AND r.path = c.path AND r.rev = c.rev"
        " AND c.kind IN ('create', 'modify')"
    )
    db.execute("ALTER TABLE memfs.revisions ADD COLUMN redacted_by text")
    db.execute("ALTER TABLE memfs.revisions ADD COLUMN redacted_ns bigint")
    db.execute(
        """CREATE TABLE memfs.checkpoints (
            tree integer NOT NULL REFERENCES memfs.trees (id) ON DELETE CASCADE,
            name text NOT NULL,
            seq bigint NOT NULL,
            time_ns bigint NOT NULL,
            author text NOT NULL,
            PRIMARY KEY (tree, name)
        )"""
    )


def _v3(db: psycopg.Connection) -> None:
    # Row triggers in place of schema 1's statement triggers: a statement that changes
    # no file count or size (a modify of equal size, an mtime, a rename) fires nothing,
    # where every statement on entries or revisions used to run PL/pgSQL over its
    # transition tables.
    for event in ("insert", "delete", "update"):
        db.execute(f"DROP TRIGGER entries_count_{event} ON memfs.entries")
        db.execute(f"DROP FUNCTION memfs.count_{event}()")
    db.execute("DROP TRIGGER revisions_removed ON memfs.revisions")
    db.execute("DROP FUNCTION memfs.drop_unused_blobs()")
    counted = "{0}.kind = 'file' OR ({0}.kind = 'dir' AND {0}.path <> '')"
    for name, row, sign in (("entry_added", "NEW", "+"), ("entry_removed", "OLD", "-")):
        db.execute(
            f"""CREATE FUNCTION memfs.{name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE memfs.trees SET files = files {sign} ({row}.kind = 'file')::int,
                    dirs = dirs {sign} ({row}.kind = 'dir')::int,
                    bytes = bytes {sign} CASE WHEN {row}.kind = 'file' THEN {row}.size ELSE 0 END
                WHERE id = {row}.tree;
                RETURN NULL;
            END $$"""
        )
        when = "INSERT" if row == "NEW" else "DELETE"
        db.execute(
            f"CREATE TRIGGER {name} AFTER {when} ON memfs.entries FOR EACH ROW"
            f" WHEN ({counted.format(row)}) EXECUTE FUNCTION memfs.{name}()"
        )
    db.execute(
        """CREATE FUNCTION memfs.entry_resized() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE memfs.trees SET bytes = bytes + NEW.size - OLD.size WHERE id = NEW.tree;
            RETURN NULL;
        END $$"""
    )
    db.execute(
        "CREATE TRIGGER entry_resized AFTER UPDATE OF size ON memfs.entries FOR EACH ROW"
        " WHEN (NEW.kind = 'file' AND NEW.size <> OLD.size) EXECUTE FUNCTION memfs.entry_resized()"
    )
    # A blob goes with the last revision row that uses it (an AFTER row trigger sees
    # the whole statement done, so a statement removing several users drops it once).
    db.execute(
        """CREATE FUNCTION memfs.revision_removed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM memfs.blobs b WHERE b.tree = OLD.tree AND b.sha256 = OLD.sha256
                AND NOT EXISTS (SELECT 1 FROM memfs.revisions r
                                WHERE r.tree = OLD.tree AND r.sha256 = OLD.sha256);
            RETURN NULL;
        END $$"""
    )
    db.execute(
        "CREATE TRIGGER revision_removed AFTER DELETE ON memfs.revisions FOR EACH ROW"
        " EXECUTE FUNCTION memfs.revision_removed()"
    )


def _shared(step: Step) -> Migration:
    """A step of :mod:`memfs.store.evolution`, in PostgreSQL's words."""

    def migrate(db: psycopg.Connection) -> None:
        for statement in step(evolution.POSTGRES):
            db.execute(statement.encode())  # DDL as written: no placeholders in it

    return migrate


# MIGRATIONS[i] takes a database from schema version i to i + 1: PostgreSQL's own, then
# the steps written once for every backend. Append only.
MIGRATIONS: list[Migration] = [_v1, _v2, _v3, *map(_shared, evolution.STEPS)]
SCHEMA_VERSION = len(MIGRATIONS)


def newer_version(where: str, version: int) -> StoreUnavailable:
    return StoreUnavailable(
        f"the PostgreSQL database {where} holds a memfs schema from a newer memfs"
        f" (schema {version}, this memfs knows up to {SCHEMA_VERSION})",
        remedy="upgrade memfs to use it",
    )


def _version(db: psycopg.Connection) -> int | None:
    """The schema version, or None when the database has no memfs schema yet."""
    found = db.execute("SELECT to_regclass('memfs.meta') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return None
    row = db.execute("SELECT value FROM memfs.meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def prepare(db: psycopg.Connection, where: str, *, readonly: bool = False) -> None:
    """Create or migrate the ``memfs`` schema on the (autocommit) connection ``db``;
    ``readonly``: only check that it is there and current."""
    db.execute("SET search_path = memfs")
    version = _version(db)
    if version is not None and version > SCHEMA_VERSION:
        raise newer_version(where, version)
    if version == SCHEMA_VERSION:
        return
    if readonly:
        if version is None:
            raise NoSuchTree(
                f"the PostgreSQL database {where} holds no memory trees yet", trees=[], remedy=""
            )
        raise StoreUnavailable(
            f"the PostgreSQL database {where} holds a memfs schema from an older memfs"
            f" (schema {version}; this memfs reads schema {SCHEMA_VERSION}) and a read-only"
            " open does not upgrade it",
            remedy="open it once with write access to upgrade it",
        )
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        # Re-read under the lock: another host may have migrated meanwhile.
        version = _version(db)
        if version is None:
            db.execute("CREATE SCHEMA IF NOT EXISTS memfs")
            db.execute("CREATE TABLE memfs.meta (key text PRIMARY KEY, value text NOT NULL)")
            db.execute("INSERT INTO memfs.meta VALUES ('schema_version', '0')")
            version = 0
        if version > SCHEMA_VERSION:
            raise newer_version(where, version)
        for step in MIGRATIONS[version:]:
            step(db)
        db.execute(
            "UPDATE memfs.meta SET value = %s WHERE key = 'schema_version'",
            (str(SCHEMA_VERSION),),
        )


def tree_names(db: psycopg.Connection) -> list[str]:
    """Every tree of the database, by name (none without a memfs schema)."""
    found = db.execute("SELECT to_regclass('memfs.trees') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return []
    return [str(r[0]) for r in db.execute("SELECT name FROM memfs.trees ORDER BY name")]


def no_such_tree(db: psycopg.Connection, where: str, name: str) -> NoSuchTree:
    trees = tree_names(db)
    held = ", ".join(trees) if trees else "none yet"
    return NoSuchTree(
        f"the PostgreSQL database {where} has no tree {name!r} (its trees: {held})",
        trees=trees,
        remedy="name one of them with ?tree=NAME",
    )


def tree_id(db: psycopg.Connection, name: str, now: int, *, create: bool = True) -> int | None:
    """The id of tree ``name``, made with its root directory if missing and ``create``."""
    row = db.execute("SELECT id FROM memfs.trees WHERE name = %s", (name,)).fetchone()
    if row is not None or not create:
        return None if row is None else int(row[0])
    with db.transaction():
        row = db.execute(
            "INSERT INTO memfs.trees (name, created_ns) VALUES (%s, %s)"
            " ON CONFLICT (name) DO NOTHING RETURNING id",
            (name, now),
        ).fetchone()
        if row is not None:
            db.execute(
                "INSERT INTO memfs.entries (tree, path, parent, kind, size, mode, mtime_ns,"
                " ctime_ns, rev) VALUES (%s, '', NULL, 'dir', 0, %s, %s, %s, 0)",
                (row[0], DEFAULT_DIR_MODE, now, now),
            )
            return int(row[0])
    # Another process made it between our look and our insert.
    row = db.execute("SELECT id FROM memfs.trees WHERE name = %s", (name,)).fetchone()
    assert row is not None
    return int(row[0])
