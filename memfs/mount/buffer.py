r"""One file's pending content, as an explicit state machine.

A :class:`Buffer` holds what the writers of one file changed and the store has not got
yet. Its life, every state and every move (each move is one method here, and those
methods are the only writers of the buffer's fields)::

         create                                  load (a stored file's first change)
           |                                       |
           v                                       v
      +---------+        write / truncate      +---------+
      |  DIRTY  | <--------------------------- |  CLEAN  |
      +---------+                              +---------+
       |    ^   \                                  |
       |    |    \  discard (unlink, a newer       | discard
       |    |     \ journal's version)             v
       |    |      +----------------------->  +---------+
       |    |                                 | DROPPED |
       |    | landed, changes since: pending  +---------+
       |    | on the revision that landed          ^
       |    |                                      | discard
       |  +------------+        failed        +--------+
       +->| COMMITTING | -------------------> | FAILED |
    begin +------------+ <------------------- +--------+
    commit  |   ^    |   begin commit (retry)
            |   |    |
            +---+    | landed, nothing changed since
       a write past  v
       the snapshot  +--------+
       (gen + 1)     | LANDED |
                     +--------+

    DIRTY -> DIRTY: write, truncate, queue a turn. COMMITTING -> COMMITTING: a write past
    the snapshot, queue a turn. COMMITTING -> DIRTY (unfreeze): a save under another
    name refused before anything was written (its rename reports the error).

``COMMITTING`` is the only state whose commit runs without the mount's lock: the
commit works on a :class:`Snapshot` (the bytes, base and writer frozen by
:meth:`Buffer.begin_commit`, with a generation number), and :meth:`Buffer.landed`
compares the generation when the store has answered. Writes that arrived meanwhile
keep the buffer pending, now built on the revision that landed; whoever changes the
bytes the snapshot holds (not just past them) waits for that one file's landing
instead. "Due" (nobody wrote for a quiet period; a failure's retry time reached; a
turn queued) is not a state: the owner asks :meth:`Buffer.due_in`.

**Turns.** Each writer's change is a revision of its own. When another program
appends to a file whose pending change is itself only appends, it does not wait for
that change to land: :meth:`Buffer.queue_turn` closes the first writer's bytes as a
:class:`Turn` (where they end, whose they are) and the second writes on. A landing
writes each turn as its own revision, in order, then the rest (one store transaction:
:meth:`memfs.mount.writes.PendingWrites`), so four programs appending to one log in
turn no longer wait for one landing each (``scripts/bench_many_writers.py``). Any other
change by another writer, or one below a queued turn's end, still lands what is
pending first; a queue of :data:`MAX_TURNS` does too.

The byte and file counts the owner's caps need are a :class:`Tally` every buffer
updates in the move that changes them (admitted with its bytes when made, released
when ``LANDED`` or ``DROPPED``); :meth:`Tally.check` recomputes them from the live
buffers. The tally also keeps the buffers that hold changes in the order of their last
change, so the committer finds the due ones from the front (:meth:`Tally.due`) instead
of asking every pending buffer each time it wakes: with thousands pending (a quiet
period of 30 s and a fast writer), that scan made each file slower than the last.
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from memfs.errors import IllegalTransition
from memfs.mount.bursts import Writer
from memfs.store.base import Act, Entry
from memfs.store.rebase import Shape


class State(enum.Enum):
    CLEAN = "clean"  # loaded from the store for a change, nothing changed yet
    DIRTY = "dirty"  # holds acknowledged changes the store has not got
    COMMITTING = "committing"  # a snapshot of it is landing (outside the mount's lock)
    FAILED = "failed"  # the last landing failed: writes refused, retried later
    LANDED = "landed"  # all it held is in the store; gone from its owner
    DROPPED = "dropped"  # let go without a commit (unlinked, clean, replaced)


LIVE = (State.CLEAN, State.DIRTY, State.COMMITTING, State.FAILED)

# The kernel sends one write(2) as several WRITE requests where it crosses into a page
# it does not hold (fuse_fill_write_pages stops at the end of a page that is not up to
# date), and it holds the file's lock on this mount until the last one: a commit in
# between would land half of the write, and another mount's append could then land in
# the middle of it (bench_many_writers: "b" landed, then "a1-382", then "0-315": two
# lines lost). So a write that ends on a page boundary may have more to come: the
# committer waits this long after it, unless another write arrives first. An fsync,
# a close or another program's write (which the kernel's lock orders after the whole
# write) commit at once as before.
SPLIT_GRACE = 0.02
PAGE = 4096
# A save of the whole file begins with a truncate to nothing (O_TRUNC) and its content
# follows in the writer's next write(2). Landed in between, the save is an empty file:
# merged with another writer's change meanwhile, it deleted all they had kept (two
# savers on two mounts: each other's change seen on the feed hurried the other's
# half-made save). So the committer leaves a file just emptied this long for its
# content; a write, an fsync, a close that commits, or a namespace step end the wait.
SAVE_GRACE = 1.0

# A snapshot of a buffer this large shares its bytes instead of copying them: the
# buffer copies them only if a write arrives before the landing ends (rare), so a large
# save is not copied once more on its way to the store. Smaller ones are copied into
# immutable bytes, which cost little and can go anywhere (the read cache keeps them).
LEND_AT = 1 << 20
# The most turns a buffer queues; a writer meeting a full queue waits for it to land.
MAX_TURNS = 256


class Tally:
    """What the live buffers hold, for the caps: ``bytes`` (holes included),
    ``base_bytes`` (the sizes they were loaded at: ``bytes - base_bytes`` is the growth
    not in the store yet) and ``new_files`` (files the store does not count yet); and for
    the committer, ``changed``: every DIRTY, COMMITTING or FAILED buffer, oldest last
    change first (a buffer moves to the end when it changes, to the front when hurried),
    with ``failed`` the number of FAILED ones."""

    __slots__ = ("base_bytes", "bytes", "changed", "failed", "new_files")

    def __init__(self) -> None:
        self.bytes = 0
        self.base_bytes = 0
        self.new_files = 0
        self.changed: OrderedDict[Buffer, None] = OrderedDict()
        self.failed = 0

    def due(self, quiet_period: float, now: float) -> tuple[list[Buffer], float | None]:
        """The buffers to commit now, oldest first, and the seconds until the next one
        falls due (None: none will). Reads from the front and stops at the first buffer
        whose quiet period has not run: every one after it changed later. A failure's
        retry time does not follow that order, so while any buffer is FAILED all are
        read (failures are rare and retried every few seconds); buffers with a turn
        queued are due at once and kept at the front."""
        ready: list[Buffer] = []
        wait: float | None = None
        for buf in self.changed:
            if buf.state is State.COMMITTING:
                continue  # its landing wakes the committer if it stays pending
            left = buf.due_in(quiet_period, now)
            if left <= 0:
                ready.append(buf)
                continue
            wait = left if wait is None else min(wait, left)
            # (One with a turn queued is at the front whenever it last changed.)
            if not self.failed and not buf.turns and buf.last_write + quiet_period > now:
                break
        return ready, wait

    def oldest_dirty(self, but: Buffer) -> Buffer | None:
        """The DIRTY buffer changed longest ago, other than ``but``."""
        return next((b for b in self.changed if b is not but and b.state is State.DIRTY), None)

    def check(self, buffers: Iterable[Buffer]) -> None:
        """Raise IllegalTransition unless the counts equal the sums over ``buffers``
        (the owner's live ones) and ``changed`` holds exactly those with changes."""
        bufs = list(buffers)
        for b in bufs:
            ends = [t.end for t in b.turns]
            if ends != sorted(set(ends)) or (ends and ends[-1] > len(b.data)):
                raise IllegalTransition(
                    f"{b.path}: turns ending at {ends} in {len(b.data)} bytes",
                    state=b.state.value,
                    move="check",
                )
        want = (
            sum(len(b.data) for b in bufs),
            sum(b.base_size for b in bufs),
            sum(b.created for b in bufs),
            {id(b) for b in bufs if b.state is not State.CLEAN},
            sum(b.state is State.FAILED for b in bufs),
        )
        have = (
            self.bytes,
            self.base_bytes,
            self.new_files,
            {id(b) for b in self.changed},
            self.failed,
        )
        if have != want:
            raise IllegalTransition(
                f"the write path's counts {have[:3]}, {len(have[3])} changed and"
                f" {have[4]} failed are not its buffers' {want[:3]}, {len(want[3])}"
                f" and {want[4]}",
                state="tally",
                move="check",
            )


@dataclass(frozen=True, slots=True)
class Turn:
    """The bytes one writer appended up to ``end`` (from the turn before it, or the
    base), closed when another writer appended after them: a revision of their own."""

    end: int
    author: str
    act: Act
    writer: Writer | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A buffer as :meth:`Buffer.begin_commit` froze it: everything its landing needs,
    so the landing can run while the buffer takes more writes."""

    ident: int
    path: str
    # The buffer's own bytearray for a large buffer (LEND_AT): nobody may change it, the
    # buffer included (it copies before its next change).
    data: bytes | bytearray
    author: str
    act: Act
    writer: Writer | None
    base_rev: int
    landing_base: int
    base_size: int
    shape: Shape
    mode: int
    created: bool
    uid: int | None
    gid: int | None
    gen: int
    # An mtime set explicitly (utimens) after the last write: it lands with the content.
    mtime_ns: int | None = None
    # When the last write was made: what stat showed while it was pending, and the mtime
    # it lands with when it lands as made (a program that stat()s the file around the
    # commit, as vim does before it saves, must not see it change).
    written_ns: int | None = None
    # Turns queued before the last writer's bytes (each lands first, as its own revision).
    turns: tuple[Turn, ...] = ()
    # What the change was built on when that is no stored revision (Buffer.read_view).
    read_view: bytes | None = None

    @property
    def program(self) -> str:
        """The program a conflict copy is named after (``NAME.conflict-STAMP-PROGRAM``):
        its writer's, or for a buffer saved from a journal the one its actor names,
        ``"USER (PROGRAM)"``."""
        if self.writer is not None:
            return self.writer.program
        return self.author.rpartition(" (")[2].removesuffix(")")


class Buffer:
    """The pending content of one file, and what its writer did to the base.

    ``base_rev``/``base_size``: the store's revision and size the buffer was loaded from
    (0 for a file ``created`` here). ``whole``: the writer replaced the file whole
    (created it, or truncated it to nothing). ``low``: the lowest offset any write or
    truncate touched; everything below it is still the base's bytes. Together they give
    the change's :attr:`shape`, which decides how it lands on a moved base.
    ``read_rev``: for a whole save, the revision its writer read before (older than
    ``base_rev`` when another writer committed since): the base it merges against, or
    ``read_view`` is, when set: what its writer held instead (memfs.mount.reads).

    Read its fields freely; change them only through its methods (the moves).
    """

    __slots__ = (
        "_failure",
        "_gen",
        "_lent",
        "_retry_at",
        "_snap_gen",
        "_snap_len",
        "_snap_turns",
        "_split_until",
        "_state",
        "_tally",
        "act",
        "author",
        "base_rev",
        "base_size",
        "created",
        "data",
        "gid",
        "ident",
        "last_write",
        "low",
        "mode",
        "mtime_ns",
        "path",
        "read_rev",
        "read_view",
        "set_mtime_ns",
        "turns",
        "uid",
        "whole",
        "writer",
    )

    def __init__(
        self,
        tally: Tally,
        *,
        ident: int,
        path: str,
        data: bytes | bytearray,
        author: str,
        base_rev: int,
        mode: int,
        created: bool,
        base_size: int = 0,
        whole: bool = False,
        low: int = -1,
        uid: int | None = None,
        gid: int | None = None,
        writer: Writer | None = None,
        act: Act | None = None,
        read_rev: int | None = None,
        read_view: bytes | None = None,
        dirty: bool = True,
        turns: tuple[Turn, ...] = (),
    ) -> None:
        self.ident = ident
        self.path = path
        self.data = bytearray(data)
        self.author = author  # the writer's actor ("root (vim)"), as the journal keeps it
        # The process whose changes the buffer holds (one revision per writer) and the
        # operation they belong to (its burst); None for a buffer saved from a journal.
        self.writer = writer
        self.act = act
        self.base_rev = base_rev
        self.base_size = base_size
        self.mode = mode
        self.created = created
        self.whole = whole
        self.low = base_size if low < 0 else low
        self.uid = uid
        self.gid = gid
        self.read_rev = read_rev
        self.read_view = read_view if read_rev is not None else None
        self.last_write = time.monotonic()
        self.mtime_ns = time.time_ns()
        # An mtime set by utimens after the last write (None: the commit's own time).
        self.set_mtime_ns: int | None = None
        self._state = State.DIRTY if dirty or created else State.CLEAN
        self._failure: BaseException | None = None
        self._retry_at = 0.0
        self._gen = 0
        self._snap_len = 0
        self._snap_gen = 0
        # Turns queued before the bytes of ``author`` at the end (see Turn), and those a
        # landing in flight holds (back in the queue if it fails).
        self.turns = turns
        self._snap_turns: tuple[Turn, ...] = ()
        self._lent = False  # self.data is a snapshot's too: copy it before changing it
        self._split_until = 0.0  # the last write may be the first part of one (SPLIT_GRACE)
        self._tally = tally
        tally.bytes += len(self.data)
        tally.base_bytes += base_size
        tally.new_files += created
        if self._state is State.DIRTY:
            tally.changed[self] = None

    # --- what it is ----------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self._state

    @property
    def failure(self) -> BaseException | None:
        """Why its last landing failed (FAILED), else None."""
        return self._failure

    @property
    def dirty(self) -> bool:
        """Whether it holds changes the store has not got (whatever is in flight)."""
        return self._state is not State.CLEAN

    @property
    def landing_base(self) -> int:
        """The revision the change lands against (see :func:`memfs.store.rebase.land`)."""
        return self.base_rev if self.read_rev is None else self.read_rev

    @property
    def shape(self) -> Shape:
        if self.created or self.whole:
            return Shape.WHOLE
        return Shape.APPEND if self.low >= self.base_size else Shape.EDIT

    def due_in(self, quiet_period: float, now: float) -> float:
        """Seconds until the owner should commit it (a failure: until its retry; a
        queued turn: at once, but for a write that may have more to come)."""
        if self._state is State.FAILED:
            return self._retry_at - now
        if self.turns:
            return self._split_until - now
        return max(self.last_write + quiet_period, self._split_until) - now

    @property
    def queued_end(self) -> int:
        """Where the last queued turn ends (0: none queued)."""
        return self.turns[-1].end if self.turns else 0

    def can_queue(self, low: int) -> bool:
        """Whether another writer's change whose lowest offset is ``low`` may queue
        behind what this buffer holds rather than wait for it to land: an append at the
        end of a change that is itself only appends, with room in the queue."""
        return (
            self._state in (State.DIRTY, State.COMMITTING)
            and self.shape is Shape.APPEND
            and low >= len(self.data)
            and len(self.turns) < MAX_TURNS
        )

    def changed_since_snapshot(self) -> bool:
        """COMMITTING: whether writes arrived after the snapshot now landing."""
        return self._state is State.COMMITTING and self._gen != self._snap_gen

    def takes_while_committing(self, low: int) -> bool:
        """COMMITTING: whether a change whose lowest offset is ``low`` leaves the bytes
        being landed alone (it goes past them), so it need not wait for the landing."""
        return self._state is State.COMMITTING and low >= max(self._snap_len, self.queued_end)

    # --- moves -----------------------------------------------------------------------------
    def _expect(self, move: str, *states: State) -> None:
        if self._state not in states:
            raise IllegalTransition(
                f"{self.path}: a {self._state.value} buffer cannot {move}",
                state=self._state.value,
                move=move,
            )

    def take_over(self, writer: Writer, act: Act) -> None:
        """The next change is ``writer``'s, in ``act`` (one revision per writer)."""
        self._expect("change hands", State.CLEAN, State.DIRTY, State.COMMITTING)
        self.author, self.writer, self.act = writer.actor, writer, act

    def queue_turn(self, writer: Writer, act: Act) -> Turn | None:
        """DIRTY or COMMITTING: close the bytes of the writer at the end as a turn of
        its own and let ``writer`` append after them, in ``act`` (the caller asked
        :meth:`can_queue`). Returns the turn queued (None: that writer had no bytes
        since the last turn, so it just hands over). While COMMITTING the turn also
        marks where the snapshot's writer ended: back in the queue if the landing
        fails, it keeps their bytes theirs."""
        self._expect("queue a turn", State.DIRTY, State.COMMITTING)
        # Where the writer at the end began: after the last turn, queued or landing.
        floor = self.queued_end or (
            self._snap_turns[-1].end if self._snap_turns else self.base_size
        )
        turn = None
        if len(self.data) > floor:
            turn = Turn(len(self.data), self.author, self.act or Act(self.author), self.writer)
            self.turns += (turn,)
            if self._state is State.DIRTY:
                self._tally.changed.move_to_end(self, last=False)  # due now
        self.author, self.writer, self.act = writer.actor, writer, act
        return turn

    def _changed(self, low: int) -> None:
        if self._state is State.COMMITTING and low < self._snap_len:
            raise IllegalTransition(
                f"{self.path}: a change below the bytes being landed must wait for them",
                state=self._state.value,
                move="change landing bytes",
            )
        if low < self.queued_end:
            raise IllegalTransition(
                f"{self.path}: a change below a queued turn must wait for it to land",
                state=self._state.value,
                move="change queued bytes",
            )
        if self._state is State.CLEAN:
            self._state = State.DIRTY
            self._tally.changed[self] = None
        else:
            # A buffer with a turn queued is due now: at the front, where the committer
            # looks first (Tally.due).
            self._tally.changed.move_to_end(self, last=not self.turns)
        self.low = min(self.low, low)
        self._gen += 1
        self.last_write = time.monotonic()
        self.mtime_ns = time.time_ns()
        self.set_mtime_ns = None  # a write moves the mtime

    def write(self, offset: int, data: bytes, *, more_may_come: bool = False) -> None:
        """``data`` at ``offset`` (a hole before it reads as zeros). ``more_may_come``:
        the kernel's request ended on a page boundary, so it may be the first part of
        one write(2) (see SPLIT_GRACE); the committer waits a moment for the rest."""
        self._expect("take a write", State.CLEAN, State.DIRTY, State.COMMITTING)
        self._changed(offset)
        self._own()
        old = len(self.data)  # before a hole is filled in: it counts too
        if offset > old:
            self.data.extend(b"\0" * (offset - old))
        self.data[offset : offset + len(data)] = data
        self._tally.bytes += len(self.data) - old
        self._split_until = self.last_write + SPLIT_GRACE if more_may_come else 0.0

    def truncate(self, size: int) -> None:
        """Cut or extend to ``size``; to nothing, the change becomes a whole save."""
        self._expect("be truncated", State.CLEAN, State.DIRTY, State.COMMITTING)
        self._changed(size)
        emptied = size == 0 and not self.created and (len(self.data) > 0 or self.base_size > 0)
        self._split_until = self.last_write + SAVE_GRACE if emptied else 0.0
        self._own()
        old = len(self.data)
        if size < old:
            del self.data[size:]
        else:
            self.data.extend(b"\0" * (size - old))
        self._tally.bytes += size - old
        self.whole = self.whole or size == 0  # all of the base is gone: a rewrite

    def set_mode(self, mode: int) -> None:
        """The mode of a file created here, going into its first commit."""
        self._expect("take a mode", State.DIRTY)
        if not self.created:
            raise IllegalTransition(
                f"{self.path}: only a new file's mode joins its commit",
                state=self._state.value,
                move="take a mode",
            )
        self._gen += 1
        self.mode = mode

    def set_owner(self, uid: int | None, gid: int | None) -> None:
        """The owner of a file created here (None: unchanged), going into its commit."""
        self._expect("take an owner", State.DIRTY)
        if not self.created:
            raise IllegalTransition(
                f"{self.path}: only a new file's owner joins its commit",
                state=self._state.value,
                move="take an owner",
            )
        self._gen += 1
        self.uid = self.uid if uid is None else uid
        self.gid = self.gid if gid is None else gid

    def set_mtime(self, mtime_ns: int) -> None:
        """The mtime a utimens gave the pending change, going into its commit (tar and
        rsync set it right after closing the file: no second store change for it)."""
        self._expect("take an mtime", State.DIRTY)
        self._gen += 1
        self.mtime_ns = self.set_mtime_ns = mtime_ns

    def hurry(self, quiet_period: float) -> None:
        """Make a DIRTY buffer due now (another writer changed its file)."""
        if self._state is State.DIRTY:
            # Not 0.0: the monotonic clock starts near zero at boot, and on a machine up
            # for less than a quiet period 0.0 is not long ago.
            self.last_write = time.monotonic() - quiet_period
            self._tally.changed.move_to_end(self, last=False)

    def begin_commit(self) -> Snapshot:
        """DIRTY or FAILED (a retry) -> COMMITTING: freeze what lands."""
        self._expect("begin a commit", State.DIRTY, State.FAILED)
        self._tally.failed -= self._state is State.FAILED
        if self.act is None:
            self.act = Act(self.author)  # a retry after a failure stays in this operation
        self._state = State.COMMITTING
        self._snap_len = len(self.data)
        self._snap_gen = self._gen
        self._snap_turns, self.turns = self.turns, ()
        self._lent = len(self.data) >= LEND_AT
        return Snapshot(
            ident=self.ident,
            path=self.path,
            data=self.data if self._lent else bytes(self.data),
            author=self.author,
            act=self.act,
            writer=self.writer,
            base_rev=self.base_rev,
            landing_base=self.landing_base,
            base_size=self.base_size,
            shape=self.shape,
            mode=self.mode,
            created=self.created,
            uid=self.uid,
            gid=self.gid,
            gen=self._gen,
            mtime_ns=self.set_mtime_ns,
            written_ns=self.mtime_ns,
            turns=self._snap_turns,
            read_view=self.read_view,
        )

    def landed(
        self, snap: Snapshot, entry: Entry, *, ident: int, content: bytes | None = None
    ) -> bool:
        """COMMITTING -> LANDED (True: nothing changed since ``snap``; the owner lets it
        go) or DIRTY (False): the changes since stay pending, built on ``entry``, the
        revision that landed, as journal buffer ``ident``. ``content``: what landed when
        it is not the snapshot's bytes (a rebase or merge); the bytes written past the
        snapshot then follow it, as appends do."""
        self._expect("land", State.COMMITTING)
        self._snap_turns = ()
        if snap.gen == self._gen:
            self._leave(State.LANDED)
            return True
        base_size = len(snap.data)
        # Turns queued since, past what landed (one ending there only marked where the
        # snapshot's writer stopped), follow the content that landed.
        moved = 0 if content is None else len(content) - base_size
        self.turns = tuple(
            Turn(t.end + moved, t.author, t.act, t.writer) for t in self.turns if t.end > base_size
        )
        if content is not None:
            self._own()
            tail = self.data[base_size:]
            before = len(self.data)
            self.data[:] = content
            self.data += tail
            self._tally.bytes += len(self.data) - before
            base_size = len(content)
        self._tally.base_bytes += base_size - self.base_size
        self._tally.new_files -= self.created
        self.ident = ident
        self.created = False
        self.whole = False
        self.read_rev = self.read_view = None
        self.base_rev = entry.rev
        self.base_size = base_size
        # Only changes past the snapshot were let in (takes_while_committing): an append.
        self.low = base_size
        self._failure = None
        self._state = State.DIRTY
        return False

    def _own(self) -> None:
        """Make ``self.data`` this buffer's alone before it changes (see LEND_AT)."""
        if self._lent:
            self.data = bytearray(self.data)
            self._lent = False

    def unfreeze(self) -> None:
        """COMMITTING -> DIRTY: the landing was refused before anything was written and
        its caller reports that itself (a save under another name that the rename's
        own error answers); the buffer is as it was."""
        self._expect("unfreeze", State.COMMITTING)
        if self._gen != self._snap_gen:
            raise IllegalTransition(
                f"{self.path}: changed while landing; only a landing can settle it",
                state=self._state.value,
                move="unfreeze",
            )
        self._state = State.DIRTY if self._failure is None else State.FAILED
        self._tally.failed += self._state is State.FAILED
        self.turns, self._snap_turns = self._snap_turns + self.turns, ()

    def commit_failed(self, exc: BaseException, retry_at: float) -> bool:
        """COMMITTING -> FAILED; True the first time (the owner keeps one copy: writes to
        a failed file are refused, so its data cannot change until it lands)."""
        self._expect("fail", State.COMMITTING)
        first = self._failure is None
        self._failure = exc
        self._retry_at = retry_at
        self._state = State.FAILED
        self._tally.failed += 1
        # Each turn still lands as its own revision when the retry does.
        self.turns, self._snap_turns = self._snap_turns + self.turns, ()
        return first

    def discard(self) -> None:
        """CLEAN, DIRTY or FAILED -> DROPPED: its changes are not wanted any more."""
        self._expect("be dropped", State.CLEAN, State.DIRTY, State.FAILED)
        self._tally.failed -= self._state is State.FAILED
        self._leave(State.DROPPED)

    def _leave(self, state: State) -> None:
        self._tally.bytes -= len(self.data)
        self._tally.base_bytes -= self.base_size
        self._tally.new_files -= self.created
        self._tally.changed.pop(self, None)
        self._state = state
