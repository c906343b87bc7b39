"""The store's algorithm, written once: every operation of :class:`memfs.store.base.Store`
over a backend's dialect and connections (:mod:`memfs.store.sql`).

Each mutation reads what its checks need first, in one go (:meth:`Cursor.ask`), decides
with :mod:`memfs.store.rules`, and then only writes; a server backend sends those writes
with the commit, so a mutation is a round trip for its reads and one for its writes (and
one more to read what to sweep, when old history is due for removal). Its change
records go in at its end, in one statement.
Each transaction begins by reading the tree's counters (the next revision and feed
numbers, and when the next sweep is due), which also takes the store's write lock, so
numbers commit in order whoever writes. Per-path history (arrivals, tombstones, revival
and the lazy sweep) lives in :mod:`memfs.store.retention`; caps, last use,
checkpoints, redaction and the byte check in :mod:`memfs.store.keeping`.

Inside :meth:`SqlStore.batch` every mutation of the thread joins the batch's
transaction as a savepoint; :meth:`SqlStore.appended` says which feed records the
thread's last mutation (or batch) appended, so a caller learns its own changes without
reading the feed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memfs.errors import (
    AlreadyExists,
    DirectoryNotEmpty,
    IsADirectory,
    NotADirectory,
    NotFound,
    ReadOnlyStore,
    Redacted,
    StoreError,
    TooLarge,
)
from memfs.paths import parse_rel
from memfs.store import deltas, keeping, retention, rules
from memfs.store.base import (
    DEFAULT_DIR_MODE,
    DEFAULT_FILE_MODE,
    Act,
    Change,
    ChangeKind,
    Checkpoint,
    Entry,
    Operation,
    Revision,
    SearchHit,
    Step,
    Store,
    Usage,
    WriteItem,
    check_series,
)
from memfs.store.foresight import Foresight, OwnReads
from memfs.store.matching import DEFAULT_LIMIT
from memfs.store.ranges import SMALL_CONTENT, RevisionReader, StoredReader, WholeReader
from memfs.store.rules import need_file, parent_of
from memfs.store.sql import Backend, Cursor, GuessMissed, Params, Pending, Row, SearchIndex
from memfs.store.statements import ALL, LOOK_FILE_NEW_NAME, Statements

_MAX_SEQ = 2**63 - 1
_T = TypeVar("_T")


class _Sliced:
    """:class:`memfs.store.sql.Slices` of one content through the dialect's ``slice``
    on the store's usual connections (a backend with no handle of its own)."""

    def __init__(self, store: SqlStore, sha256: str) -> None:
        self._store = store
        self._sha = sha256

    def read(self, offset: int, size: int) -> bytes | None:
        with self._store._reading() as db:
            return self._store.d.slice(db, self._sha, offset, size)

    def close(self) -> None:
        return None


def _reached(records: Sequence[Mapping[str, object]]) -> list[str] | None:
    """The paths a transaction's records changed, or None where a change reached paths
    it has no record of (what a directory's rename moved). A removal records every path
    it removes; a sweep only reaches paths a removal or a rename left."""
    paths: list[str] = []
    for record in records:
        if record["kind"] == "rename" and record["size"] is None:  # not a file's
            return None
        paths.append(str(record["p"]))
        if record["old"] is not None:
            paths.append(str(record["old"]))
    return paths


_NO_PARAMS: Params = {}

# What a change found at its path: kind, content hash, size, mode, symlink target.
Prior = tuple[str, str | None, int | None, int | None, str | None]


def prior_of(kind: Any, sha: Any, size: Any, mode: Any, target: Any) -> Prior:
    """A prior from the columns of an entry (and its current revision's hash)."""
    return (
        str(kind),
        None if sha is None else str(sha).removeprefix(rules.REDACTED),
        None if size is None else int(size),
        None if mode is None else int(mode),
        rules.unpack_target(target),
    )


def entry(row: Row) -> Entry:
    """An entry from the ten columns of :data:`memfs.store.statements.COLS`."""
    path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, target = row[:10]
    return Entry(
        path, kind, size, mode, mtime_ns, ctime_ns, rev, uid, gid, rules.unpack_target(target)
    )


@dataclass(frozen=True, slots=True)
class _Writing:
    """A write judged before its transaction (path, size cap, hash)."""

    rel: str
    data: bytes | bytearray
    sha: str
    mode: int | None
    mtime_ns: int | None


@dataclass(slots=True)
class _OpSpan:
    """What one transaction adds to one operation (written at its commit)."""

    act: Act
    new: bool  # the operation's first changes: its row is inserted, not updated
    first_seq: int
    last_seq: int
    changes: int
    start_ns: int
    end_ns: int


