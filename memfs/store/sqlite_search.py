"""The SQLite store's full-text index: an FTS5 table kept in every writing transaction.

``search_text`` is an FTS5 table with the ``trigram`` tokenizer, one row per file keyed
by the file's ``entries.id`` (stable across renames, so a rename changes nothing in it).
Trigrams index every substring of three characters or more, case-folded: a query term
is found inside identifiers (``parse_rel``, ``sqlite_writes.py``), paths written in a
file, and text in any script, with or without spaces between words (CJK), exactly the
substring semantics :mod:`memfs.store.matching` defines. Terms shorter than three
characters cannot use it: such a query reads the files.

``search_docs`` says what the index holds for each file: the SHA-256 of the content
it took in and whether that is all of it (``kind`` 0), only the first
:data:`INDEX_BYTES` bytes (1: the rest is read at search time, so nothing is missed),
or nothing (2: binary content, not searched). ``search_stale`` lists files whose
current content the index does not hold: a trigger on ``revisions`` adds a file when a
revision with new content is made at its path, the writer's own transaction indexes it
and takes it off (``write``, ``truncate``), and a file written by code that does not
(a migration from an older schema, which lists every file) waits there until the next
:meth:`SqliteSearch.build_search_index`, which every search runs first. A trigger on
``entries`` removes a deleted file's rows. So the index is never out of date without
knowing it, whatever wrote the store.
"""

from __future__ import annotations

import codecs
import contextlib
import sqlite3
from collections.abc import Callable, Iterator

from memfs.errors import NotADirectory, NotFound, StoreUnavailable
from memfs.store.base import SearchHit
from memfs.store.matching import DEFAULT_LIMIT, Query, average, decode_text, parse_query
from memfs.store.sqlite_conn import READ, STAT, SqliteConnections, unpack_blob
from memfs.store.sqlite_schema import translate

# Text beyond this is not indexed (searches read it instead); kept well below the 64 MiB
# file cap so one large write does not spend seconds building trigrams in its commit.
INDEX_BYTES = 1 << 20
BUILD_BATCH = 200
FULL, PARTIAL, SKIPPED = 0, 1, 2

_IN_SCOPE = "(:p = '' OR e.path = :p OR (e.path >= :p || '/' AND e.path < :p || '0'))"


def fts_phrase(fragment: str) -> str:
    """``fragment`` as one FTS5 string (a phrase of its trigrams)."""
    return '"' + fragment.replace('"', '""') + '"'


def index_text(data: bytes) -> tuple[int, str]:
    """The kind of ``search_docs`` row for ``data`` and the text to index."""
    if len(data) <= INDEX_BYTES:
        text = decode_text(data)
        return (SKIPPED, "") if text is None else (FULL, text)
    head = data[:INDEX_BYTES]
    if b"\x00" in head:
        return SKIPPED, ""
    try:
        # Incremental: a character cut in two at the end is left out, not an error.
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return SKIPPED, ""
    return PARTIAL, text


