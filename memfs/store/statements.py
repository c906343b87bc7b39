"""Every statement of the store's algorithm, written once for every dialect.

Statements use ``:name`` placeholders and the :class:`~memfs.store.sql.Dialect`'s few
words: ``t(alias)`` keeps a statement to the store's tree on a server that holds many
(nothing on a file), ``tree_column``/``tree_value`` put the tree into an INSERT,
``content(alias)`` joins a revision to its bytes. Table and column names are the same
in every backend's schema. A path's subtree is the range ``[P/, P0)`` in byte order
("0" follows "/"), which the unique index on paths searches, where LIKE would scan and
take "%" and "_" in names as wildcards.
"""

from __future__ import annotations

from memfs.store.sql import Dialect, Row

COLS = "path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, target"
E_COLS = ", ".join("e." + c for c in COLS.split(", "))
REV_COLS = "rev, author, time_ns, size, sha256, redacted_by, redacted_ns"
R_COLS = ", ".join("r." + c for c in REV_COLS.split(", "))
CHANGE_COLS = (
    "seq, kind, path, author, time_ns, old_path, rev, size, sha256, op, mode, target,"
    " prior_kind, prior_sha256, prior_size, prior_mode, prior_target"
)
OP_COLS = "id, actor, detail, label, start_ns, end_ns, first_seq, last_seq, changes, command"


def subtree(col: str = "path") -> str:
    """``:p`` and everything below it: the range [p, p0) of byte-ordered paths, less
    the names beside p that sort inside it ("p.bak"). Spelled as one range so that an
    index on the path answers it whatever the planner's statistics say (as an OR of
    the point and [p/, p0) a server with stale statistics scanned the whole tree)."""
    return f"({col} >= :p AND {col} < :p || '0' AND ({col} = :p OR {col} >= :p || '/'))"


SUBTREE = subtree()
BELOW = "path > :p || '/' AND path < :p || '0'"
# One row whatever the joins to it find: reads of an entry, its parent and its history
# are one statement, so one snapshot, on every database.
ONE = "(SELECT 1 AS one) o"
# What look_file (below) answers at a name that never was, in a directory: no entry,
# no tombstone, no revisions (a create-only write guesses it: memfs.store.foresight).
LOOK_FILE_NEW_NAME: Row = (None, None, None, None, None, None, "dir", None, None, 0, None)
# LIMIT for "no limit" (SQLite and PostgreSQL spell "none" differently).
ALL = 2**62