class Tx:
    """One transaction: its cursor and the tree's counters, read when first needed."""

    def __init__(self, db: Cursor, begin: Pending, missing: Callable[[], StoreError]) -> None:
        self.db = db
        self._begin: Pending | None = begin
        self._missing = missing
        self._rev = self._seq = self.start_seq = self._op = 0
        self.due: int | None = None  # earliest time a sweep has rows to remove
        self.depth = 0
        # Change records not yet written: each mutation's go in at its end, in one go.
        self.records: list[dict[str, object]] = []
        # The operations this transaction's written records belong to, by act.
        self.spans: dict[int, _OpSpan] = {}
        # Acts given their operation's number here: unnumbered again if it is undone.
        self.numbered: list[Act] = []
        self.acts: dict[int, Act] = {}  # operation number -> its act
        self.implicit: Act | None = None  # a batch's own operation, when none is acting
        # What this transaction changed in the tree's totals (files, directories, bytes),
        # stored once at its end: a row updated per entry inside a batch's savepoints
        # makes PostgreSQL walk every earlier version of it, quadratic in the batch.
        self.files = self.dirs = self.bytes = 0
        # The directories whose times this transaction set, and to what (Store.touched).
        self.touched: dict[str, int] = {}
        # The entries its mutation left at the paths it changed, known whole
        # (Store.settled); None in a batch, whose later mutations may change them again.
        self.settled: dict[str, Entry] | None = {}
        # Where the backend guesses, what this transaction may guess and what it reads
        # again before its commit for the next one (memfs.store.foresight); None when
        # it neither guesses nor foresees (a local database, a batch).
        self.foresight: Foresight | None = None
        self.guessing = False  # its counters were guessed: its other reads may be
        self.foreseen: list[tuple[str, str, Pending]] = []
        self.wrote_in: list[str] = []  # directories it wrote in or made
        # A batch's answers to its own later mutations, on a server (see OwnReads).
        self.own: OwnReads | None = None
        self.after: Pending | None = None  # the counters, read again after finish
        # The counters after finish are known without reading them: the mutation left
        # the tombstones (whose earliest due time is one of them) as they were.
        self.due_kept = False

    def expect(self, sql: str, path: str, params: Params, new_name: Row | None = None) -> Pending:
        """``sql`` (a statement about ``path``, its parameters made from it), answered
        from what is foreseen when this transaction guesses; ``new_name``: its answer
        about a name that never was, guessed where the foresight says ``path`` is one."""
        if self.own is not None:
            known = self.own.row(sql, path)
            if known is not None:
                return known
        guess = None
        if self.guessing and self.foresight is not None:
            guess = self.foresight.row(sql, path)
            if (
                guess is None
                and new_name is not None
                and self.foresight.new_name(path, parent_of(path))
            ):
                guess = new_name
        return self.db.expect(sql, params, guess)

    def foresee(self, sql: str, path: str, params: Params) -> None:
        """Read ``sql`` about ``path`` again, after this mutation's last change to
        it: before the commit, for the next transaction to guess, or in a batch, for
        its next mutation there (where the backend guesses)."""
        if self.foresight is not None:
            self.foreseen.append((sql, path, self.db.ask(sql, params)))
        elif self.own is not None and self.own.again(path):
            self.own.keep(path, sql, self.db.ask(sql, params))

    def settle(self, entry: Entry) -> None:
        if self.settled is not None:
            self.settled[entry.path] = entry

    def touch(self, sql: str, now: int, **dirs: str) -> None:
        """Set ``dirs``' modification and change times to ``now`` (one statement, its
        directories given by their parameter names)."""
        self.db.run(sql, {"now": now, **dirs})
        self.touched.update(dict.fromkeys(dirs.values(), now))

    def _load(self) -> None:
        if self._begin is None:
            return
        row, self._begin = self._begin.one(), None
        if row is None:
            raise self._missing()
        self._rev, self._seq = int(row[0] or 0), int(row[1] or 0)
        self.start_seq = self._seq
        self.due = None if row[2] is None else int(row[2])
        self._op = int(row[3] or 0)

    def number(self, act: Act) -> int:
        """The operation number of ``act``, taken now if it has none."""
        if act.id is None:
            self._load()
            self._op += 1
            act.id = self._op
            self.numbered.append(act)
        self.acts[act.id] = act
        return act.id

    def count(self, records: Sequence[Mapping[str, object]]) -> None:
        """Add records about to be written to their operations' spans."""
        for record in records:
            op, seq, now = record["op"], record["seq"], record["now"]
            assert isinstance(op, int) and isinstance(seq, int) and isinstance(now, int)
            span = self.spans.get(op)
            if span is None:
                act = self.acts[op]
                new = any(a is act for a in self.numbered)
                span = self.spans[op] = _OpSpan(act, new, seq, seq, 0, now, now)
            span.last_seq, span.end_ns = seq, max(span.end_ns, now)
            span.changes += 1

    @property
    def rev(self) -> int:
        self._load()
        return self._rev

    @property
    def seq(self) -> int:
        self._load()
        return self._seq

    @property
    def op(self) -> int:
        self._load()
        return self._op

    def next_rev(self) -> int:
        self._load()
        self._rev += 1
        return self._rev

    def next_seq(self) -> int:
        self._load()
        self._seq += 1
        return self._seq

    def mark(self) -> tuple[int, ...]:
        return self.rev, self.seq, self._op, len(self.numbered), self.files, self.dirs, self.bytes

    def restore(self, mark: tuple[int, ...]) -> None:
        self._rev, self._seq, self._op, numbered, self.files, self.dirs, self.bytes = mark
        for act in self.numbered[numbered:]:
            act.id = None
        del self.numbered[numbered:]

    def grow(self, kind: object, size: object = 0, sign: int = 1) -> None:
        """Count an entry of ``kind`` (and a file's ``size`` bytes) in the totals, or
        out of them with ``sign`` -1."""
        if kind == "file":
            self.files += sign
            self.bytes += sign * int(str(size))
        elif kind == "dir":
            self.dirs += sign

    def totals(self) -> Usage:
        return Usage(files=self.files, dirs=self.dirs, bytes=self.bytes)

    def unnumber(self) -> None:
        """The transaction was undone: no operation it numbered exists."""
        for act in self.numbered:
            act.id = None
        self.numbered.clear()

    def moved(self) -> bool:
        """Whether this transaction took any number (so the counters must be stored)."""
        return self._begin is None and self._seq != self.start_seq

    def appended(self) -> range:
        return range(self.start_seq + 1, self._seq + 1) if self._begin is None else range(0)

    def sweep_due(self, now: int) -> bool:
        self._load()
        return self.due is not None and self.due <= now


def _plus(row: Row, mine: Usage) -> tuple[int, int, int]:
    """The stored totals row (files, dirs, bytes) with a transaction's own changes."""
    return (int(row[0]) + mine.files, int(row[1]) + mine.dirs, int(row[2]) + mine.bytes)


class _WithTotals:
    """The tree's totals as stored, plus a transaction's own changes to them."""

    def __init__(self, stored: Pending, mine: Usage) -> None:
        self.stored, self.mine = stored, mine

    def one(self) -> Row | None:
        row = self.stored.one()
        return None if row is None else _plus(row, self.mine)

    def all(self) -> list[Row]:
        row = self.one()
        return [] if row is None else [row]


def change_of(row: Row) -> Change:
    """A change record from the columns of :data:`memfs.store.statements.CHANGE_COLS`."""
    fields = list(row)
    fields[11] = rules.unpack_target(fields[11])
    fields[16] = rules.unpack_target(fields[16])
    return Change(*fields)


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _reach(src: str, paths: list[str]) -> tuple[int, int]:
    """How far the entries below ``src`` reach past it (segments, UTF-8 bytes), as
    :meth:`memfs.store.base.Store.subtree_extent` says, from their paths."""
    own_depth, own_bytes = src.count("/"), len(src.encode("utf-8", "surrogateescape"))
    below = [p for p in paths if p != src]
    if not below:
        return 0, 0
    depth = max(p.count("/") for p in below) - own_depth
    return depth, max(len(p.encode("utf-8", "surrogateescape")) for p in below) - own_bytes


# Files indexed per maintain() call (about one a second, on the daemon's follower
# thread, which waits for it): bounded so that thread's feed reads are not held up.
MAINTAIN_INDEX_BATCH = 100


