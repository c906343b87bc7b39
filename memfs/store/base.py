"""The store interface every backend implements, and the invariants it promises.

A store holds one memory tree. Paths are store-relative canonical strings: ``""`` is the
root, ``"notes/todo.md"`` a file; every name in them satisfies
:func:`memfs.paths.name_problem` (backends check this on every mutation, so nothing a
person makes through the mount is unreachable for the model).

Invariants (the shared contract suite in ``tests/store_contract/`` checks each one):

1. **Atomic mutations.** Every mutating call is one transaction: it happens entirely or
   not at all, and a concurrent reader (this process, another process, another host)
   sees the tree before or after it, never in between.
2. **Revisions.** Every write of a file's content (and every arrival of a file by
   rename, invariant 6) creates a new revision with a number
   greater than every earlier revision of any file in the store, the author, the time,
   the size and the SHA-256. ``write(expected_rev=r)`` succeeds only while ``r`` is the
   file's current revision (``0`` means "must not exist yet"), else raises
   :class:`~memfs.errors.Conflict` and changes nothing: no lost updates. Likewise
   ``delete(expected_rev=r)`` deletes only while ``r`` is the entry's ``rev``, so a
   delete decided on an old revision of a file never removes a newer write.
3. **No silent overwrite.** ``rename`` refuses an existing destination unless
   ``overwrite=True`` (and then only file over file, or directory over an empty
   directory); a directory is never moved into itself; the root is never deleted or
   renamed.
4. **Parents exist.** Every entry but the root has a directory as parent; ``write``,
   ``mkdir`` and ``symlink`` raise :class:`~memfs.errors.NotFound` for a missing parent
   unless ``parents=True``.
5. **Change feed.** Every mutation appends one or more :class:`Change` records with a
   strictly increasing ``seq``, committed in the same transaction as the mutation;
   ``changes(since=s)`` returns exactly those with ``seq > s``, in order, from any
   process. ``last_seq()`` is the highest committed ``seq``. A recursive delete appends
   one ``delete``/``rmdir`` record per removed entry, children before their directory,
   so a follower learns every path that vanished; a rename appends one ``rename`` record
   (``path`` the new name, ``old_path`` the old) for the moved entry, whose whole
   subtree moved with it, and a destination it replaced is implied, not recorded.
   A refused mutation appends nothing. A change that made file revisions carries the
   newest one as ``rev`` (a rename: the last arrival revision it made, or None when no
   file moved), so every revision number belongs to exactly one change and "the tree
   at revision R" means the tree after the change that made R. A change that left
   content at ``path`` (create, modify, a file's rename) carries its ``size`` and
   ``sha256`` for good, even after the revision is no longer retained.
6. **History belongs to paths.** Every revision records the path it was made at, and
   ``history(path)`` returns the retained revisions made at that path, newest first,
   whatever file they belonged to, so no save pattern loses a file's history:

   - a file arriving at a path by ``rename`` (plain or overwriting, and every file of a
     renamed directory) gives the destination one new *arrival* revision: the same
     content (stored once, not copied), the renamer as author, a new revision number.
     The moved file's ``Entry.rev`` becomes the arrival's number, so a file's
     ``Entry.rev`` is always the newest revision of its path and
     ``write(expected_rev=store.stat(p).rev)`` works right after a rename;
   - the destination's earlier revisions stay: an atomic save (write a temp file, rename
     it over ``f``) leaves ``f``'s history as before plus one revision, and so do
     JetBrains' (``f`` to ``f___jb_old___``, temp to ``f``) and emacs/vim's backup
     saves (``f`` to ``f~``, write a new ``f``);
   - a path that stops being a file (deleted, replaced by a non-file, renamed away)
     keeps a *tombstoned* history: readable with ``history`` and ``read_revision`` though
     nothing is there. A deleted path keeps only its last revision; a renamed-away one
     keeps all of them (so a save that brings the name back finds its whole history,
     and history followed across the move finds it too). Either way they go
     ``deleted_history_days`` (a backend option, default 30) after the path went, and
     a renamed-away one not before a short grace (the backend's) even at 0 days.
     A path that becomes a file again continues its history;
   - a live path keeps its current revision plus the ``history`` option's number of
     previous ones. Retention is decided when reading, so what ``history`` shows never
     depends on when a backend physically removes rows (lazily, in bounded batches).

7. **Caps.** ``max_file_bytes`` bounds one file (TooLarge); ``max_tree_bytes`` and
   ``max_files`` (None: no cap) bound the sum of all file sizes and the number of files
   (directories and symlinks are not counted). A mutation that would take the tree past
   a cap raises :class:`~memfs.errors.CapExceeded` and changes nothing; one that leaves
   an over-cap tree no larger (a cap lowered below what is there) goes through.
   :meth:`Store.usage` reads maintained counters, so doors may check it per call.

8. **Checkpoints, redaction, last use.** A checkpoint names a change ``seq``: the tree
   as it was after that change, reconstructed from the feed and the retained revisions.
   ``redact`` removes a revision's content for good and keeps the revision's record,
   marked with who redacted it and when. Every file records its last use: its newest
   revision's time, or a later :meth:`Store.mark_used` (a read by the model); this is
   housekeeping, not a mutation of the tree, and appends no change.

9. **Symlinks are data.** A symlink is stored with its target text and never resolved by
   the store; it exists so that tools that make them (emacs lock files, git probes) work
   on the mount. A target is any text a file system holds, undecodable bytes included
   (a ``surrogateescape`` str, as ``os.fsdecode`` gives), and reads back exactly.
   ``read``, ``truncate``, ``history`` and ``read_revision`` of a symlink raise
   NotFound; ``write`` onto one raises AlreadyExists.

10. **Bytes are checked.** Content is returned only while it still has the SHA-256
    recorded when it was written: ``read``, ``read_revision`` and ``read_blob`` raise
    :class:`~memfs.errors.Damaged` (naming a path and revision) instead of returning
    other bytes, and :meth:`Store.verify` lists every damaged retained revision.
    ``open_revision`` checks once, when the reader is opened, and its range reads
    raise Damaged for stored bytes cut short since.

11. **Read-only opening.** ``open_store(url, readonly=True)`` never creates, migrates or
    writes anything; every mutation (and :meth:`Store.mark_used`) raises
    :class:`~memfs.errors.ReadOnlyStore`.

12. **Operations.** Every change belongs to exactly one operation (:class:`Operation`),
    recorded in the same transaction as the change: the one its thread is
    :meth:`Store.acting` for, else the batch's own, else the mutation's own. An operation
    may span transactions (a process's burst of changes through the mount). Each change
    record carries its operation, the entry's mode (and a symlink's target) after it,
    and what was at its path just before it (``prior_*``: for a rename, the destination
    it replaced), so an operation can be shown and taken back from its own records. A
    file an operation created and renames over a path, or removes, inside the same
    operation keeps no history of its own (its content lives on where it went): an
    atomic save leaves no temporary name in anyone's history. An operation run by one
    of memfs's own commands says which (:attr:`Act.command`), a field no door sets.

Errors are the typed ones in :mod:`memfs.errors`; nothing else escapes a backend
except programming errors.

Every time a store records or judges (revision times, the retention of deleted paths)
comes from its ``clock`` attribute, a callable returning nanoseconds since the epoch
(``time.time_ns`` by default); tests replace it to see retention days pass at once.
"""

