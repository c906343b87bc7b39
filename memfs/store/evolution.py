"""Schema steps written once for every backend.

Each backend keeps the migrations it had before this module (SQLite's schemas 1 to 5,
PostgreSQL's 1 to 3) and then applies :data:`STEPS` in order, each in the same
transaction as the rest of its migration, so a step is written once and every store,
file or server, gets it. A step is a function from a :class:`Ddl` (the dialect's words
for column types and the tree key) to the statements it runs, with the table names the
engine uses (PostgreSQL runs them with ``search_path`` set to its ``memfs`` schema).

To add a table of the tree and a column to the change records::

    def _operations(ddl: Ddl) -> list[str]:
        return [
            f"CREATE TABLE operations ({ddl.tree_key}id {ddl.integer} NOT NULL,"
            f" author {ddl.text} NOT NULL, PRIMARY KEY ({ddl.tree_column}id))",
            f"ALTER TABLE changes ADD COLUMN op {ddl.integer}",
        ]

    STEPS.append(_operations)  # append only: a step's place is its schema version

then let the engine read and write them (:mod:`memfs.store.statements`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Ddl:
    """A dialect's words for table definitions."""

    integer: str  # a 64-bit integer column
    text: str
    blob: str  # bytes
    # The first column of a table kept per tree, with its key (and "" in a file that
    # holds one tree); and the same column at the head of a key's column list.
    tree_key: str
    tree_column: str
    # Dropping a trigger of ``entries`` (PostgreSQL's trigger runs a function of the
    # same name, which goes with it).
    drop_entries_trigger: Callable[[str], list[str]]
    # Whether a blob's users are counted (SQLite's ``blob_refs``) rather than looked for
    # (PostgreSQL's triggers ask whether any row still uses it).
    counts_blob_users: bool


Step = Callable[[Ddl], list[str]]

SQLITE = Ddl(
    integer="INTEGER",
    text="TEXT",
    blob="BLOB",
    tree_key="",
    tree_column="",
    drop_entries_trigger=lambda name: [f"DROP TRIGGER IF EXISTS {name}"],
    counts_blob_users=True,
)
POSTGRES = Ddl(
    integer="bigint",
    text="text",
    blob="bytea",
    tree_key="tree integer NOT NULL REFERENCES trees (id) ON DELETE CASCADE, ",
    tree_column="tree, ",
    drop_entries_trigger=lambda name: [
        f"DROP TRIGGER IF EXISTS {name} ON entries",
        f"DROP FUNCTION IF EXISTS {name}()",
    ],
    counts_blob_users=False,
)

# STEPS[i] is every backend's next migration after its own; append only.
STEPS: list[Step] = []


def _operations(ddl: Ddl) -> list[str]:
    """The operation log (invariant 12 of :mod:`memfs.store.base`): every change in one
    operation, and what each change found at its path (its ``prior_*``), so one
    operation is taken back from its own records. Changes written before are grouped
    into operations the way ``memfs undo`` grouped them (consecutive records of one
    author and time); their priors were not kept (``prior_kind`` is ``?``)."""
    i, t, tk, tc = ddl.integer, ddl.text, ddl.tree_key, ddl.tree_column
    by_tree = "PARTITION BY tree " if tc else ""
    key = "changes.tree = o.tree AND " if tc else ""
    columns = [
        f"op {i}",
        f"mode {i}",
        f"target {t}",
        f"prior_kind {t}",
        f"prior_sha256 {t}",
        f"prior_size {i}",
        f"prior_mode {i}",
        f"prior_target {t}",
    ]
    return [
        f"CREATE TABLE operations ({tk}id {i} NOT NULL, actor {t} NOT NULL,"
        f" detail {t} NOT NULL DEFAULT '', label {t} NOT NULL DEFAULT '',"
        f" start_ns {i} NOT NULL, end_ns {i} NOT NULL, first_seq {i} NOT NULL,"
        f" last_seq {i} NOT NULL, changes {i} NOT NULL, PRIMARY KEY ({tc}id))",
        f"CREATE INDEX operations_first_seq ON operations ({tc}first_seq)",
        *(f"ALTER TABLE changes ADD COLUMN {c}" for c in columns),
        f"INSERT INTO operations ({tc}id, actor, start_ns, end_ns, first_seq, last_seq, changes)"
        f" SELECT {tc}grp, min(author), min(time_ns), max(time_ns), min(seq), max(seq), count(*)"
        f" FROM (SELECT {tc}seq, author, time_ns, sum(brk) OVER ({by_tree}ORDER BY seq) AS grp"
        f" FROM (SELECT {tc}seq, author, time_ns, CASE WHEN author = lag(author) OVER w"
        f" AND time_ns = lag(time_ns) OVER w THEN 0 ELSE 1 END AS brk FROM changes"
        f" WINDOW w AS ({by_tree}ORDER BY seq)) AS marked) AS grouped GROUP BY {tc}grp",
        "UPDATE changes SET prior_kind = '?', op = (SELECT o.id FROM operations o WHERE"
        f" {key}o.first_seq <= changes.seq ORDER BY o.first_seq DESC LIMIT 1)",
        f"CREATE INDEX changes_op ON changes ({tc}op, seq)",
        # A server holding many trees keeps each tree's numbers in its row of ``trees``,
        # read under that row's lock (a file takes its write lock first, then reads).
        *(
            [
                f"ALTER TABLE trees ADD COLUMN op {i} NOT NULL DEFAULT 0",
                "UPDATE trees SET op = coalesce((SELECT max(o.id) FROM operations o"
                " WHERE o.tree = trees.id), 0)",
            ]
            if tc
            else []
        ),
    ]


