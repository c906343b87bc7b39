"""The SQLite store's full-text index: an FTS5 table kept in every writing transaction.

``search_text`` is an FTS5 table with the ``trigram`` tokenizer, one row per file keyed
by the file's ``entries.id`` (stable across renames, so a rename changes nothing in it).
Trigrams index every substring of three characters or more, case-folded: a query term
is found inside identifiers (``parse_rel``, ``sqlite_search.py``), paths written in a
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
(a migration from an older schema, which lists every file; a mount daemon's store,
which indexes in ``maintain()`` instead: :meth:`SqliteSearch.build_step`) waits there
until then or the next :meth:`SqliteSearch.build`, which every search runs first. A trigger on
``entries`` removes a deleted file's rows. So the index is never out of date without
knowing it, whatever wrote the store.
"""

from __future__ import annotations

import codecs
import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from memfs.errors import NotADirectory, NotFound, StoreUnavailable
from memfs.store import rules
from memfs.store.base import SearchHit
from memfs.store.deltas import Bases, content_of
from memfs.store.matching import Query, average, decode_text, parse_query
from memfs.store.sql import Cursor

if TYPE_CHECKING:
    from memfs.store.engine import SqlStore

# Text beyond this is not indexed (searches read it instead); kept well below the 64 MiB
# file cap so one large write does not spend seconds building trigrams in its commit.
INDEX_BYTES = 1 << 20
BUILD_BATCH = 200
FULL, PARTIAL, SKIPPED = 0, 1, 2

_IN_SCOPE = "(:p = '' OR e.path = :p OR (e.path >= :p || '/' AND e.path < :p || '0'))"
# The join from a blob row ``b`` to the base it continues, ``bb`` (memfs.store.deltas).
BASE_JOIN = (
    " LEFT JOIN blob_refs bbr ON bbr.sha256 = b.base LEFT JOIN blobs bb ON bb.id = bbr.blob_id"
)
# File :p's current revision and its stored bytes.
_FILE_CONTENT = (
    " FROM entries e JOIN revisions r ON r.path = e.path AND r.rev = e.rev"
    " LEFT JOIN blob_refs br ON br.sha256 = r.sha256 LEFT JOIN blobs b ON b.id = br.blob_id"
    f"{BASE_JOIN} WHERE e.path = :p AND e.kind = 'file'"
)
_CURRENT = "SELECT e.rev, r.sha256, b.codec, b.content, b.base, bb.codec, bb.content" + (
    _FILE_CONTENT
)
# What the index takes of a file: a file larger than it holds is not loaded, its head is
# read from the row (the CASE keeps SQLite from reading the whole value, which a bare
# column reference would; a row continuing a base is never that large).
_TO_INDEX = (
    "SELECT e.rev, r.sha256, r.size, b.id, b.codec,"
    " CASE WHEN r.size > :head THEN NULL ELSE b.content END, b.base, bb.codec, bb.content"
    + _FILE_CONTENT
)

# Reads the first n bytes of a stored blob: (cursor, blob id, codec, n).
ReadHead = Callable[[Cursor, int, int | None, int], bytes]


def fts_phrase(fragment: str) -> str:
    """``fragment`` as one FTS5 string (a phrase of its trigrams)."""
    return '"' + fragment.replace('"', '""') + '"'


def index_text(data: bytes | bytearray) -> tuple[int, str]:
    """The kind of ``search_docs`` row for ``data`` and the text to index."""
    if len(data) <= INDEX_BYTES:
        text = decode_text(bytes(data))
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


