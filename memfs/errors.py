"""Every exception memfs raises, in one tree.

Library code raises these typed errors; only the edges turn them into something else:
the handler into the contract's strings for the model, the FUSE operations into errno
values, the CLI into one line for a person. Nothing below the CLI prints.

    MemfsError
    ├── PathError               a model path (or a name a person made) the gate refuses
    │   └── PathTooLong         ... because a name, the path or its depth is over a limit
    ├── StoreError              anything a store refuses or cannot do
    │   ├── NotFound            no entry at that path
    │   │   └── Redacted        ... the revision asked for was redacted (its content is gone)
    │   ├── AlreadyExists       an entry is in the way (create, mkdir, rename)
    │   ├── NotADirectory       a file where a directory is needed
    │   ├── IsADirectory        a directory where a file is needed
    │   ├── DirectoryNotEmpty   a non-recursive delete of a non-empty directory
    │   ├── Conflict            a write's expected revision is no longer current
    │   ├── TooLarge            a file over the configured size cap
    │   ├── CapExceeded         the tree would pass max_tree_bytes or max_files
    │   ├── InvalidMove         a directory moved into itself, or the root moved
    │   ├── Damaged             stored bytes no longer match their SHA-256 (path, rev named)
    │   └── StoreUnavailable    the store cannot be opened or used
    │       ├── StoreFull       the disk (or the server) holding the store has no room
    │       ├── CorruptStore    the file is damaged or is not a memfs store
    │       ├── UnknownScheme   no backend registered for the URL's scheme
    │       ├── ReadOnlyStore   a mutation of a store opened read-only
    │       └── NoSuchTree      a read-only open of a PostgreSQL tree that is not there
    ├── ActorError              an actor name that is empty, too long or not printable
    ├── QueryError              a search query that is empty, not a regex RE2 runs, or
    │                           past its time budget
    ├── MountError              the daemon cannot mount, unmount or find a mount
    │   └── IllegalTransition   ... a write buffer asked for a move its states do not allow
    ├── SyncError               the mirror cannot start or go on
    ├── TransferError           an export or import that cannot be done as asked
    │   ├── ImportRefused       ... the source holds what memfs would refuse (listed)
    │   └── OverLimit           ... the source brings more than an import takes
    │       └── Bomb            ... it expands past the compression-ratio limit
    ├── AgentError              the agent loop cannot start or go on
    │   └── ClaudeCodeError     ... `memfs claude-code` cannot share a repository's memory
    ├── HttpError               an HTTP door (mcp --http, web) cannot listen as asked
    ├── McpError                the MCP server cannot start (address, port, options)
    └── WebError                memfs web cannot start or serve as asked
"""

from __future__ import annotations


class MemfsError(Exception):
    """Base of every memfs error; its message is meant for a person or the model."""


class PathError(MemfsError):
    """A path or name the gate refuses; the message says why in one sentence."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class PathTooLong(PathError):
    """Over the gate's length or depth limits (the mount answers ENAMETOOLONG)."""


class ActorError(MemfsError, ValueError):
    """An actor name no change may carry; the message says why in one line."""


class QueryError(MemfsError, ValueError):
    """A search query memfs cannot run; the message says why in one sentence."""