STEPS.append(_operations)


def _totals_by_the_engine(ddl: Ddl) -> list[str]:
    """The tree's totals (files, directories, bytes) are counted by the engine and
    stored once per transaction: the row triggers that counted them updated one row
    per entry, and inside a batch's savepoints PostgreSQL walks every version of that
    row on each access (a 3,000-file batch took a minute)."""
    return [
        statement
        for name in ("entry_added", "entry_removed", "entry_resized")
        for statement in ddl.drop_entries_trigger(name)
    ]


STEPS.append(_totals_by_the_engine)


def _changes_by_path(ddl: Ddl) -> list[str]:
    """The files an operation made at or below a path (a temporary file renamed over
    its target in one burst through the mount) are found by path. By operation the
    lookup read every change the operation had made so far, so a long burst (``rsync
    -a``, a model's session) slowed with every file it saved."""
    return [f"CREATE INDEX changes_path ON changes ({ddl.tree_column}path)"]


STEPS.append(_changes_by_path)


def _operation_command(ddl: Ddl) -> list[str]:
    """Which of memfs's own commands an operation is (``restore``, ``undo``, ...; ``''``
    for every door), a field of the operation rather than a reading of its actor's text,
    which any writer could have chosen (:func:`memfs.actors.by_history_command`).
    Operations recorded before take it from their actor, whose ``memfs COMMAND (user
    NAME)`` form no door could give (:func:`memfs.actors.check_actor`)."""
    commands = ("restore", "undo", "import", "redact", "expire", "checkpoint", "claude-code")
    return [
        f"ALTER TABLE operations ADD COLUMN command {ddl.text} NOT NULL DEFAULT ''",
        *(
            f"UPDATE operations SET command = '{name}' WHERE actor LIKE 'memfs {name} (user %)'"
            for name in commands
        ),
    ]


STEPS.append(_operation_command)


def _door_notes(ddl: Ddl) -> list[str]:
    """What a door keeps beside the tree for every server of the store to see: WebDAV's
    locks and dead properties (:meth:`memfs.store.base.Store.set_note`). Not part of
    the tree: no revision, no change record, no operation."""
    i, t, tk, tc = ddl.integer, ddl.text, ddl.tree_key, ddl.tree_column
    return [
        f"CREATE TABLE door_notes ({tk}space {t} NOT NULL, key {t} NOT NULL,"
        f" value {t} NOT NULL, expires_ns {i}, PRIMARY KEY ({tc}space, key))"
    ]


STEPS.append(_door_notes)


def _continued_blobs(ddl: Ddl) -> list[str]:
    """A revision that adds to the end of its file may keep only what it added
    (:mod:`memfs.store.deltas`): ``blobs.base`` names the whole content a row's content
    continues (NULL: the row holds all of it). A base is kept while any row continues
    it, as while a revision holds it, and goes with the last of them."""
    tc = ddl.tree_column
    head = [
        f"ALTER TABLE blobs ADD COLUMN base {ddl.text}",
        f"CREATE INDEX blobs_by_base ON blobs ({tc}base) WHERE base IS NOT NULL",
    ]
    if ddl.counts_blob_users:
        # The row that continues a base counts as one of its users (put_delta adds it).
        return [
            *head,
            "CREATE TRIGGER blob_removed AFTER DELETE ON blobs WHEN OLD.base IS NOT NULL BEGIN"
            " UPDATE blob_refs SET refs = refs - 1 WHERE sha256 = OLD.base;"
            " DELETE FROM blobs WHERE id ="
            " (SELECT blob_id FROM blob_refs WHERE sha256 = OLD.base AND refs = 0);"
            " DELETE FROM blob_refs WHERE sha256 = OLD.base AND refs = 0; END",
        ]
    unused = (
        "NOT EXISTS (SELECT 1 FROM memfs.revisions r WHERE r.tree = OLD.tree AND r.sha256 = {0})"
        " AND NOT EXISTS (SELECT 1 FROM memfs.blobs c WHERE c.tree = OLD.tree AND c.base = {0})"
    )
    return [
        *head,
        "CREATE OR REPLACE FUNCTION memfs.revision_removed() RETURNS trigger"
        " LANGUAGE plpgsql AS $$ BEGIN"
        " DELETE FROM memfs.blobs b WHERE b.tree = OLD.tree AND b.sha256 = OLD.sha256"
        f" AND {unused.format('OLD.sha256')}; RETURN NULL; END $$",
        "CREATE FUNCTION memfs.blob_removed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        " DELETE FROM memfs.blobs b WHERE b.tree = OLD.tree AND b.sha256 = OLD.base"
        f" AND {unused.format('OLD.base')}; RETURN NULL; END $$",
        "CREATE TRIGGER blob_removed AFTER DELETE ON memfs.blobs FOR EACH ROW"
        " WHEN (OLD.base IS NOT NULL) EXECUTE FUNCTION memfs.blob_removed()",
    ]


STEPS.append(_continued_blobs)