class SqliteSearch:
    """The index of one SQLite store (:class:`memfs.store.sql.SearchIndex`): kept by the
    store's writes, read by its searches."""

    def __init__(self, store: SqlStore, read_head: ReadHead) -> None:
        self.store = store
        self._read_head = read_head

    def take(self, db: Cursor, path: str, sha256: str, data: bytes | bytearray) -> None:
        """Make the index hold ``data`` as file ``path``'s content, inside the caller's
        transaction."""
        row = db.one("SELECT id FROM entries WHERE path = :p", {"p": path})
        assert row is not None  # the caller has just written it
        entry_id = int(row[0])
        kind, text = index_text(data)
        db.run("DELETE FROM search_text WHERE rowid = :id", {"id": entry_id})
        if kind != SKIPPED:
            db.run(
                "INSERT INTO search_text (rowid, body) VALUES (:id, :body)",
                {"id": entry_id, "body": text},
            )
        db.run(
            "INSERT OR REPLACE INTO search_docs (id, sha256, kind) VALUES (:id, :sha, :kind)",
            {"id": entry_id, "sha": sha256, "kind": kind},
        )
        db.run("DELETE FROM search_stale WHERE id = :id", {"id": entry_id})

    def _current(self, db: Cursor, path: str) -> tuple[bytes, str] | None:
        """The checked content of file ``path`` and its SHA-256 (None: not a file)."""
        row = db.one(_CURRENT, {"p": path})
        if row is None:
            return None
        return self.store.content(path, int(row[0]), row[1], row, 2), str(row[1])

    def _to_index(self, db: Cursor, path: str) -> tuple[bytes, str] | None:
        """What the index takes of file ``path`` and its SHA-256 (None: not a file): its
        checked content, or past :data:`INDEX_BYTES` only its head, unchecked (reading and
        hashing all of a 32 MiB file to index its first megabyte was a fifth of a mount
        daemon's CPU for that file; a search confirms every hit on checked content)."""
        row = db.one(_TO_INDEX, {"p": path, "head": INDEX_BYTES})
        if row is None:
            return None
        rev, sha, size, blob_id, codec = row[:5]
        if int(size) <= INDEX_BYTES or blob_id is None:
            return self.store.content(path, int(rev), sha, row, 4), str(sha)
        try:
            # One byte past what is indexed: index_text then knows there is more.
            head = self._read_head(db, int(blob_id), codec, INDEX_BYTES + 1)
        except ValueError:
            head = b""
        if len(head) <= INDEX_BYTES:  # shorter than its revision says: damaged
            raise rules.damaged(path, int(rev), str(sha))
        return head, str(sha)

    # --- building -------------------------------------------------------------------
    def pending(self) -> int:
        with self.store._reading() as db:
            row = db.one("SELECT count(*) FROM search_stale")
        return 0 if row is None else int(row[0])

    def build(self, progress: Callable[[int], None] | None) -> None:
        # Small transactions, so writers in other processes wait at most one batch.
        while True:
            done = self.build_step(BUILD_BATCH)
            if progress is not None and done:
                progress(done)
            if done < BUILD_BATCH:
                return

    def build_step(self, limit: int) -> int:
        """Index up to ``limit`` stale files in one transaction; how many were stale."""
        with self.store._tx() as tx:
            rows = tx.db.all(
                "SELECT s.id, e.path FROM search_stale s LEFT JOIN entries e"
                " ON e.id = s.id AND e.kind = 'file' ORDER BY s.id LIMIT :n",
                {"n": limit},
            )
            for entry_id, path in rows:
                current = None if path is None else self._to_index(tx.db, str(path))
                if current is None:  # no longer a file
                    tx.db.run("DELETE FROM search_stale WHERE id = :id", {"id": entry_id})
                    continue
                self.take(tx.db, str(path), current[1], current[0])
        return len(rows)

    # --- searching ------------------------------------------------------------------
    def search(self, query: str, path: str, *, regex: bool, limit: int) -> list[SearchHit]:
        parsed = parse_query(query, regex=regex)
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        # Busy or read-only: the files still pending are read below instead.
        with contextlib.suppress(StoreUnavailable):
            self.build(None)
        # One snapshot for the candidates and their content.
        with self.store._reading(snapshot=True) as db:
            return self._search(db, parsed, path, limit)

    def _search(self, db: Cursor, parsed: Query, path: str, limit: int) -> list[SearchHit]:
        row = db.one("SELECT kind FROM entries WHERE path = :p", {"p": path})
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        if row[0] == "symlink":
            raise NotADirectory(f"'{path}' is a symlink; memfs never follows symlinks", path=path)
        scope = {"p": path}
        if not parsed.fragments:
            return self._scan(db, parsed, scope, limit)
        hits: list[SearchHit] = []
        seen: set[str] = set()
        ranked = db.all(
            "SELECT e.path, -bm25(search_text) FROM search_text JOIN entries e"
            f" ON e.id = search_text.rowid WHERE search_text MATCH :q AND {_IN_SCOPE}"
            " ORDER BY rank",
            {**scope, "q": " AND ".join(fts_phrase(f) for f in parsed.fragments)},
        )
        for found, score in ranked:
            seen.add(found)
            hit = self._confirm(db, parsed, found, float(score))
            if hit is not None:
                hits.append(hit)
                if len(hits) == limit:
                    return hits
        # Files the index holds only part of, or not yet: read, ranked after the rest.
        # CROSS JOIN keeps the few partial and stale rows as the outer loop: the planner
        # would otherwise walk every entry.
        rest = db.all(
            "SELECT e.path FROM search_docs d CROSS JOIN entries e ON e.id = d.id"
            f" WHERE d.kind = {PARTIAL} AND {_IN_SCOPE} UNION SELECT e.path FROM"
            f" search_stale s CROSS JOIN entries e ON e.id = s.id WHERE {_IN_SCOPE} ORDER BY 1",
            scope,
        )
        for (found,) in rest:
            if found not in seen:
                hit = self._confirm(db, parsed, found, 0.0)
                if hit is not None:
                    hits.append(hit)
                    if len(hits) == limit:
                        break
        return hits

    def _scan(
        self, db: Cursor, parsed: Query, scope: dict[str, str], limit: int
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

    def _texts(self, db: Cursor, scope: dict[str, str]) -> Iterator[tuple[str, str]]:
        rows = db.all(
            f"SELECT e.path FROM entries e LEFT JOIN search_docs d ON d.id = e.id"
            f" WHERE e.kind = 'file' AND {_IN_SCOPE} AND coalesce(d.kind, -1) != {SKIPPED}"
            " ORDER BY e.path",
            scope,
        )
        for (file_path,) in rows:
            text = self._text(db, str(file_path))
            if text is not None:
                yield str(file_path), text

    def _text(self, db: Cursor, file_path: str) -> str | None:
        current = self._current(db, file_path)
        return None if current is None else decode_text(current[0])

    def _confirm(self, db: Cursor, parsed: Query, file_path: str, score: float) -> SearchHit | None:
        text = self._text(db, file_path)
        lines = None if text is None else parsed.matching_lines(text)
        return SearchHit(file_path, score, lines) if lines else None

    # --- checking -------------------------------------------------------------------
    def problems(self) -> list[str]:
        """What the index says that the tree does not (empty when consistent): a file
        indexed with other content than its current one and not listed stale, rows for
        entries that are not files."""
        problems: list[str] = []
        unpack = self.store.d.unpack
        bases = Bases(0, 0)  # what is stored, read afresh
        with self.store._reading(snapshot=True) as db:
            files = db.all(
                "SELECT e.id, e.path, r.sha256, d.sha256, d.kind, s.id IS NOT NULL,"
                " b.codec, b.content, b.base, bb.codec, bb.content FROM entries e"
                " JOIN revisions r ON r.path = e.path AND r.rev = e.rev"
                " JOIN blob_refs br ON br.sha256 = r.sha256 JOIN blobs b ON b.id = br.blob_id"
                f"{BASE_JOIN} LEFT JOIN search_docs d ON d.id = e.id"
                " LEFT JOIN search_stale s ON s.id = e.id WHERE e.kind = 'file'"
            )
            for row in files:
                entry_id, file_path, sha, doc_sha, kind, stale = row[:6]
                if stale:
                    continue
                body = db.one("SELECT body FROM search_text WHERE rowid = :id", {"id": entry_id})
                want_kind, want = index_text(content_of(unpack, row, 6, bases) or b"")
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
                for (orphan,) in db.all(f"SELECT {key} FROM {table}"):
                    if orphan not in ids:
                        problems.append(f"{table}: row {orphan} is not a file")
        return problems