from __future__ import annotations

import abc
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memfs.errors import NotFound
from memfs.store.ranges import RevisionReader, WholeReader

EntryKind = Literal["file", "dir", "symlink"]
ChangeKind = Literal["create", "modify", "delete", "rename", "mkdir", "rmdir", "attr", "symlink"]

DEFAULT_FILE_MODE = 0o600
DEFAULT_DIR_MODE = 0o700


@dataclass(frozen=True, slots=True)
class Entry:
    """One node of the tree as it is now."""

    path: str
    kind: EntryKind
    size: int
    mode: int  # permission bits only (no file-type bits)
    mtime_ns: int
    ctime_ns: int
    # Files: the current content revision, always the newest revision of the path (a
    # rename makes a new arrival revision). Others: the creating revision.
    rev: int
    uid: int | None = None  # None: the mount shows the mounting user
    gid: int | None = None
    target: str | None = None  # symlinks only

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"

    @property
    def is_file(self) -> bool:
        return self.kind == "file"


@dataclass(frozen=True, slots=True)
class WriteItem:
    """One file of :meth:`Store.write_many`: its content, the mode it is made with, and
    the modification time it keeps (None: the write's own time)."""

    path: str
    data: bytes
    mode: int | None = None
    mtime_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One revision of :meth:`Store.write_series`: the series' content up to ``end``
    (its hex SHA-256 ``sha256``), by ``author``, in the operation of ``act``."""

    end: int
    sha256: str
    author: str
    act: Act


def check_series(data: bytes | bytearray, steps: Sequence[Step]) -> None:
    """ValueError unless ``steps`` is a series of ``data`` (see Store.write_series)."""
    ends = [step.end for step in steps]
    if not ends or ends[-1] != len(data) or any(a >= b for a, b in itertools.pairwise(ends)):
        raise ValueError(f"not a series of {len(data)} bytes: ends {ends[:8]}")


@dataclass(frozen=True, slots=True)
class Revision:
    """One committed version of a file's content, made at ``path`` (by a write, a
    truncate, or a rename arriving there)."""

    path: str
    rev: int
    author: str
    time_ns: int
    size: int
    sha256: str
    redacted_by: str | None = None  # set once the content was redacted (read_revision: Redacted)
    redacted_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A named point in the store's change feed: the tree after change ``seq``."""

    name: str
    seq: int
    time_ns: int
    author: str


