"""Mount options: how the mount trades freshness, durability and speed (no FUSE import)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MountOptions:
    """How the mount trades freshness, durability and speed.

    attr_timeout / entry_timeout: seconds the kernel trusts cached attributes and names.
        Long is safe because other writers' changes are invalidated from the change feed.
    negative_timeout: 0 so a name created elsewhere is found at once.
    commit_quiet_period: a buffered write reaches the store this long after the last
        write to that file (fsync commits at once). Every commit is one atomic revision
        of the whole file. A crash loses nothing acknowledged: the journal holds every
        write until its commit (see memfs.mount.writes). The price of not hearing
        close() in no-open mode: a program that stalls longer than this in the middle of
        rewriting a file gets that intermediate state committed as a revision.
    commit_on_close: also commit on every close() (registers FLUSH: one Python callback
        per close, read-only opens included). close() then means committed.
    poll_interval: how often the change feed is read; bounds staleness for readers.
    cache_readdir: ask the kernel to keep directory listings (registers opendir). None
        (default) means on with libfuse >= 3.16 and off before: older high-level APIs
        drop the flag (libfuse issue #821, fixed by PR #822), so it would only cost an
        opendir callback per directory. Listings are cached in the daemon either way.
    journal_dir: where the daemon journals acknowledged writes until they are committed
        (and where a dead daemon's journal is found); None picks the state directory's
        ``journal/<store>`` (see memfs.mount.fuse.serve).
    max_pending_bytes: the most data held for commit at once; past it, writes commit
        other files first, then answer ENOSPC (the daemon's memory stays bounded).
    auto_unmount: let fusermount3 take the mount away when the daemon dies. Off: a
        dead daemon leaves a mount that answers ENOTCONN ("Transport endpoint is not
        connected"), so a write after a crash fails loudly instead of landing in the
        bare directory under it; ``memfs mount`` clears the dead mount (after saving
        the journal) and ``memfs status`` names it.
    allow_other: let other users use the mount (with default_permissions, so the kernel
        checks modes); their new entries are recorded as theirs.
    expire_unused_for_ns: delete files unused this long (no write, no model read) on a
        schedule in the daemon (see memfs.mount.expiry); None: never.
    callback_counter: if given, every callback increments it, and its ``<name>.ns`` key
        by the nanoseconds spent inside the operation (benchmarks).
    """

    attr_timeout: float = 60.0
    entry_timeout: float = 60.0
    negative_timeout: float = 0.0
    commit_quiet_period: float = 0.1
    commit_on_close: bool = False
    poll_interval: float = 0.1
    cache_readdir: bool | None = None
    auto_unmount: bool = False
    allow_other: bool = False
    journal_dir: str | None = None
    max_pending_bytes: int = 256 << 20
    expire_unused_for_ns: int | None = None
    callback_counter: Counter[str] | None = None