class SqlStore(Store):
    """A memory tree in an SQL database; the backend supplies dialect and connections."""

    def __init__(self, backend: Backend, index: SearchIndex | None = None) -> None:
        self.backend = backend
        self.limits = backend.limits
        self.url = backend.url
        self.max_file_bytes = backend.limits.max_file_bytes
        self.max_tree_bytes = backend.limits.max_tree_bytes
        self.max_files = backend.limits.max_files
        self.readonly = backend.limits.readonly
        self.pushes_changes = backend.pushes_changes
        self.d = backend.dialect
        self.q = Statements(backend.dialect)
        self.index = index
        # Set by defer_maintenance: new content waits in search_stale for maintain().
        self._index_later = False
        # Every time the store records or judges (revision times, history retention)
        # comes from here, so tests can move it instead of waiting days.
        self.clock: Callable[[], int] = time.time_ns
        self._local = threading.local()
        self._batch_time = rules.BatchTime()
        self._foresight = Foresight() if backend.guesses else None
        # Contents lately used as bases (memfs.store.deltas), and the base each content
        # met lately continues (None: stored whole), so an appender's next revision
        # finds its base without a query.
        self._bases = deltas.Bases()
        self._continues: dict[str, str | None] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # --- transactions -------------------------------------------------------------------
    def _tx_now(self) -> Tx | None:
        tx: Tx | None = getattr(self._local, "tx", None)
        return tx

    @contextmanager
    def _reading(self, snapshot: bool = False) -> Iterator[Cursor]:
        """A cursor for reads: this thread's transaction's (a batch sees its own
        changes), else one of the backend's."""
        tx = self._tx_now()
        if tx is not None:
            yield tx.db
            return
        with self.backend.reading(snapshot) as db:
            yield db

    def _one(self, sql: str, params: Params = _NO_PARAMS) -> Row | None:
        """One read statement: in this thread's transaction if it has one."""
        tx: Tx | None = getattr(self._local, "tx", None)
        return self.backend.one(sql, params) if tx is None else tx.db.one(sql, params)

    def _all(self, sql: str, params: Params = _NO_PARAMS) -> list[Row]:
        tx: Tx | None = getattr(self._local, "tx", None)
        return self.backend.all(sql, params) if tx is None else tx.db.all(sql, params)

    def _writable(self) -> None:
        if self.readonly:
            raise ReadOnlyStore(
                f"the store {self.url} is open read-only; open it without readonly to change it"
            )

    def _mutate(self, body: Callable[[Tx], _T]) -> _T:
        """Run ``body`` as one mutation; where the backend guesses, first with what
        this store foresees (one round trip when it holds), then, if a guess missed,
        again reading first."""
        if self._foresight is not None and self._tx_now() is None:
            try:
                with self._tx(guess=True) as tx:
                    return body(tx)
            except GuessMissed:
                self._foresight.missed()
            except StoreError:
                # Refused on what was guessed, before the server said whether the guess
                # held: only what is read may refuse a mutation.
                pass
        with self._tx() as tx:
            return body(tx)

    @contextmanager
    def _tx(self, *, guess: bool = False, batch: bool = False) -> Iterator[Tx]:
        """One mutation: its own transaction, or a savepoint of this thread's batch.
        ``guess``: a lone transaction guesses what it can (see _mutate); ``batch``: the
        transaction of a batch, whose mutations join it."""
        self._writable()
        self._local.appended = range(0)
        self._local.touched = {}
        self._local.settled = {}
        outer = self._tx_now()
        if outer is not None:
            outer.settled = None
            depth, mark, kept = outer.depth, outer.mark(), len(outer.records)
            stamp = 0 if outer.own is None else outer.own.begin()
            outer.db.run(self.q.savepoint.format(depth))
            outer.depth = depth + 1
            try:
                yield outer
                reached = None  # a mutation that recorded nothing may have changed anything
                if len(outer.records) > kept:
                    reached = _reached(outer.records[kept:])
                    # Written now, so later reads inside the batch see them.
                    outer.count(outer.records[kept:])
                    self.d.append(outer.db, outer.records[kept:])
                    del outer.records[kept:]
                outer.db.run(self.q.release.format(depth))
                outer.db.sync()
                if outer.own is not None:
                    outer.own.done(stamp, reached)
            except BaseException:
                if outer.own is not None:
                    outer.own.undone(stamp)
                outer.restore(mark)
                del outer.records[kept:]
                with contextlib.suppress(StoreError):
                    outer.db.run(self.q.rollback_to.format(depth))
                    outer.db.run(self.q.release.format(depth))
                    outer.db.sync()
                raise
            finally:
                outer.depth = depth
            self._local.appended = range(mark[1] + 1, outer.seq + 1)
            return
        tx: Tx | None = None
        foresight = None if batch else self._foresight
        counters = None if foresight is None or not guess else foresight.claim()
        try:
            with self.backend.writing() as db:
                begin = db.expect(self.q.begin, _NO_PARAMS, counters)
                tx = Tx(db, begin, self.backend.missing_tree)
                tx.foresight, tx.guessing = foresight, counters is not None
                if batch and self.backend.guesses:
                    tx.own = OwnReads()
                self._local.tx = tx
                try:
                    yield tx
                    if tx.moved():
                        tx.count(tx.records)
                        self.d.finish(
                            db,
                            tx.rev,
                            tx.seq,
                            tx.op,
                            tx.records,
                            tx.totals(),
                            self._operation_rows(tx),
                        )
                    if tx.foreseen and not tx.due_kept:
                        tx.after = db.ask(self.q.begin)
                finally:
                    self._local.tx = None
        except BaseException:
            if tx is not None:
                tx.unnumber()
            raise
        self._foresee(tx, batch)
        self._local.appended = tx.appended()
        self._local.touched = tx.touched
        self._local.settled = tx.settled or {}

    def _foresee(self, tx: Tx, batch: bool) -> None:
        """After a commit: what it made stale in this store's foresight, and what it
        read for it just before (the rows were sent with the commit: no round trip)."""
        if self._foresight is None or not tx.moved():
            return
        if tx.guessing:
            self._foresight.hit()
        changed = None if batch else _reached(tx.records)
        rows: list[tuple[str, str, Row]] = []
        for sql, path, pending in tx.foreseen:
            row = pending.one()
            if row is not None:
                rows.append((sql, path, row))
        counters = None if tx.after is None else tx.after.one()
        if tx.due_kept and tx.foreseen:
            counters = (tx.rev, tx.seq, tx.due, tx.op)  # as the dialect's begin reads them
        # A batch's later mutations may have removed what its earlier ones wrote in.
        dirs = () if batch else tx.wrote_in
        self._foresight.committed(tx.seq, changed, counters, rows, dirs)

    def _operation_rows(self, tx: Tx) -> list[tuple[str, Params]]:
        """The statements writing the operation rows of what this transaction recorded
        (invariant 12), for the dialect's finish."""
        rows: list[tuple[str, Params]] = []
        for op, span in tx.spans.items():
            act = span.act
            if span.new:
                rows.append((self.q.add_operation, {
                    "id": op, "actor": act.actor, "detail": act.detail,
                    "label": act.label, "start": span.start_ns, "end": span.end_ns,
                    "first": span.first_seq, "last": span.last_seq, "n": span.changes,
                    "command": act.command,
                }))  # fmt: skip
            else:
                rows.append((self.q.grow_operation, {
                    "id": op, "end": span.end_ns, "last": span.last_seq, "n": span.changes,
                }))  # fmt: skip
        return rows

    @contextmanager
    def acting(self, act: Act) -> Iterator[None]:
        """Every mutation this thread makes inside belongs to ``act``'s operation (see
        :meth:`memfs.store.base.Store.acting`)."""
        outer: Act | None = getattr(self._local, "act", None)
        self._local.act = act
        try:
            yield
        finally:
            self._local.act = outer

    def _act(self, tx: Tx, author: str) -> Act:
        """The act a mutation's record belongs to: the thread's, else the transaction's
        own (one operation for a batch, or for a lone mutation)."""
        act: Act | None = getattr(self._local, "act", None)
        if act is not None:
            return act
        if tx.implicit is None:
            tx.implicit = Act(author)
        return tx.implicit

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self._batch_time.during(self.clock), self._tx(batch=True):
            yield

    def appended(self) -> range:
        found: range = getattr(self._local, "appended", range(0))
        return found

    def touched(self) -> Mapping[str, int]:
        found: dict[str, int] = getattr(self._local, "touched", {})
        return found

    def settled(self) -> Mapping[str, Entry]:
        found: dict[str, Entry] = getattr(self._local, "settled", {})
        return found

    def _now(self) -> int:
        """The time a mutation records: its batch's (see Store.batch), else the clock's."""
        return self._batch_time.now(self.clock)

    def record(
        self,
        tx: Tx,
        kind: ChangeKind,
        path: str,
        author: str,
        now: int,
        *,
        old_path: str | None = None,
        rev: int | None = None,
        size: int | None = None,
        sha256: str | None = None,
        mode: int | None = None,
        target: str | None = None,
        prior: Prior | None = None,
        act: Act | None = None,
    ) -> None:
        """Append one change record (written at the end of the mutation), in the
        operation it belongs to (``act``'s, else the thread's or the transaction's
        own), with what it found at its path (``prior``). Its
        content's hash stays in the feed when the revision is pruned, so a restore can
        still find the bytes elsewhere."""
        pkind, psha, psize, pmode, ptarget = prior or (None, None, None, None, None)
        tx.records.append(
            {
                "seq": tx.next_seq(),
                "kind": kind,
                "p": path,
                "old": old_path,
                "author": author,
                "now": now,
                "rev": rev,
                "size": size,
                "sha": sha256,
                "op": tx.number(act or self._act(tx, author)),
                "mode": mode,
                # Packed as the entry's own (a target may hold undecodable bytes).
                "target": None if target is None else rules.pack_target(target),
                "pkind": pkind,
                "psha": psha,
                "psize": psize,
                "pmode": pmode,
                "ptarget": None if ptarget is None else rules.pack_target(ptarget),
            }
        )

    # --- reading ------------------------------------------------------------------------
    def stat(self, path: str) -> Entry:
        row = self._one(self.q.stat, {"p": path})
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        return entry(row)

    def listdir(self, path: str) -> list[Entry]:
        rows = self._all(self.q.listdir, {"p": path})
        # No children: say whether the directory is empty, missing or not one.
        if not rows and not self.stat(path).is_dir:
            raise NotADirectory(f"'{path}' is not a directory", path=path)
        return [entry(row) for row in rows]

    def walk(self, path: str = "") -> Iterator[Entry]:
        if not self.stat(path).is_dir:
            raise NotADirectory(f"'{path}' is not a directory", path=path)
        rows = (
            self._all(self.q.walk_all) if path == "" else self._all(self.q.walk_below, {"p": path})
        )
        # Sorted by path in byte order, every entry comes after its parent.
        for row in rows:
            yield entry(row)

    def subtree_extent(self, path: str) -> tuple[int, int]:
        if path == "":
            return self._extent(self._one(self.q.extent_all), path)
        return self._extent(self._one(self.q.extent_below, {"p": path}), path)

    @staticmethod
    def _extent(row: Row | None, path: str) -> tuple[int, int]:
        if row is None or row[0] is None:
            return 0, 0
        # A descendant "a/b/c" of "a" adds the segments and the bytes after "a".
        if path == "":
            return int(row[0]) + 1, int(row[1]) + 1
        own = len(path.encode("utf-8", "surrogateescape"))
        return int(row[0]) - path.count("/"), int(row[1]) - own

    def read(self, path: str) -> tuple[bytes, Entry]:
        row = self._one(self.q.read, {"p": path})
        if row is None:
            raise NotFound(f"no entry at '{path}'", path=path)
        found = entry(row)
        need_file(found.path, found.kind)
        return self.content(found.path, found.rev, row[10], row, 11), found

    def content(self, path: str, rev: int, sha256: str | None, row: Row, at: int) -> bytes:
        """The content of revision ``rev`` of ``path`` from its stored bytes, the
        :attr:`memfs.store.sql.Dialect.stored` columns of ``row`` from ``at``, checked
        against its SHA-256 (Damaged if they no longer match, cannot be unpacked or are
        missing)."""
        data = deltas.content_of(self.d.unpack, row, at, self._bases)
        if sha256 is None or data is None or hashlib.sha256(data).hexdigest() != sha256:
            raise rules.damaged(path, rev, sha256 or "")
        self._note_base(sha256, row[at + 2])
        return data

    def _note_base(self, sha256: str, base: object) -> None:
        if len(self._continues) >= 4096:
            self._continues.clear()
        self._continues[sha256] = None if base is None else str(base)

    # --- history ------------------------------------------------------------------------
    def history(self, path: str, limit: int | None = None) -> list[Revision]:
        shown = retention.visible(self, path, self._all(self.q.history, {"p": path}))
        if limit is not None:
            shown = shown[:limit]
        return [retention.revision(path, row[3:10]) for row in shown]

    def read_revision(self, path: str, rev: int) -> bytes:
        rows = self._all(self.q.history_content, {"p": path, "rev": rev})
        found = next((row for row in retention.visible(self, path, rows) if row[3] == rev), None)
        if found is None:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        if found[8] is not None:
            raise Redacted(
                f"revision {rev} of '{path}' was redacted by {found[8]}",
                path=path,
                by=str(found[8]),
                time_ns=int(found[9] or 0),
            )
        return self.content(path, rev, found[7], found, 10)

    def open_revision(self, path: str, rev: int) -> RevisionReader:
        rows = self._all(self.q.history, {"p": path})
        found = next((row for row in retention.visible(self, path, rows) if row[3] == rev), None)
        if found is None:
            raise NotFound(f"revision {rev} of '{path}' is not retained", path=path)
        if found[8] is not None:
            raise Redacted(
                f"revision {rev} of '{path}' was redacted by {found[8]}",
                path=path,
                by=str(found[8]),
                time_ns=int(found[9] or 0),
            )
        sha, size = str(found[7]), int(found[6])
        extent = self._one(self.q.blob_extent, {"sha": sha})
        if extent is None:
            raise rules.damaged(path, rev, sha)  # no bytes at all: as content() says
        if not extent[2] or size <= SMALL_CONTENT:
            return WholeReader(path, rev, self.read_revision(path, rev))

        slices = self.backend.open_slices(sha) or _Sliced(self, sha)
        try:
            return StoredReader(
                path, rev, size, sha, fetch=slices.read, close=slices.close,
                packed=bool(extent[0]), stored=int(extent[1] or 0),
            )  # fmt: skip
        except BaseException:
            slices.close()
            raise

    def read_blob(self, sha256: str) -> bytes:
        with self._reading() as db:
            row = db.one(self.q.blob, {"sha": sha256})
            holder = None
            if row is not None:
                data = deltas.content_of(self.d.unpack, row, 0, self._bases)
                if data is not None and rules.sha256_of(data) == sha256:
                    return data
                holder = db.one(self.q.holder, {"sha": sha256})
        if row is None:
            raise NotFound(f"no retained revision has the content {sha256[:12]}")
        path, rev = ("", 0) if holder is None else (str(holder[0]), int(holder[1]))
        raise rules.damaged(path, rev, sha256)

    # --- the change feed -------------------------------------------------------------------
    def changes(
        self,
        since: int = 0,
        limit: int | None = None,
        *,
        until: int | None = None,
        newest_first: bool = False,
        op: int | None = None,
    ) -> list[Change]:
        if op is not None:
            rows = self._all(self.q.changes_of, {"op": op, "n": ALL if limit is None else limit})
            return [change_of(row) for row in rows]
        params = {
            "since": since,
            "until": _MAX_SEQ if until is None else until,
            "n": ALL if limit is None else limit,
        }
        rows = self._all(self.q.changes_back if newest_first else self.q.changes, params)
        return [change_of(row) for row in rows]

    # --- the operation log ---------------------------------------------------------------
    def operations(
        self,
        *,
        before: int | None = None,
        limit: int | None = 20,
        actor: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        path: str | None = None,
    ) -> list[Operation]:
        params = {
            "before": _MAX_SEQ if before is None else before,
            "since": 0 if since_ns is None else since_ns,
            "until": _MAX_SEQ if until_ns is None else until_ns,
            "actor": actor,
            "p": path,
            "n": ALL if limit is None else limit,
        }
        return [Operation(*row) for row in self._all(self.q.operations, params)]

    def operation(self, op_id: int) -> Operation:
        row = self._one(self.q.operation, {"id": op_id})
        if row is None:
            raise NotFound(f"there is no operation {op_id}")
        return Operation(*row)

    def commands_since(self, path: str, rev: int) -> set[str]:
        return {str(row[0]) for row in self._all(self.q.commands_since, {"p": path, "rev": rev})}

    def last_seq(self) -> int:
        row = self._one(self.q.last_seq)
        return 0 if row is None else int(row[0])

    def wait_for_changes(self, since: int, timeout: float) -> bool:
        return self.backend.wait_for_changes(since, timeout, self.last_seq)

    def pushed_upto(self) -> int:
        return self.backend.pushed_upto()

    def interrupt_waits(self) -> None:
        self.backend.interrupt_waits()

    # --- writing ------------------------------------------------------------------------
    def _ask_usage(self, tx: Tx) -> Pending | None:
        """The tree's totals, asked only when a cap needs them (with what this
        transaction changed in them so far)."""
        if self.limits.max_tree_bytes is None and self.limits.max_files is None:
            return None
        return _WithTotals(tx.db.ask(self.q.usage), tx.totals())

    def _ensure_parent(
        self, tx: Tx, path: str, parent_kind: str | None, author: str, now: int, parents: bool
    ) -> None:
        """Refuse a missing parent or one that is not a directory (``parent_kind``, as
        the mutation read it), or make the missing ones with ``parents``."""
        parent = parent_of(path)
        if parent_kind == "dir":
            return
        if parent_kind is not None:
            raise NotADirectory(f"'{parent}' is not a directory", path=parent)
        if not parents:
            raise NotFound(f"the parent directory '{parent}' does not exist", path=parent)
        missing = [parent]
        while parent != "":
            parent = parent_of(parent)
            row = tx.db.one(self.q.kind, {"p": parent})
            if row is not None:
                if row[0] != "dir":
                    raise NotADirectory(f"'{parent}' is not a directory", path=parent)
                break
            missing.append(parent)
        for directory in reversed(missing):
            self._insert_dir(tx, directory, author, now, DEFAULT_DIR_MODE)

    def _insert(
        self,
        tx: Tx,
        path: str,
        kind: str,
        size: int,
        mode: int,
        now: int,
        target: str | None,
        *,
        mtime: int | None = None,
        touch: bool = True,
    ) -> int:
        """Add the entry (and move its parent's mtime unless ``touch`` is False: already
        moved to ``now`` in this transaction); its creating revision. ``mtime``: the
        modification time it keeps (None: ``now``)."""
        rev = tx.next_rev()
        tx.db.run(
            self.q.insert_entry,
            {
                "p": path,
                "parent": parent_of(path),
                "kind": kind,
                "size": size,
                "mode": mode,
                "now": now,
                "mtime": now if mtime is None else mtime,
                "rev": rev,
                "target": target,
            },
        )
        if touch:
            tx.touch(self.q.touch, now, p=parent_of(path))
        tx.grow(kind, size)
        return rev

    def _insert_dir(self, tx: Tx, path: str, author: str, now: int, mode: int) -> Entry:
        rev = self._insert(tx, path, "dir", 0, mode & 0o7777, now, None)
        self.record(tx, "mkdir", path, author, now, rev=rev, mode=mode & 0o7777)
        made = Entry(path, "dir", 0, mode & 0o7777, now, now, rev)
        tx.settle(made)
        tx.wrote_in.append(path)
        return made

    def write(
        self,
        path: str,
        data: bytes | bytearray,
        *,
        author: str,
        expected_rev: int | None = None,
        mode: int | None = None,
        parents: bool = False,
        replace: bool = False,
        mtime_ns: int | None = None,
        sha256: str | None = None,
    ) -> Entry:
        item = self._writing(path, data, mode, mtime_ns, sha256)
        now = self._now()

        def write(tx: Tx) -> Entry:
            return self._write_in(
                tx, item, author, now, expected_rev=expected_rev, parents=parents, replace=replace
            )

        return self._mutate(write)

    def write_many(self, items: Iterable[WriteItem], *, author: str) -> list[Entry]:
        # One savepoint (or transaction) for them all, and their change records written
        # in one statement: the per-mutation round trips are what a bulk import pays.
        checked = [self._writing(i.path, i.data, i.mode, i.mtime_ns) for i in items]
        if not checked:
            return []
        now = self._now()
        touched: set[str] = set()
        with self._tx() as tx:
            return [
                self._write_in(tx, item, author, now, touched=touched, index=False)
                for item in checked
            ]

    def write_series(
        self,
        path: str,
        data: bytes | bytearray,
        steps: Sequence[Step],
        *,
        expected_rev: int,
        mtime_ns: int | None = None,
    ) -> Entry:
        # One mutation: its revisions' rows go in by one statement each kind, and only
        # the last sets the entry, where a write each cost a queue of turns about ten
        # statements a revision (a server's round trips and its locked time).
        check_series(data, steps)
        item = self._writing(path, data, None, mtime_ns, steps[-1].sha256)
        now = self._now()
        return self._mutate(lambda tx: self._series_in(tx, item, steps, expected_rev, now))

    def _series_in(
        self, tx: Tx, item: _Writing, steps: Sequence[Step], expected_rev: int, now: int
    ) -> Entry:
        rel, data = item.rel, item.data
        looking = {"p": rel, "parent": parent_of(rel)}
        look = tx.expect(self.q.look_file, rel, looking)
        usage = self._ask_usage(tx)
        row = look.one()
        assert row is not None  # one row whatever is there
        kind, current, old_size, old_mode, uid, gid, _, _, _, kept, cur = row
        if kind != "file" or int(current) != expected_rev:
            raise rules.conflict(rel, expected_rev, None if current is None else int(current))
        keeping.check_caps(self, usage, rel, len(data) - int(old_size), 0)
        rows: list[dict[str, object]] = []
        prior, prior_size, rev = cur, int(old_size), int(current)
        held = None  # the base the last step continued, held whole
        for step in steps:
            rev = tx.next_rev()
            held = self._put_content(tx, rel, step.sha256, data, prior, end=step.end, held=held)
            rows.append({
                "p": rel, "rev": rev, "author": step.author, "now": now, "size": step.end,
                "sha": step.sha256,
            })  # fmt: skip
            self.record(
                tx, "modify", rel, step.author, now, rev=rev, size=step.end,
                sha256=step.sha256, mode=int(old_mode),
                prior=prior_of("file", prior, prior_size, old_mode, None), act=step.act,
            )  # fmt: skip
            prior, prior_size = step.sha256, step.end
        tx.db.run(self.q.update_content, {"size": len(data), "now": now, "rev": rev, "p": rel})
        tx.bytes += len(data) - int(old_size)
        if item.mtime_ns is not None:
            tx.db.run(self.q.set_mtime, {"mtime": item.mtime_ns, "p": rel})
        retention.add_rows(self, tx, rows, None if kept is None else int(kept))
        if self.index is not None and not self._index_later:
            self.index.take(tx.db, rel, item.sha, data)
        tx.due_kept = not tx.sweep_due(now)
        retention.sweep(self, tx, now)
        mtime = now if item.mtime_ns is None else item.mtime_ns
        made = Entry(rel, "file", len(data), int(old_mode), mtime, now, rev, uid, gid)
        tx.settle(made)
        tx.foresee(self.q.look_file, rel, looking)
        tx.wrote_in.append(parent_of(rel))
        return made

    def _writing(
        self,
        path: str,
        data: bytes | bytearray,
        mode: int | None,
        mtime_ns: int | None,
        sha256: str | None = None,
    ) -> _Writing:
        """A write's arguments, judged before any transaction: its path, its size
        against the cap, its hash."""
        rel = rules.target(path)
        if not isinstance(data, (bytes, bytearray)):
            data = bytes(data)  # a bytearray is taken as it is: no copy of a large file
        rules.check_size(rel, len(data), self.limits.max_file_bytes)
        sha = rules.sha256_of(data) if sha256 is None else sha256
        return _Writing(rel, data, sha, mode, mtime_ns)

    def _write_in(
        self,
        tx: Tx,
        item: _Writing,
        author: str,
        now: int,
        *,
        expected_rev: int | None = None,
        parents: bool = False,
        replace: bool = False,
        touched: set[str] | None = None,
        index: bool = True,
    ) -> Entry:
        """One write inside ``tx``. ``touched``: the directories whose times this call
        has already moved to ``now`` (write_many's: each is moved once). ``index``:
        False leaves the content to the search index's next build (see write_many)."""
        rel, data, sha, mode = item.rel, item.data, item.sha, item.mode
        looking = {"p": rel, "parent": parent_of(rel)}
        # Only a create-only write guesses a new name: a plain write to a name this
        # store has not written is more often a file someone else made.
        new_name = LOOK_FILE_NEW_NAME if expected_rev == 0 else None
        look = tx.expect(self.q.look_file, rel, looking, new_name)
        usage = self._ask_usage(tx)
        row = look.one()
        assert row is not None  # one row whatever is there
        kind, current, old_size, old_mode, uid, gid, parent_kind, deleted, trim, kept, cur = row
        prior: Prior | None = None
        if kind is None:
            if expected_rev is not None and expected_rev != 0:
                raise rules.conflict(rel, expected_rev, None)
            keeping.check_caps(self, usage, rel, len(data), 1)
            self._ensure_parent(tx, rel, parent_kind, author, now, parents)
            if deleted is not None:
                retention.revive(self, tx, rel, int(deleted), trim, now)
            file_mode = DEFAULT_FILE_MODE if mode is None else mode & 0o7777
            parent = parent_of(rel)
            touch = touched is None or parent not in touched
            rev = self._insert(
                tx, rel, "file", len(data), file_mode, now, None, mtime=item.mtime_ns, touch=touch
            )
            if touched is not None:
                touched.add(parent)
            made = Entry(rel, "file", len(data), file_mode, now, now, rev)
            change: ChangeKind = "create"
            new_mode = file_mode
        else:
            if expected_rev == 0:
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            if kind == "dir":
                raise IsADirectory(f"'{rel}' is a directory", path=rel)
            if kind == "symlink":
                raise AlreadyExists(
                    f"'{rel}' is a symlink; memfs does not write through symlinks", path=rel
                )
            if expected_rev is not None and expected_rev != current:
                raise rules.conflict(rel, expected_rev, int(current))
            keeping.check_caps(self, usage, rel, len(data) - int(old_size), 0)
            rev = tx.next_rev()
            tx.db.run(self.q.update_content, {"size": len(data), "now": now, "rev": rev, "p": rel})
            tx.bytes += len(data) - int(old_size)
            if replace:
                tx.touch(self.q.touch, now, p=parent_of(rel))
            made = Entry(rel, "file", len(data), old_mode, now, now, rev, uid, gid)
            change = "modify"
            new_mode = int(old_mode)
            prior = prior_of("file", cur, old_size, old_mode, None)
        if item.mtime_ns is not None and kind is not None:
            # The time the content says it has (an archive's), set with the content:
            # one change, not a write and then an attribute change.
            tx.db.run(self.q.set_mtime, {"mtime": item.mtime_ns, "p": rel})
        if item.mtime_ns is not None:
            made = dataclasses.replace(made, mtime_ns=item.mtime_ns)
        self._add_content(tx, rel, rev, data, sha, author, now, int(kept), index=index, prior=cur)
        self.record(
            tx, change, rel, author, now, rev=rev, size=len(data), sha256=sha,
            mode=new_mode, prior=prior,
        )  # fmt: skip
        # Neither a revival nor a sweep moved a tombstone: the next counters are known.
        tx.due_kept = deleted is None and not tx.sweep_due(now)
        retention.sweep(self, tx, now)
        tx.settle(made)
        tx.foresee(self.q.look_file, rel, looking)
        tx.wrote_in.append(parent_of(rel))
        return made

    def _add_content(
        self,
        tx: Tx,
        path: str,
        rev: int,
        data: bytes | bytearray,
        sha: str,
        author: str,
        now: int,
        kept: int | None,
        *,
        index: bool = True,
        prior: str | None = None,
    ) -> None:
        """Revision ``rev`` of ``path`` holding ``data`` (stored once per SHA-256), and
        the index's copy of it (``index`` False: the revision leaves the file stale in
        the index, and its next build takes it in). ``prior``: the SHA-256 of the
        content it replaces, whose base it may continue (memfs.store.deltas)."""
        self._put_content(tx, path, sha, data, prior)
        retention.add_row(self, tx, path, rev, author, now, len(data), sha, kept)
        if index and self.index is not None and not self._index_later:
            self.index.take(tx.db, path, sha, data)

    def _put_content(
        self,
        tx: Tx,
        path: str,
        sha: str,
        data: bytes | bytearray,
        prior: str | None,
        *,
        end: int | None = None,
        held: str | None = None,
    ) -> str | None:
        """Store ``data`` (up to ``end``), the next content of ``path``: as what it adds
        to the base of ``prior`` where it may be (memfs.store.deltas), else whole, and
        then a base for the next. ``held``: a base this transaction found held whole
        (for this path's revision before). Returns the base the content continues,
        now held whole by it, or None (stored whole)."""
        db = tx.db
        size = len(data) if end is None else end
        if prior is not None and prior != sha and deltas.MIN_BASE < size <= deltas.MAX_CONTENT:
            base = self._base_for(db, prior)
            if base is not None:
                tail = deltas.tail_of(data, base[1], size)
                # A base the server found whole and held for this path's last revision
                # in this transaction still is (that revision holds it).
                sure = base[0] == held or (tx.own is not None and tx.own.base(path) == base[0])
                if tail is not None and self.d.put_delta(db, sha, base[0], tail, sure=sure):
                    self._note_base(sha, base[0])
                    if tx.own is not None:
                        tx.own.keep_base(path, base[0])
                    return base[0]
        if size < len(data):
            data = data[:size]
        self.d.put_blob(db, sha, data)
        if deltas.MIN_BASE <= len(data) <= deltas.MAX_CONTENT:
            self._bases.put(sha, bytes(data))  # its hash was taken from these bytes
            self._note_base(sha, None)
        return None

    def _base_for(self, db: Cursor, prior: str) -> tuple[str, bytes] | None:
        """The base a content replacing ``prior`` would continue (``prior``'s own, or
        ``prior`` itself when it is whole), with its bytes; None if it has none."""
        if prior in self._continues:
            base = self._continues[prior] or prior
        else:
            row = db.one(self.q.blob_base, {"sha": prior})
            if row is None:
                return None
            base = str(row[0] or prior)
        head = self._bases.get(base)
        if head is None:
            row = db.one(self.q.blob, {"sha": base})
            if row is None or row[2] is not None:
                return None  # gone, or not whole: a base never continues another
            head = deltas.content_of(self.d.unpack, row, 0, self._bases)
            if head is None or rules.sha256_of(head) != base:
                return None
            self._bases.put(base, head)
        return base, head

    def mkdir(
        self,
        path: str,
        *,
        author: str,
        mode: int = DEFAULT_DIR_MODE,
        parents: bool = False,
        exist_ok: bool = False,
    ) -> Entry:
        rel = parse_rel(path).rel
        now = self._now()
        with self._tx() as tx:
            row = tx.db.one(self.q.look_node, {"p": rel, "parent": parent_of(rel)})
            assert row is not None
            if row[0] is not None:
                if exist_ok and row[1] == "dir":
                    return entry(row)
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(tx, rel, row[10], author, now, parents)
            return self._insert_dir(tx, rel, author, now, mode)

    def symlink(self, path: str, target: str, *, author: str) -> Entry:
        rel = rules.target(path)
        size = rules.target_size(rel, target)
        now = self._now()
        with self._tx() as tx:
            row = tx.db.one(self.q.look_node, {"p": rel, "parent": parent_of(rel)})
            assert row is not None
            if row[0] is not None:
                raise AlreadyExists(f"'{rel}' already exists", path=rel)
            self._ensure_parent(tx, rel, row[10], author, now, False)
            rev = self._insert(tx, rel, "symlink", size, 0o777, now, rules.pack_target(target))
            self.record(tx, "symlink", rel, author, now, rev=rev, mode=0o777, target=target)
            return Entry(rel, "symlink", size, 0o777, now, now, rev, target=target)

    def delete(
        self,
        path: str,
        *,
        author: str,
        recursive: bool = False,
        expected_rev: int | None = None,
    ) -> None:
        rel = rules.target(path, what="target")
        if expected_rev is not None and expected_rev < 1:
            raise ValueError(f"expected_rev must be a revision (>= 1), not {expected_rev}")
        now = self._now()
        with self._tx() as tx:
            # Children before their directory: rel itself sorts last.
            victims = tx.db.all(self.q.subtree, {"p": rel})
            if not victims or victims[-1][0] != rel:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            if expected_rev is not None and victims[-1][2] != expected_rev:
                raise rules.conflict(rel, expected_rev, int(victims[-1][2]))
            if len(victims) > 1 and not recursive:
                raise DirectoryNotEmpty(f"the directory '{rel}' is not empty", path=rel)
            self._remove(tx, rel, victims, author, now)
            tx.touch(self.q.touch, now, p=parent_of(rel))
            retention.sweep(self, tx, now)

    def _remove(self, tx: Tx, top: str, victims: list[Row], author: str, now: int) -> None:
        # One record per removed entry, children before their directory, so a follower
        # of the feed learns every path that disappeared without walking anything, and
        # what was there, so the operation can be taken back whole.
        for victim, kind, _, size, mode, target, sha in victims:
            tx.grow(kind, size, -1)
            prior = prior_of(kind, sha, size, mode, target)
            self.record(
                tx, "rmdir" if kind == "dir" else "delete", str(victim), author, now, prior=prior
            )
        files = [str(row[0]) for row in victims if row[1] == "file"]
        # A file the operation made itself and removes again leaves nothing behind.
        made = self._made_in_operation(tx, top, author)
        self._forget_made(tx, [f for f in files if f in made], made)
        retention.tombstone(self, tx, [f for f in files if f not in made], now, moved=False)
        tx.db.run(self.q.delete_subtree, {"p": top})

    def _ask_made(self, tx: Tx, top: str, author: str) -> Pending | None:
        """Ask (without waiting) which files at or below ``top`` this mutation's
        operation created in earlier transactions, if it can have: an operation begun in
        an earlier transaction (a burst through the mount), or a batch's (its earlier
        mutations' records are written). A lone mutation's has only its own records."""
        act = self._act(tx, author)
        begun_before = tx.depth > 0 or not any(a is act for a in tx.numbered)
        if act.id is None or not begun_before:
            return None
        return tx.db.ask(self.q.made_here, {"op": act.id, "p": top})

    def _made_in_operation(
        self, tx: Tx, top: str, author: str, asked: Pending | None = None
    ) -> dict[str, int]:
        """Files at or below ``top`` that this mutation's operation created, with their
        creating revisions (from records written already and those still pending);
        ``asked``: :meth:`_ask_made`'s answer, if it was asked before."""
        act = self._act(tx, author)
        if act.id is None:
            return {}
        if asked is None:
            asked = self._ask_made(tx, top, author)
        made = {} if asked is None else {str(p): int(rev) for p, rev in asked.all()}
        for record in tx.records:
            p = str(record["p"])
            if record["op"] == act.id and record["kind"] == "create" and _within(p, top):
                made[p] = int(str(record["rev"]))
        return made

    def _forget_made(
        self,
        tx: Tx,
        paths: list[str],
        made: dict[str, int],
        revs: Mapping[str, list[int]] | None = None,
    ) -> None:
        """Drop what ``paths`` (files made in this operation) recorded since their
        creation: a temporary file's content lives on where it went, or nowhere. What
        stays of an earlier file at the path keeps it as a deleted file's history;
        ``revs``: the revision numbers at some of the paths, where they were asked."""
        for p in paths:
            tx.db.run(self.q.drop_revisions_from, {"p": p, "rev": made[p]})
            if revs is not None and p in revs:
                left = sum(1 for rev in revs[p] if rev < made[p])
            else:
                row = tx.db.one(self.q.revisions_left, {"p": p})
                left = 0 if row is None else int(row[0])
            if left > 0:
                retention.tombstone(self, tx, [p], self._now(), moved=False)

    def rename(self, src: str, dst: str, *, author: str, overwrite: bool = False) -> None:
        src = rules.target(src, what="source")
        dst = rules.target(dst, what="destination")
        if src == dst:
            # rename(2) of a name onto itself succeeds and changes nothing
            with self._tx() as tx:
                if tx.db.one(self.q.kind, {"p": src}) is None:
                    raise NotFound(f"no entry at '{src}'", path=src)
            return
        rules.check_move(src, dst)
        now = self._now()
        with self._tx() as tx:
            db = tx.db
            moving = db.ask(self.q.moving, {"p": src})
            landing = db.ask(self.q.landing, {"p": dst, "parent": parent_of(dst)})
            tombs = db.ask(self.q.gone_below, {"p": dst})
            # Asked with the rest, so a server answers them in the same round trip: if
            # src is a file this operation made (a temporary file renamed over its
            # target), its history goes (_forget_made).
            made_before = self._ask_made(tx, src, author)
            revs = None if made_before is None else db.ask(self.q.revisions_at, {"p": src})
            entries = moving.all()
            top = next((row for row in entries if row[0] == src), None)
            if top is None:
                raise NotFound(f"no entry at '{src}'", path=src)
            src_kind = str(top[1])
            if src_kind == "dir":
                rules.check_reach(src, dst, _reach(src, [str(row[0]) for row in entries]))
            there = landing.all()
            dst_row = next((row for row in there if row[0] == dst), None)
            parent_kind = next((row[1] for row in there if row[0] == parent_of(dst)), None)
            self._ensure_parent(tx, dst, parent_kind, author, now, False)
            replaced = sorted((row for row in there if row[0] != parent_of(dst)), reverse=True)
            if replaced:
                self._replace(tx, src_kind, dst, str(replaced[-1][1]), replaced, overwrite, now)
            files = [row for row in entries if row[1] == "file"]
            made = (
                self._made_in_operation(tx, src, author, made_before) if src_kind == "file" else {}
            )
            retention.tombstone(
                self, tx, [str(row[0]) for row in files if row[0] not in made], now, moved=True
            )
            db.run(
                self.q.move_subtree,
                {"p": src, "dst": dst, "n": len(src), "dparent": parent_of(dst), "now": now},
            )
            tx.touch(self.q.touch_two, now, a=parent_of(src), b=parent_of(dst))
            gone = {str(p): (int(deleted), trim) for p, deleted, trim in tombs.all()}
            # How many revisions the destination keeps is known for a file's own move.
            kept = int(there[0][2]) if there and src_kind == "file" else None
            arrivals = [(dst + str(row[0])[len(src) :], int(row[2]), str(row[3])) for row in files]
            last = retention.arrive(self, tx, arrivals, gone, kept, author, now)
            # A temporary file made in this operation and renamed over its target leaves
            # no history of its own: its content is the target's revision now.
            at_src = None if revs is None else {src: [int(rev) for (rev,) in revs.all()]}
            self._forget_made(tx, [src] if src in made else [], made, at_src)
            # A file's rename carries its content; a directory's only its last arrival.
            size, sha = (last[1], last[2]) if src_kind == "file" else (None, None)
            if src_kind == "file" and last[0] is not None:
                mtime, uid, gid = int(top[6]), top[7], top[8]
                tx.settle(Entry(dst, "file", int(top[2]), int(top[4]), mtime, now, last[0],
                                None if uid is None else int(uid),
                                None if gid is None else int(gid)))  # fmt: skip
            prior = None
            if dst_row is not None:
                prior = prior_of(dst_row[1], dst_row[6], dst_row[3], dst_row[4], dst_row[5])
            self.record(
                tx, "rename", dst, author, now, old_path=src, rev=last[0], size=size, sha256=sha,
                mode=int(top[4]), target=rules.unpack_target(top[5]), prior=prior,
            )  # fmt: skip
            retention.sweep(self, tx, now)

    def _replace(
        self,
        tx: Tx,
        src_kind: str,
        dst: str,
        dst_kind: str,
        victims: list[Row],
        overwrite: bool,
        now: int,
    ) -> None:
        """Remove ``dst`` so the source can take its name, if the rules allow it."""
        rules.check_replace(src_kind, dst, dst_kind, overwrite=overwrite, entries=len(victims))
        # The rename record that follows says dst was replaced; no separate delete. The
        # history of dst stays: an arriving file continues it, anything else leaves it
        # as a deleted file's.
        if dst_kind == "file" and src_kind != "file":
            retention.tombstone(self, tx, [dst], now, moved=False)
        tx.db.run(self.q.delete_entry, {"p": dst})
        tx.grow(dst_kind, victims[-1][3], -1)

    def set_attrs(
        self,
        path: str,
        *,
        author: str,
        mode: int | None = None,
        uid: int | None = None,
        gid: int | None = None,
        mtime_ns: int | None = None,
        record: bool = True,
    ) -> Entry:
        rel = parse_rel(path).rel
        now = self._now()
        bits = None if mode is None else mode & 0o7777
        with self._tx() as tx:
            row = tx.db.one(self.q.stat_sha, {"p": rel})
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            old = entry(row)
            tx.db.run(
                self.q.set_attrs,
                {"mode": bits, "uid": uid, "gid": gid, "mtime": mtime_ns, "now": now, "p": rel},
            )
            if record:
                prior = prior_of(old.kind, row[10], old.size, old.mode, row[9])
                self.record(
                    tx, "attr", rel, author, now, mode=old.mode if bits is None else bits,
                    prior=prior,
                )  # fmt: skip
            made = Entry(
                old.path,
                old.kind,
                old.size,
                old.mode if bits is None else bits,
                old.mtime_ns if mtime_ns is None else mtime_ns,
                now,
                old.rev,
                old.uid if uid is None else uid,
                old.gid if gid is None else gid,
                old.target,
            )
            tx.settle(made)
        return made

    def truncate(self, path: str, size: int, *, author: str) -> Entry:
        rel = rules.target(path)
        if size < 0:
            raise TooLarge(f"cannot truncate '{rel}' to a negative size", path=rel)
        rules.check_size(rel, size, self.limits.max_file_bytes)
        now = self._now()
        with self._tx() as tx:
            look = tx.db.ask(self.q.read, {"p": rel})
            usage = self._ask_usage(tx)
            row = look.one()
            if row is None:
                raise NotFound(f"no entry at '{rel}'", path=rel)
            old = entry(row)
            need_file(rel, old.kind)
            keeping.check_caps(self, usage, rel, size - old.size, 0)
            content = self.content(rel, old.rev, row[10], row, 11)
            data = content[:size] + b"\x00" * (size - len(content))
            sha = rules.sha256_of(data)
            rev = tx.next_rev()
            tx.db.run(self.q.update_content, {"size": size, "now": now, "rev": rev, "p": rel})
            tx.bytes += size - old.size
            self._add_content(tx, rel, rev, data, sha, author, now, None)
            prior = prior_of("file", row[10], old.size, old.mode, None)
            self.record(
                tx, "modify", rel, author, now, rev=rev, size=size, sha256=sha, mode=old.mode,
                prior=prior,
            )  # fmt: skip
            retention.sweep(self, tx, now)
            made = Entry(rel, "file", size, old.mode, now, now, rev, old.uid, old.gid)
            tx.settle(made)
            return made

    # --- housekeeping (memfs.store.keeping) --------------------------------------------
    def usage(self) -> Usage:
        tx = self._tx_now()
        row = self._one(self.q.usage)
        if row is None:
            raise self.backend.missing_tree()
        files, dirs, size = _plus(row, Usage(0, 0, 0) if tx is None else tx.totals())
        return Usage(files=files, dirs=dirs, bytes=size)

    def mark_used(self, paths: list[str]) -> None:
        keeping.mark_used(self, paths)

    def unused(self, before_ns: int) -> list[Entry]:
        return [entry(row) for row in self._all(self.q.unused, {"before": before_ns})]

    def set_checkpoint(self, name: str, *, author: str, seq: int | None = None) -> Checkpoint:
        return keeping.set_checkpoint(self, name, author, seq)

    def checkpoints(self) -> list[Checkpoint]:
        return [Checkpoint(*row) for row in self._all(self.q.checkpoints)]

    def delete_checkpoint(self, name: str) -> None:
        with self._tx() as tx:
            if tx.db.one(self.q.drop_checkpoint, {"name": name}) is None:
                raise NotFound(f"there is no checkpoint named '{name}'")

    def note(self, space: str, key: str) -> str | None:
        row = self._one(self.q.note, {"s": space, "k": key, "now": self.clock()})
        return None if row is None else str(row[0])

    def notes(self, space: str, prefix: str = "") -> dict[str, str]:
        rows = self._all(self.q.notes, {"s": space, "k": prefix, "now": self.clock()})
        return {str(k): str(v) for k, v in rows}

    def set_note(self, space: str, key: str, value: str, *, expires_ns: int | None = None) -> None:
        with self._tx() as tx:
            # Expired notes go as new ones come: a server that died holding locks
            # leaves nothing that outlives their timeouts.
            tx.db.run(self.q.drop_expired_notes, {"now": self.clock()})
            tx.db.run(self.q.set_note, {"s": space, "k": key, "v": value, "exp": expires_ns})

    def drop_notes(self, space: str, key: str, *, below: bool = False) -> int:
        with self._tx() as tx:
            params = {"s": space, "k": key}
            # Every note at or below the key, expired ones too (they are removed alike).
            gone = tx.db.all(self.q.notes, {**params, "now": -(2**62)})
            if below:
                tx.db.run(self.q.drop_notes_below, params)
                return len(gone)
            found = any(str(k) == key for k, _ in gone)
            tx.db.run(self.q.drop_note, params)
            return int(found)

    def redact(self, path: str, rev: int, *, author: str) -> list[Revision]:
        return keeping.redact(self, path, rev, author)

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Revision]:
        return keeping.verify(self, progress)

    # --- searching ------------------------------------------------------------------------
    def search(
        self, query: str, path: str = "", *, regex: bool = False, limit: int = DEFAULT_LIMIT
    ) -> list[SearchHit]:
        if self.index is None:
            return super().search(query, path, regex=regex, limit=limit)
        return self.index.search(query, path, regex=regex, limit=limit)

    def search_index_pending(self) -> int:
        return 0 if self.index is None else self.index.pending()

    def build_search_index(self, progress: Callable[[int], None] | None = None) -> None:
        if self.index is not None:
            self.index.build(progress)

    def search_index_problems(self) -> list[str]:
        """What the index says that the tree does not (empty when consistent); for tests
        and store checks."""
        return [] if self.index is None else self.index.problems()

    # --- the backend's housekeeping -------------------------------------------------------
    def defer_maintenance(self) -> None:
        # A caller with a spare thread (the mount daemon) also takes the full-text
        # index off the writing transactions: a file's trigrams cost about 1 ms of a
        # small file's commit (an untar is mostly that). The schema's trigger marks new
        # content stale, maintain() indexes it in batches, and a search indexes what is
        # still stale first, so no search misses a file.
        self._index_later = True
        self.backend.defer_maintenance()

    def maintain(self) -> None:
        if not self.readonly:
            self.backend.maintain()
            if self._index_later and self.index is not None:
                self.index.build_step(MAINTAIN_INDEX_BATCH)

    def storage_problem(self) -> str | None:
        return self.backend.storage_problem()

    def rescue(self, recovery_dir: Path) -> Path | None:
        return self.backend.rescue(recovery_dir)

    def close(self) -> None:
        self.backend.close()