@dataclass(frozen=True, slots=True)
class Change:
    """One record of the change feed. ``old_path`` is set for renames."""

    seq: int
    kind: ChangeKind
    path: str
    author: str
    time_ns: int
    old_path: str | None = None
    rev: int | None = None
    # The content this change left at ``path`` (create, modify, a file's rename).
    size: int | None = None
    sha256: str | None = None
    # The operation the change belongs to (None: written before the operation log).
    op: int | None = None
    # The entry's mode after the change (and a symlink's target), where it has one.
    mode: int | None = None
    target: str | None = None
    # What was at ``path`` just before the change (a rename: the destination it
    # replaced); ``prior_kind`` None: nothing was there.
    prior_kind: str | None = None  # "?": not recorded (a change from before the log)
    prior_sha256: str | None = None
    prior_size: int | None = None
    prior_mode: int | None = None
    prior_target: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the log (invariant 12): what one actor did in one go."""

    id: int
    actor: str
    detail: str  # free text shown small ("pid 812", "undo of operation 41"), never matched
    label: str  # the program or command ("rm", "memfs restore"; "" when the actor says it)
    start_ns: int
    end_ns: int
    first_seq: int
    last_seq: int
    changes: int  # how many feed records it made
    # Which of memfs's own commands made it ("restore", "undo", "import", ...): "" for
    # every door. Typed, not read from ``actor``, which a writer chooses.
    command: str = ""


@dataclass(slots=True, eq=False)
class Act:
    """An operation as its maker holds it while it goes on (:meth:`Store.acting`):
    every mutation made inside belongs to it. ``id`` is None until the store records the
    operation, in the transaction of its first change; it stays None if that
    transaction is undone."""

    actor: str
    detail: str = ""
    label: str = ""
    id: int | None = None
    # memfs's own command this is (:attr:`Operation.command`); "" for a door's act.
    command: str = ""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One file a search found: its store-relative ``path``, a ``score`` (higher is a
    better match; comparable only within one result list) and its matching ``lines`` as
    ``(line number from 1, text cut to about 200 characters)``, at most 10 of them.
    What a query means: :mod:`memfs.store.matching`."""

    path: str
    score: float
    lines: list[tuple[int, str]]


@dataclass(frozen=True, slots=True)
class Usage:
    files: int
    dirs: int
    bytes: int