class SqliteSearch(SqliteConnections):
    """Index upkeep for the writes, and :meth:`search` over it."""

    def _index(
        self, db: sqlite3.Connection, entry_id: int, path: str, rev: int, data: bytes
    ) -> None:
        """Make the index hold ``data`` as file ``entry_id``'s content (revision ``rev``
        at ``path``), inside the caller's transaction."""
        sha = db.execute(
            "SELECT sha256 FROM revisions WHERE path = ? AND rev = ?", (path, rev)
        ).fetchone()[0]
        kind, text = index_text(data)
        db.execute("DELETE FROM search_text WHERE rowid = ?", (entry_id,))
        if kind != SKIPPED:
            db.execute("INSERT INTO search_text (rowid, body) VALUES (?, ?)", (entry_id, text))
        db.execute(
            "INSERT OR REPLACE INTO search_docs (id, sha256, kind) VALUES (?, ?, ?)",
            (entry_id, sha, kind),
        )
        db.execute("DELETE FROM search_stale WHERE id = ?", (entry_id,))

    # --- building -------------------------------------------------------------------
    def search_index_pending(self) -> int:
        try:
            return int(self._db().execute("SELECT count(*) FROM search_stale").fetchone()[0])
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def build_search_index(self, progress: Callable[[int], None] | None = None) -> None:
        # Small transactions, so writers in other processes wait at most one batch.
        while True:
            with self._tx() as db:
                rows = db.execute(
                    "SELECT s.id, e.path, e.rev FROM search_stale s LEFT JOIN entries e"
                    " ON e.id = s.id AND e.kind = 'file' ORDER BY s.id LIMIT ?",
                    (BUILD_BATCH,),
                ).fetchall()
                for entry_id, path, rev in rows:
                    if path is None:  # no longer a file
                        db.execute("DELETE FROM search_stale WHERE id = ?", (entry_id,))
                        continue
                    data = unpack_blob(*db.execute(READ, (path,)).fetchone()[-2:])
                    self._index(db, entry_id, path, rev, data)
            if progress is not None and rows:
                progress(len(rows))
            if len(rows) < BUILD_BATCH:
                return

    # --- searching ------------------------------------------------------------------
    def search(
        self, query: str, path: str = "", *, regex: bool = False, limit: int = DEFAULT_LIMIT
    ) -> list[SearchHit]:
        parsed = parse_query(query, regex=regex)
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        # Busy or read-only: the files still pending are read below instead.
        with contextlib.suppress(StoreUnavailable):
            self.build_search_index()
        db = self._db()
        try:
            db.execute("BEGIN")  # one snapshot for the candidates and their content
            try:
                return self._search(db, parsed, path, limit)
            finally:
                db.execute("COMMIT")
        except sqlite3.Error as e:
            raise translate(e, self.path) from e

    def _search(
        self, db: sqlite3.Connection, parsed: Query, path: str, limit: int
    ) -> list[SearchHit]:
        row = db.execute(STAT, (path,)).fetchone()
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        if row[1] == "symlink":
            raise NotADirectory(f"'{path}' is a symlink; memfs never follows symlinks", path=path)
        scope = {"p": path}
        if not parsed.fragments:
            return self._scan(db, parsed, scope, limit)
        hits: list[SearchHit] = []
        seen: set[str] = set()
        ranked = db.execute(
            "SELECT e.path, -bm25(search_text) FROM search_text JOIN entries e"
            f" ON e.id = search_text.rowid WHERE search_text MATCH :q AND {_IN_SCOPE}"
            " ORDER BY rank",
            {**scope, "q": " AND ".join(fts_phrase(f) for f in parsed.fragments)},
        )
        for found, score in ranked:
            seen.add(found)
            hit = self._confirm(db, parsed, found, score)
            if hit is not None:
                hits.append(hit)
                if len(hits) == limit:
                    return hits
        # Files the index holds only part of, or not yet: read, ranked after the rest.
        # CROSS JOIN keeps the few partial and stale rows as the outer loop: the planner
        # would otherwise walk every entry.
        rest = db.execute(
            "SELECT e.path FROM search_docs d CROSS JOIN entries e ON e.id = d.id"
            f" WHERE d.kind = {PARTIAL} AND {_IN_SCOPE} UNION SELECT e.path FROM"
            f" search_stale s CROSS JOIN entries e ON e.id = s.id WHERE {_IN_SCOPE} ORDER BY 1",
            scope,
        ).fetchall()
        for (found,) in rest:
            if found not in seen:
                hit = self._confirm(db, parsed, found, 0.0)
                if hit is not None:
                    hits.append(hit)
                    if len(hits) == limit:
                        break
        return hits

    def _scan(
        self, db: sqlite3.Connection, parsed: Query, scope: dict[str, str], limit: int
    ) -> list[SearchHit]:
        """Every text file in scope read and matched: the index cannot help."""
        found: list[tuple[str, str, list[tuple[int, str]]]] = []
        for file_path, text in self._texts(db, scope):
            lines = parsed.matching_lines(text)
            if lines:
                found.append((file_path, text, lines))
        mean = average([len(text) for _, text, _ in found])
        hits = [SearchHit(p, parsed.score(text, mean), lines) for p, text, lines in found]
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:limit]

    def _texts(self, db: sqlite3.Connection, scope: dict[str, str]) -> Iterator[tuple[str, str]]:
        rows = db.execute(
            f"SELECT e.path FROM entries e LEFT JOIN search_docs d ON d.id = e.id"
            f" WHERE e.kind = 'file' AND {_IN_SCOPE} AND coalesce(d.kind, -1) != {SKIPPED}"
            " ORDER BY e.path",
            scope,
        ).fetchall()
        for (file_path,) in rows:
            text = self._text(db, file_path)
            if text is not None:
                yield file_path, text

    def _text(self, db: sqlite3.Connection, file_path: str) -> str | None:
        row = db.execute(READ, (file_path,)).fetchone()
        return None if row is None else decode_text(unpack_blob(row[-2], row[-1]))

    def _confirm(
        self, db: sqlite3.Connection, parsed: Query, file_path: str, score: float
    ) -> SearchHit | None:
        text = self._text(db, file_path)
        lines = None if text is None else parsed.matching_lines(text)
        return SearchHit(file_path, score, lines) if lines else None

    # --- checking -------------------------------------------------------------------
    def search_index_problems(self) -> list[str]:
        """What the index says that the tree does not (empty when consistent): a file
        indexed with other content than its current one and not listed stale, rows for
        entries that are not files. For tests and store checks."""
        db = self._db()
        problems: list[str] = []
        try:
            db.execute("BEGIN")
            try:
                files = db.execute(
                    "SELECT e.id, e.path, r.sha256, b.codec, b.content, d.sha256, d.kind,"
                    " s.id IS NOT NULL FROM entries e JOIN revisions r ON r.path = e.path"
                    " AND r.rev = e.rev JOIN blob_refs br ON br.sha256 = r.sha256"
                    " JOIN blobs b ON b.id = br.blob_id LEFT JOIN search_docs d ON d.id = e.id"
                    " LEFT JOIN search_stale s ON s.id = e.id WHERE e.kind = 'file'"
                ).fetchall()
                for entry_id, file_path, sha, codec, stored, doc_sha, kind, stale in files:
                    if stale:
                        continue
                    body = db.execute(
                        "SELECT body FROM search_text WHERE rowid = ?", (entry_id,)
                    ).fetchone()
                    want_kind, want = index_text(unpack_blob(codec, stored))
                    have = None if body is None else body[0]
                    if (
                        doc_sha != sha
                        or kind != want_kind
                        or have != (None if kind == SKIPPED else want)
                    ):
                        problems.append(f"{file_path}: index holds other content")
                ids = {row[0] for row in files}
                for table in ("search_text", "search_docs", "search_stale"):
                    key = "rowid" if table == "search_text" else "id"
                    for (orphan,) in db.execute(f"SELECT {key} FROM {table}"):
                        if orphan not in ids:
                            problems.append(f"{table}: row {orphan} is not a file")
            finally:
                db.execute("COMMIT")
        except sqlite3.Error as e:
            raise translate(e, self.path) from e
        return problems