class Statements:
    """The statements rendered for one dialect (built once per open store)."""

    def __init__(self, d: Dialect) -> None:
        t, r = d.t, d.render
        tc, tv = d.tree_column, d.tree_value
        self.d = d
        self.savepoint = "SAVEPOINT m{}"
        self.release = "RELEASE m{}"
        self.rollback_to = "ROLLBACK TO m{}"
        # --- the tree ----------------------------------------------------------------
        self.stat = r(f"SELECT {COLS} FROM entries WHERE {t()} path = :p")
        self.kind = r(f"SELECT kind FROM entries WHERE {t()} path = :p")
        self.listdir = r(f"SELECT {COLS} FROM entries WHERE {t()} parent = :p ORDER BY path")
        self.walk_all = r(f"SELECT {COLS} FROM entries WHERE {t()} path <> '' ORDER BY path")
        self.walk_below = r(f"SELECT {COLS} FROM entries WHERE {t()} {BELOW} ORDER BY path")
        extent = (
            "SELECT max(length(path) - length(replace(path, '/', ''))),"
            f" max({d.octets('path')}) FROM entries WHERE {t()}"
        )
        self.extent_all = r(f"{extent} path <> ''")
        self.extent_below = r(f"{extent} {BELOW}")
        self.read = r(
            f"SELECT {E_COLS}, r.sha256, {d.stored} FROM entries e"
            f" LEFT JOIN revisions r ON {t('r')} r.path = e.path AND r.rev = e.rev"
            f" AND e.kind = 'file' {d.content('r', left=True)} WHERE {t('e')} e.path = :p"
        )
        # What a write's checks need: the entry, its parent, the path's tombstone and how
        # many revisions it keeps.
        self.look_file = r(
            "SELECT e.kind, e.rev, e.size, e.mode, e.uid, e.gid, p.kind, g.deleted_ns,"
            f" g.trim_ns, (SELECT count(*) FROM revisions x WHERE {t('x')} x.path = :p),"
            f" c.sha256 FROM {ONE} LEFT JOIN entries e ON {t('e')} e.path = :p"
            f" LEFT JOIN revisions c ON {t('c')} c.path = e.path AND c.rev = e.rev"
            f" LEFT JOIN entries p ON {t('p')} p.path = :parent"
            f" LEFT JOIN gone g ON {t('g')} g.path = :p"
        )
        # An entry and its current content's hash (a file's), for an attribute change.
        self.stat_sha = r(
            f"SELECT {E_COLS}, c.sha256 FROM entries e LEFT JOIN revisions c"
            f" ON {t('c')} c.path = e.path AND c.rev = e.rev WHERE {t('e')} e.path = :p"
        )
        # An entry (all columns) and its parent's kind.
        self.look_node = r(
            f"SELECT {E_COLS}, p.kind FROM {ONE} LEFT JOIN entries e ON {t('e')} e.path = :p"
            f" LEFT JOIN entries p ON {t('p')} p.path = :parent"
        )
        self.insert_entry = r(
            f"INSERT INTO entries ({tc}path, parent, kind, size, mode, mtime_ns, ctime_ns,"
            f" rev, target) VALUES ({tv}:p, :parent, :kind, :size, :mode, :mtime, :now, :rev,"
            " :target)"
        )
        self.update_content = r(
            "UPDATE entries SET size = :size, mtime_ns = :now, ctime_ns = :now, rev = :rev"
            f" WHERE {t()} path = :p"
        )
        self.touch = r(f"UPDATE entries SET mtime_ns = :now, ctime_ns = :now WHERE {t()} path = :p")
        self.touch_two = r(
            f"UPDATE entries SET mtime_ns = :now, ctime_ns = :now WHERE {t()} path IN (:a, :b)"
        )
        self.set_mtime = r(f"UPDATE entries SET mtime_ns = :mtime WHERE {t()} path = :p")
        self.set_rev = r(f"UPDATE entries SET rev = :rev WHERE {t()} path = :p")
        self.set_attrs = r(
            "UPDATE entries SET mode = coalesce(:mode, mode), uid = coalesce(:uid, uid),"
            " gid = coalesce(:gid, gid), mtime_ns = coalesce(:mtime, mtime_ns),"
            f" ctime_ns = :now WHERE {t()} path = :p"
        )
        # What a delete removes, children first, each with what a record of it keeps.
        self.subtree = r(
            "SELECT e.path, e.kind, e.rev, e.size, e.mode, e.target, c.sha256 FROM entries e"
            f" LEFT JOIN revisions c ON {t('c')} c.path = e.path AND c.rev = e.rev"
            f" WHERE {t('e')} {subtree('e.path')}"
            " ORDER BY e.path DESC"
        )
        self.delete_subtree = r(f"DELETE FROM entries WHERE {t()} {SUBTREE}")
        self.delete_entry = r(f"DELETE FROM entries WHERE {t()} path = :p")
        # A rename's source: every entry it moves, a file's with its current content.
        self.moving = r(
            "SELECT e.path, e.kind, r.size, r.sha256, e.mode, e.target, e.mtime_ns, e.uid,"
            " e.gid FROM entries e"
            " LEFT JOIN revisions r"
            f" ON {t('r')} r.path = e.path AND r.rev = e.rev AND e.kind = 'file'"
            f" WHERE {t('e')} {subtree('e.path')}"
        )
        # A rename's destination: its parent and whatever it would replace, with how
        # many revisions the path keeps.
        self.landing = r(
            f"SELECT e.path, e.kind, (SELECT count(*) FROM revisions x WHERE {t('x')}"
            " x.path = :p), e.size, e.mode, e.target, c.sha256 FROM entries e"
            f" LEFT JOIN revisions c ON {t('c')} c.path = e.path AND c.rev = e.rev"
            f" WHERE {t('e')} (e.path = :parent OR {subtree('e.path')})"
        )
        self.move_subtree = r(
            "UPDATE entries SET path = :dst || substr(path, :n + 1), parent = CASE"
            " WHEN path = :p THEN :dparent ELSE :dst || substr(parent, :n + 1) END,"
            f" ctime_ns = CASE WHEN path = :p THEN :now ELSE ctime_ns END WHERE {t()} {SUBTREE}"
        )
        # --- history ---------------------------------------------------------------------
        self.insert_revision = r(
            f"INSERT INTO revisions ({tc}path, rev, author, time_ns, size, sha256)"
            f" VALUES ({tv}:p, :rev, :author, :now, :size, :sha)"
        )
        # Keep the path's newest :keep + 1 revisions.
        self.prune = r(
            f"DELETE FROM revisions WHERE {t()} path = :p AND rev < (SELECT rev FROM"
            f" revisions WHERE {t()} path = :p ORDER BY rev DESC LIMIT 1 OFFSET :keep)"
        )
        self.forget_path = r(f"DELETE FROM revisions WHERE {t()} path = :p")
        self.tombstone = r(
            f"INSERT INTO gone ({tc}path, deleted_ns, trim_ns, due_ns)"
            f" VALUES ({tv}:p, :now, :trim, :trim) ON CONFLICT ({tc}path) DO UPDATE SET"
            " deleted_ns = excluded.deleted_ns, trim_ns = excluded.trim_ns,"
            " due_ns = excluded.due_ns"
        )
        self.gone_below = r(f"SELECT path, deleted_ns, trim_ns FROM gone WHERE {t()} {SUBTREE}")
        self.revive = r(f"DELETE FROM gone WHERE {t()} path = :p")
        self.due = r(
            f"SELECT g.path, g.deleted_ns, g.trim_ns, (SELECT count(*) FROM revisions x"
            f" WHERE {t('x')} x.path = g.path) FROM gone g WHERE {t('g')} g.due_ns <= :now"
            " ORDER BY g.due_ns LIMIT :n"
        )
        # The :n newest revisions of a path after its :keep newest.
        self.sweep = r(
            f"DELETE FROM revisions WHERE {t()} path = :p AND rev IN (SELECT rev FROM"
            f" revisions WHERE {t()} path = :p ORDER BY rev DESC LIMIT :n OFFSET :keep)"
        )
        self.trimmed = r(f"UPDATE gone SET trim_ns = NULL, due_ns = :due WHERE {t()} path = :p")
        # A path's entry kind, tombstone and every revision row, newest first, in one
        # statement (a row of NULL revision columns when there is none).
        history = (
            f"SELECT e.kind, g.deleted_ns, g.trim_ns, {R_COLS}{{}} FROM {ONE}"
            f" LEFT JOIN entries e ON {t('e')} e.path = :p"
            f" LEFT JOIN gone g ON {t('g')} g.path = :p"
            f" LEFT JOIN revisions r ON {t('r')} r.path = :p{{}} ORDER BY r.rev DESC"
        )
        self.history = r(history.format("", ""))
        self.history_content = r(
            history.format(f", {d.stored}", " " + d.content("r", left=True, on="r.rev = :rev"))
        )
        self.blob = r(d.blob)
        self.blob_base = r(d.blob_base)
        self.continuing = r(d.continuing)
        self.blob_extent = r(d.blob_extent)
        self.holder = r(
            f"SELECT path, rev FROM revisions WHERE {t()} sha256 = :sha ORDER BY rev DESC LIMIT 1"
        )
        # --- the feed -----------------------------------------------------------------
        changes = (
            f"SELECT {CHANGE_COLS} FROM changes WHERE {t()} seq > :since AND seq <= :until"
            " ORDER BY seq{} LIMIT :n"
        )
        self.changes = r(changes.format(""))
        self.changes_back = r(changes.format(" DESC"))
        self.changes_of = r(
            f"SELECT {CHANGE_COLS} FROM changes WHERE {t()} op = :op ORDER BY seq LIMIT :n"
        )
        # --- the operation log ---------------------------------------------------------
        self.add_operation = r(
            f"INSERT INTO operations ({tc}{OP_COLS}) VALUES ({tv}:id, :actor, :detail,"
            " :label, :start, :end, :first, :last, :n, :command)"
        )
        self.grow_operation = r(
            f"UPDATE operations SET end_ns = {d.greatest('end_ns', ':end')}, last_seq = :last,"
            f" changes = changes + :n WHERE {t()} id = :id"
        )
        self.operation = r(f"SELECT {OP_COLS} FROM operations WHERE {t()} id = :id")
        # By path (changes_path), then the few operations found by their key.
        self.commands_since = r(
            f"SELECT DISTINCT o.command FROM changes c JOIN operations o ON {t('o')}"
            f" o.id = c.op WHERE {t('c')} c.path = :p AND c.rev > :rev AND o.command <> ''"
        )
        # Newest first; each filter is off when its parameter is NULL. Touching a path
        # is any of the operation's records at it or below it, moved to or from there,
        # or a move of a directory above it (which moved it too).
        touches = (
            f"EXISTS (SELECT 1 FROM changes c WHERE {t('c')} c.op = o.id AND"
            " ((c.path = :p OR (c.path >= :p || '/' AND c.path < :p || '0'))"
            " OR (c.old_path = :p OR (c.old_path >= :p || '/' AND c.old_path < :p || '0'))"
            " OR (c.kind = 'rename' AND ((:p >= c.path || '/' AND :p < c.path || '0')"
            " OR (:p >= c.old_path || '/' AND :p < c.old_path || '0')))))"
        )
        self.operations = r(
            f"SELECT {', '.join('o.' + c for c in OP_COLS.split(', '))} FROM operations o"
            f" WHERE {t('o')} o.id < :before AND o.start_ns >= :since AND o.start_ns <= :until"
            " AND (CAST(:actor AS TEXT) IS NULL OR"
            f" {d.contains('o.actor', 'CAST(:actor AS TEXT)')})"
            f" AND (CAST(:p AS TEXT) IS NULL OR {touches}) ORDER BY o.id DESC LIMIT :n"
        )
        # The records of an operation at these paths: files it made (their history is
        # the operation's own, for files that go again inside it).
        # By path (changes_path): "op + 0" keeps the planners off the operation's index,
        # which they took for the more selective one and read the whole operation by.
        self.made_here = r(
            f"SELECT path, rev FROM changes WHERE {t()} {subtree()} AND kind = 'create'"
            " AND op + 0 = :op"
        )
        self.drop_revisions_from = r(f"DELETE FROM revisions WHERE {t()} path = :p AND rev >= :rev")
        self.revisions_left = r(f"SELECT count(*) FROM revisions WHERE {t()} path = :p")
        self.revisions_at = r(f"SELECT rev FROM revisions WHERE {t()} path = :p")
        self.last_seq = r(f"SELECT seq FROM changes WHERE {t()} TRUE ORDER BY seq DESC LIMIT 1")
        self.begin = r(d.begin)
        self.usage = r(d.usage)
        # --- keeping ------------------------------------------------------------------
        used = d.greatest("r.time_ns", "coalesce(e.used_ns, 0)")
        current = f"JOIN revisions r ON {t('r')} r.path = e.path AND r.rev = e.rev"
        self.last_use = f"SELECT e.path, {used} FROM entries e {current} WHERE {t('e')}"
        self.last_use += " e.kind = 'file' AND e.path IN ({})"
        self.mark_used = r(
            f"UPDATE entries SET used_ns = :now WHERE {t()} kind = 'file' AND path = :p"
        )
        self.unused = r(
            f"SELECT {E_COLS} FROM entries e {current} WHERE {t('e')} e.kind = 'file'"
            f" AND {used} < :before ORDER BY e.path"
        )
        self.live_with = r(
            f"SELECT e.path FROM entries e {current} WHERE {t('e')} e.kind = 'file'"
            " AND r.sha256 = :sha LIMIT 1"
        )
        self.redact = r(
            "UPDATE revisions SET sha256 = :stored, redacted_by = :author,"
            f" redacted_ns = :now WHERE {t()} sha256 = :sha"
        )
        self.with_sha = r(
            f"SELECT path, {REV_COLS} FROM revisions WHERE {t()} sha256 = :sha ORDER BY rev"
        )
        self.has_checkpoint = r(f"SELECT 1 FROM checkpoints WHERE {t()} name = :name")
        self.add_checkpoint = r(
            f"INSERT INTO checkpoints ({tc}name, seq, time_ns, author)"
            f" VALUES ({tv}:name, :seq, :now, :author)"
        )
        self.checkpoints = r(
            f"SELECT name, seq, time_ns, author FROM checkpoints WHERE {t()} TRUE"
            " ORDER BY seq, time_ns"
        )
        self.drop_checkpoint = r(f"DELETE FROM checkpoints WHERE {t()} name = :name RETURNING name")
        # Doors' notes (Store.note): a key, or the keys below a prefix, unexpired.
        live = "(expires_ns IS NULL OR expires_ns > :now)"
        below = "substr(key, 1, length(:k)) = :k"
        self.note = r(
            f"SELECT value FROM door_notes WHERE {t()} space = :s AND key = :k AND {live}"
        )
        self.notes = r(
            f"SELECT key, value FROM door_notes WHERE {t()} space = :s AND {below}"
            f" AND {live} ORDER BY key"
        )
        self.set_note = r(
            f"INSERT INTO door_notes ({tc}space, key, value, expires_ns)"
            f" VALUES ({tv}:s, :k, :v, :exp) ON CONFLICT ({tc}space, key)"
            " DO UPDATE SET value = excluded.value, expires_ns = excluded.expires_ns"
        )
        self.drop_note = r(f"DELETE FROM door_notes WHERE {t()} space = :s AND key = :k")
        self.drop_notes_below = r(f"DELETE FROM door_notes WHERE {t()} space = :s AND {below}")
        self.drop_expired_notes = r(
            f"DELETE FROM door_notes WHERE {t()} expires_ns IS NOT NULL AND expires_ns <= :now"
        )
        # Every revision row with what decides whether it is retained (invariant 6).
        self.all_revisions = r(
            f"SELECT r.path, {R_COLS}, e.kind, g.deleted_ns, g.trim_ns FROM revisions r"
            f" LEFT JOIN entries e ON {t('e')} e.path = r.path"
            f" LEFT JOIN gone g ON {t('g')} g.path = r.path WHERE {t('r')} TRUE"
            " ORDER BY r.path, r.rev DESC"
        )
        self._last_use: dict[int, str] = {}

    def last_use_of(self, count: int) -> str:
        """:attr:`last_use` for ``count`` paths, named :p0 ... (rendered once per count)."""
        found = self._last_use.get(count)
        if found is None:
            names = ", ".join(f":p{i}" for i in range(count))
            found = self._last_use[count] = self.d.render(self.last_use.format(names))
        return found