class Store(abc.ABC):
    """A memory tree with revisions and a change feed. See the module invariants."""

    url: str
    clock: Callable[[], int]
    # The largest file content ``write`` and ``truncate`` accept (None: no cap). Doors
    # that acknowledge before they commit (the mount) refuse past it up front.
    max_file_bytes: int | None = None
    # Caps on the whole tree (invariant 7); None: no cap.
    max_tree_bytes: int | None = None
    max_files: int | None = None

    # --- reading -----------------------------------------------------------------
    @abc.abstractmethod
    def stat(self, path: str) -> Entry:
        """The entry at ``path``; NotFound if there is none."""

    @abc.abstractmethod
    def listdir(self, path: str) -> list[Entry]:
        """The children of directory ``path``, sorted by name; NotADirectory for a file."""

    @abc.abstractmethod
    def read(self, path: str) -> tuple[bytes, Entry]:
        """Content and entry of file ``path``, read in one transaction (consistent pair)."""

    def walk(self, path: str = "") -> Iterator[Entry]:
        """Every entry below ``path`` (not ``path`` itself), parents before children."""
        for entry in self.listdir(path):
            yield entry
            if entry.is_dir:
                yield from self.walk(entry.path)

    def subtree_extent(self, path: str) -> tuple[int, int]:
        """How far the entries below ``path`` reach past it: the largest number of
        segments and of UTF-8 bytes any of them adds to ``path`` (``(0, 0)`` when none).
        A rename uses it to refuse moving a descendant past the path gate's limits."""
        depth = nbytes = 0
        for entry in self.walk(path):
            suffix = entry.path[len(path) :] if path else "/" + entry.path
            depth = max(depth, suffix.count("/"))
            nbytes = max(nbytes, len(suffix.encode("utf-8", "surrogateescape")))
        return depth, nbytes

    # --- searching -----------------------------------------------------------------
    def search(
        self, query: str, path: str = "", *, regex: bool = False, limit: int = 20
    ) -> list[SearchHit]:
        """The files at or below ``path`` whose text matches ``query``, best first, at
        most ``limit`` of them (see :mod:`memfs.store.matching` for what matches).

        QueryError (a ValueError) for an empty query or a bad regular expression;
        NotFound if nothing is at ``path``. This default reads every file; a backend
        with an index overrides it and must find exactly the same files.
        """
        from memfs.store.matching import average, decode_text, parse_query

        parsed = parse_query(query, regex=regex)
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        top = self.stat(path)
        files = [top] if top.is_file else [e for e in self.walk(path) if e.is_file]
        found: list[tuple[str, str, list[tuple[int, str]]]] = []
        for entry in files:
            try:
                data, _ = self.read(entry.path)
            except NotFound:
                continue  # deleted while searching
            text = decode_text(data)
            lines = None if text is None else parsed.matching_lines(text)
            if text is not None and lines:
                found.append((entry.path, text, lines))
        mean = average([len(text) for _, text, _ in found])
        hits = [SearchHit(p, parsed.score(text, mean), lines) for p, text, lines in found]
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:limit]

    def search_index_pending(self) -> int:
        """How many files a search index still has to take in before searches use it
        (0: none, or no index). A door with a person watching builds it first with
        :meth:`build_search_index` to show progress; :meth:`search` builds it anyway."""
        return 0

    def build_search_index(self, progress: Callable[[int], None] | None = None) -> None:
        """Bring the search index up to date, calling ``progress(n)`` as each batch of
        ``n`` files is indexed. Nothing to do for a backend without an index."""
        return None

    # --- writing -----------------------------------------------------------------
    @abc.abstractmethod
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
        """Replace (or create) file ``path`` with ``data`` as one new revision.

        ``expected_rev``: None writes unconditionally; 0 requires that no entry exists;
        n requires that the file's current revision is n. Otherwise Conflict (or
        AlreadyExists for 0). ``mode`` applies when the file is created. IsADirectory if
        ``path`` is a directory; TooLarge over the store's size cap. ``replace``: the
        content takes the file's place as a new file renamed over it would, so the
        directory's times move as they do when a file is made (a save through a
        temporary file that never reached the store: memfs.mount.namespace).

        ``sha256``: the hex SHA-256 of ``data`` when the caller has just computed it
        (:func:`memfs.store.rebase.land` hashes each attempt once for its journal note
        and the write; a large file's hash is a real part of its write); None: hashed
        here. It is the hash reads check the content against, so it must be ``data``'s.

        ``data`` may be a ``bytearray`` (a door's buffer): it is stored without a copy
        of it, so the caller must not change it until the call returns. A backend
        streams large content into its storage in chunks rather than handing the
        database one more copy of it.
        ``mtime_ns``: the modification time the file keeps, set with the content in the
        same change (an imported file's own time); None is the write's time.
        """

    def write_many(self, items: Iterable[WriteItem], *, author: str) -> list[Entry]:
        """Write each item as :meth:`write` would (unconditionally, parents required),
        all or none: the first that raises leaves none of them. A backend may do it in
        fewer round trips than one write each (a bulk import's path), and may leave the
        files to its search index's next build (:meth:`search_index_pending` counts
        them; :meth:`search` builds first, so what it finds is the same)."""
        items = list(items)
        with self.batch():
            return [
                self.write(i.path, i.data, author=author, mode=i.mode, mtime_ns=i.mtime_ns)
                for i in items
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
        """Revisions of file ``path``, one per step in order, each holding ``data`` up
        to the step's end, by its author in its act's operation: what programs
        appending to one file in turn made (a mount lands its queue of turns so). The
        first is written over revision ``expected_rev``, else Conflict and nothing is
        written; all or none. The steps' ends grow,
        the last is ``len(data)``; ``mtime_ns``: the last revision's mtime (None: the
        write's time). Returns the file's entry after the last. A backend may do it in
        fewer round trips and statements than one write each."""
        check_series(data, steps)
        with self.batch():
            entry: Entry | None = None
            expected = expected_rev
            for step in steps:
                last = step is steps[-1]
                with self.acting(step.act):
                    entry = self.write(
                        path,
                        data if last else data[: step.end],
                        author=step.author,
                        expected_rev=expected,
                        mtime_ns=mtime_ns if last else None,
                        sha256=step.sha256,
                    )
                expected = entry.rev
            assert entry is not None
            return entry

    @abc.abstractmethod
    def mkdir(
        self,
        path: str,
        *,
        author: str,
        mode: int = DEFAULT_DIR_MODE,
        parents: bool = False,
        exist_ok: bool = False,
    ) -> Entry:
        """Create directory ``path``; AlreadyExists unless ``exist_ok`` and it is a dir."""

    @abc.abstractmethod
    def symlink(self, path: str, target: str, *, author: str) -> Entry:
        """Create a symlink entry holding ``target`` (never resolved by memfs)."""

    @abc.abstractmethod
    def delete(
        self,
        path: str,
        *,
        author: str,
        recursive: bool = False,
        expected_rev: int | None = None,
    ) -> None:
        """Delete ``path``; a non-empty directory needs ``recursive`` (else
        DirectoryNotEmpty). The root is refused with InvalidMove; NotFound if nothing
        is there, whatever ``expected_rev`` says.

        ``expected_rev``: None deletes whatever is there; n deletes only while the entry
        at ``path`` has ``Entry.rev`` n, else Conflict and nothing changes. For a file
        that is its current revision, so a write after the caller looked wins over the
        delete. For a directory or symlink it is the creating revision: it guards
        against the entry having been replaced (by a file, or a new directory), not
        against changes below a directory; a non-recursive delete guards those (it
        refuses a directory that is not empty), a recursive one removes whatever is
        there. One rule for every kind and backend, since every entry has a ``rev``.
        ValueError for n < 1.
        """

    @abc.abstractmethod
    def rename(self, src: str, dst: str, *, author: str, overwrite: bool = False) -> None:
        """Move ``src`` (file, symlink or whole directory) to ``dst`` atomically.

        AlreadyExists if ``dst`` exists and not ``overwrite``; InvalidMove for the root
        or a directory into itself; NotFound if ``dst``'s parent is missing.
        """

    @abc.abstractmethod
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
        """Change metadata without a new content revision (records an ``attr`` change).

        ``record=False`` puts back attributes a tree already had (a copy of a store
        reproducing its source): nobody changed anything, so no change is recorded and
        no operation appears in the log for ``memfs undo`` to take back."""

    @abc.abstractmethod
    def truncate(self, path: str, size: int, *, author: str) -> Entry:
        """Cut or zero-extend file ``path`` to ``size`` bytes, as one new revision."""

    # --- history and change feed -------------------------------------------------------
    @abc.abstractmethod
    def history(self, path: str, limit: int | None = None) -> list[Revision]:
        """Retained revisions made at ``path``, newest first (invariant 6).

        For a live file: its current revision (the first) plus up to the ``history``
        option's number of previous ones (0: only the current), including revisions of
        files that were there before it and arrivals by rename. For a path where no
        file is now: its tombstoned history. IsADirectory for a directory, NotFound for
        a symlink or a path with no retained revision.
        """

    @abc.abstractmethod
    def read_revision(self, path: str, rev: int) -> bytes:
        """Content of revision ``rev`` of ``path``, for any revision ``history(path)``
        lists (tombstoned ones included); NotFound if it was never made at ``path`` or
        is no longer retained."""

    def open_revision(self, path: str, rev: int) -> RevisionReader:
        """Revision ``rev`` of ``path`` to read by byte range (:mod:`memfs.store.ranges`):
        its bytes are checked against their SHA-256 once, here (Damaged, NotFound and
        Redacted as :meth:`read_revision`), and each ``read(offset, size)`` of the
        reader fetches only that range. Meant for large files: a reader of a file of
        any size holds no more than a chunk of it. This default reads the revision
        whole and slices it; a backend that can read stored ranges overrides it."""
        return WholeReader(path, rev, self.read_revision(path, rev))

    @abc.abstractmethod
    def changes(
        self,
        since: int = 0,
        limit: int | None = None,
        *,
        until: int | None = None,
        newest_first: bool = False,
        op: int | None = None,
    ) -> list[Change]:
        """Change records with ``since < seq <= until`` (no upper bound for None),
        oldest first, or newest first with ``newest_first`` (``limit`` counts in that
        order). With ``op``: the records of that operation, oldest first (``since``,
        ``until`` and ``newest_first`` do not apply)."""

    # --- the operation log (invariant 12) --------------------------------------------------
    @abc.abstractmethod
    def acting(self, act: Act) -> AbstractContextManager[None]:
        """Make every mutation this thread calls inside the ``with`` block belong to
        ``act``'s operation (nested: the inner act wins inside it). The operation is
        recorded in the transaction of its first change, when ``act.id`` is set; later
        changes, in later transactions too, join it."""

    @abc.abstractmethod
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
        """Operations newest first: ids below ``before``, by an actor whose name contains
        ``actor``, started within ``[since_ns, until_ns]``, with a record at ``path`` or
        below it (moved to or from there too); at most ``limit``."""

    @abc.abstractmethod
    def operation(self, op_id: int) -> Operation:
        """Operation ``op_id``; NotFound if there is none."""

    @abc.abstractmethod
    def commands_since(self, path: str, rev: int) -> set[str]:
        """The :attr:`Operation.command` of every operation run by memfs's own commands
        that made a revision at ``path`` after revision ``rev`` (the rebase's question:
        did a restore, undo or import write it since?)."""

    @abc.abstractmethod
    def last_seq(self) -> int:
        """The highest committed change sequence number (0 for a new store)."""

    @abc.abstractmethod
    def read_blob(self, sha256: str) -> bytes:
        """The content with this SHA-256 while any retained revision holds it (a
        restore puts back content by hash, whatever path it was made at); NotFound
        otherwise."""

    @abc.abstractmethod
    def redact(self, path: str, rev: int, *, author: str) -> list[Revision]:
        """Remove for good the content of revision ``rev`` of ``path`` and of every
        retained revision sharing it (the same secret, arrived elsewhere by rename or
        written again); return those revisions, marked redacted. NotFound if ``rev`` is
        not retained at ``path``; Conflict if the content is a live file's current
        content (change or delete the file first). Redacting again changes nothing."""

    @abc.abstractmethod
    def set_checkpoint(self, name: str, *, author: str, seq: int | None = None) -> Checkpoint:
        """Name the tree after change ``seq`` (default: the last one); AlreadyExists
        for a name in use, NotFound for a seq past the last."""

    @abc.abstractmethod
    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint, oldest first."""

    @abc.abstractmethod
    def delete_checkpoint(self, name: str) -> None:
        """Forget checkpoint ``name`` (NotFound if there is none); history stays."""

    # True when :meth:`wait_for_changes` returns as soon as any process commits a change
    # (PostgreSQL: LISTEN/NOTIFY); False when it can only poll, and a follower with a poll
    # interval of its own keeps that.
    pushes_changes: bool = False

    # --- doors' notes ------------------------------------------------------------
    # Small text a door keeps beside the tree for every server of the store (WebDAV's
    # locks and dead properties): not part of the tree, so no revision, no change
    # record, no operation, and nothing history shows. ``space`` names the door's use;
    # a note past ``expires_ns`` (by the store's clock) is gone.
    @abc.abstractmethod
    def note(self, space: str, key: str) -> str | None:
        """The unexpired note ``key`` of ``space``, or None."""

    @abc.abstractmethod
    def notes(self, space: str, prefix: str = "") -> dict[str, str]:
        """Every unexpired note of ``space`` whose key starts with ``prefix``."""

    @abc.abstractmethod
    def set_note(self, space: str, key: str, value: str, *, expires_ns: int | None = None) -> None:
        """Keep ``value`` as note ``key`` of ``space`` (replacing one there), until
        ``expires_ns`` if given. ReadOnlyStore on a read-only store."""

    @abc.abstractmethod
    def drop_notes(self, space: str, key: str, *, below: bool = False) -> int:
        """Remove note ``key`` of ``space`` (``below``: every key starting with it);
        how many went."""

    def pushed_upto(self) -> int:
        """The newest feed number this handle was told of by a store that pushes its
        changes (0 for one that does not): a follower whose own changes are all that
        came since its last read need not read the feed."""
        return 0

    def interrupt_waits(self) -> None:
        """End every :meth:`wait_for_changes` of this handle in progress now (a follower
        stopping need not wait out its timeout). The default waits cannot be ended."""
        return None

    def wait_for_changes(self, since: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a committed change with ``seq > since``;
        True if there is one (it may have been there already), False on timeout.

        Followers of the feed (the mount, the mirror) call it between reads of
        :meth:`changes`. The default is one short poll: it sleeps ``timeout`` and looks
        at :meth:`last_seq` once; a backend that hears of commits returns at once.
        """
        if self.last_seq() > since:
            return True
        time.sleep(timeout)
        return self.last_seq() > since

    # --- housekeeping --------------------------------------------------------------------
    @abc.abstractmethod
    def usage(self) -> Usage:
        """How many files and directories the tree holds and their total size (cheap:
        doors check caps with it)."""

    @abc.abstractmethod
    def mark_used(self, paths: list[str]) -> None:
        """Record that the model read these files now (invariant 8); paths that are
        not files are ignored. Cheap when repeated: a use less than an hour after the
        recorded one writes nothing."""

    @abc.abstractmethod
    def unused(self, before_ns: int) -> list[Entry]:
        """Live files whose last use is before ``before_ns``, by path."""

    def touched(self) -> Mapping[str, int]:
        """The directories whose modification times the calling thread's last mutation
        set, committed, with the time set (as stored); empty when unknown (inside a
        batch, or a store that does not say). A cache of entries updates those in
        place instead of reading them again."""
        return {}

    def settled(self) -> Mapping[str, Entry]:
        """The entries the calling thread's last mutation left at the paths it changed,
        where it knows them whole (a file written or truncated, a directory made, an
        entry's attributes set, a file's rename at its destination), committed; empty
        when unknown (a batch, or a store that does not say). A cache of entries keeps
        these instead of reading them again."""
        return {}

    @abc.abstractmethod
    def appended(self) -> range:
        """The feed numbers the calling thread's last mutation appended (committed, or
        inside a batch to be committed with it); an empty range when it appended none
        or was refused. After a batch: everything the batch appended. A caller learns
        its own changes from this without reading the feed."""

    @abc.abstractmethod
    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Revision]:
        """Every retained revision whose stored bytes no longer match its SHA-256 (or are
        missing), by path and revision; redacted ones have no bytes to check. Reads the
        whole store, calling ``progress(checked, total)`` as it goes."""

    @abc.abstractmethod
    def batch(self) -> AbstractContextManager[None]:
        """Make every mutation this thread calls inside the ``with`` block one
        transaction: all of them or none, and other readers see the tree before or
        after. A mutation that raises inside leaves nothing and the batch may go on;
        an exception leaving the block undoes the whole batch. Batches nest (the inner
        joins the outer). Every change inside carries one time, the clock's when the
        batch began, so the log shows a batch as one operation (``memfs undo`` reverts
        it whole); a ``clock`` replaced inside the batch gives the times from then on (a
        copy that keeps the original times does that)."""

    def defer_maintenance(self) -> None:
        """Promise to call :meth:`maintain` about once a second from now on.

        A long-running process with a spare thread (the mount daemon) says so, and the
        backend may then move housekeeping off the write path. Nothing changes for other
        processes on the store. The default backend has nothing to defer.
        """
        return None

    def maintain(self) -> None:
        """Do deferred housekeeping now (after :meth:`defer_maintenance`); cheap when
        there is none. Never changes what the tree holds."""
        return None

    def storage_problem(self) -> str | None:
        """Why the storage this handle was opened on is no longer the store its URL names
        (an SQLite file deleted, replaced or moved under it; a server tree dropped), or
        None. Cheap: a long-running process (the mount) asks about once a second, and
        stops writing through a handle that answers a problem."""
        return None

    def rescue(self, recovery_dir: Path) -> Path | None:
        """Save what this handle still reaches of a store whose storage went away (see
        :meth:`storage_problem`): back at its own place when that is free, else in
        ``recovery_dir``; the path written, or None when the backend has nothing to save
        (a server keeps its own)."""
        return None

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections; further calls raise StoreUnavailable."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