class StoreError(MemfsError):
    """A store refused an operation or could not perform it."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class NotFound(StoreError):
    pass


class Redacted(NotFound):
    """The revision's content was removed for good; ``by`` and ``time_ns`` say by whom
    and when (the record of the revision itself stays)."""

    def __init__(self, message: str, *, path: str = "", by: str = "", time_ns: int = 0) -> None:
        super().__init__(message, path=path)
        self.by = by
        self.time_ns = time_ns


class AlreadyExists(StoreError):
    pass


class NotADirectory(StoreError):
    pass


class IsADirectory(StoreError):
    pass


class DirectoryNotEmpty(StoreError):
    pass


class Conflict(StoreError):
    """The file changed since the caller read it (its revision moved on)."""


class TooLarge(StoreError):
    pass


class CapExceeded(StoreError):
    """A mutation would take the tree past one of the store's caps, so nothing changed.

    ``cap`` is the option's name (``max_tree_bytes`` or ``max_files``), ``limit`` its
    value and ``would`` what the tree would have held. The mount answers EDQUOT.
    """

    def __init__(self, message: str, *, path: str = "", cap: str, limit: int, would: int) -> None:
        super().__init__(message, path=path)
        self.cap = cap
        self.limit = limit
        self.would = would


class InvalidMove(StoreError):
    pass


class Damaged(StoreError):
    """Stored content no longer matches the SHA-256 recorded when it was written (a
    failing disk, a torn copy, a hand edit): the store refuses to return wrong bytes.
    ``path`` and ``rev`` name a revision holding it, ``sha256`` the hash it should have."""

    def __init__(self, message: str, *, path: str = "", rev: int = 0, sha256: str = "") -> None:
        super().__init__(message, path=path)
        self.rev = rev
        self.sha256 = sha256


class StoreUnavailable(StoreError):
    """The store cannot be opened or used.

    When using another store is one way out (the file is damaged, is not a memfs store,
    lies in a read-only place), ``remedy`` says what else helps ("" if nothing) and the
    message ends "...; {remedy} or use another store". Only the caller knows where the
    URL came from (an option, an environment variable, a default), so :meth:`advice`
    lets it say how to choose another one instead. ``remedy=None``: another store is no
    answer (busy, a full disk, a closed handle), the message stands as given.
    """

    def __init__(self, message: str, *, path: str = "", remedy: str | None = None) -> None:
        self.problem = message
        self.remedy = remedy
        super().__init__(self.advice("use another store"), path=path)

    def advice(self, elsewhere: str) -> str:
        """The one-line message, with ``elsewhere`` saying how to choose another store."""
        if self.remedy is None:
            return self.problem
        if not self.remedy:
            return f"{self.problem}; {elsewhere}"
        return f"{self.problem}; {self.remedy} or {elsewhere}"


class StoreFull(StoreUnavailable):
    pass


class CorruptStore(StoreUnavailable):
    pass


class UnknownScheme(StoreUnavailable):
    pass


class ReadOnlyStore(StoreUnavailable):
    """A mutation (or housekeeping that writes) of a store opened with ``readonly=True``."""


class NoSuchTree(StoreUnavailable):
    """A read-only open named a PostgreSQL tree the database does not hold; ``trees``
    lists the ones it does (the message names them too)."""

    def __init__(self, message: str, *, trees: list[str], remedy: str | None = None) -> None:
        super().__init__(message, remedy=remedy)
        self.trees = trees


class MountError(MemfsError):
    pass


class IllegalTransition(MountError):
    """A write buffer was asked to move between two states its diagram does not join
    (:mod:`memfs.mount.buffer`): a bug in the write path, never a person's doing."""

    def __init__(self, message: str, *, state: str, move: str) -> None:
        super().__init__(message)
        self.state = state
        self.move = move


class SyncError(MemfsError):
    pass


class AgentError(MemfsError):
    pass


class ClaudeCodeError(AgentError):
    """``memfs claude-code`` cannot do as asked: no git work tree, a settings file it
    must not overwrite, a memory file the store cannot hold."""


class TransferError(MemfsError):
    """An export or import that cannot be done: a destination in the way, a source that
    is no tree or archive memfs reads, history into a store that is not empty."""


class ImportRefused(TransferError):
    """The source holds entries memfs would refuse (names the gate refuses, links,
    traversal, conflicts with the store); ``problems`` lists each one as one line, and
    nothing was imported."""

    def __init__(self, message: str, *, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


class OverLimit(TransferError):
    """An import source over a limit (a file's size, all files' bytes, the number of
    entries); nothing was imported."""


class Bomb(OverLimit):
    """A compressed source that expands past the ratio limit: ``packed`` bytes read
    made ``out`` bytes (a compression bomb)."""

    def __init__(self, message: str, *, packed: int, out: int) -> None:
        super().__init__(message)
        self.packed, self.out = packed, out


class HttpError(MemfsError):
    """An HTTP door cannot listen as asked (a bad address, a port in use); one line."""


class WebError(MemfsError):
    """``memfs web`` cannot start or serve as asked; the message says why in one line."""


class McpError(MemfsError):
    """The MCP server cannot start or serve as asked; the message says why in one line."""
