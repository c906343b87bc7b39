"""One small JSON file per running mount, so any memfs process can find the daemon and
the store behind a mounted directory.

The files live in ``$MEMFS_STATE_DIR`` (tests point it at a temporary directory) or else
in the per-user state directory (``~/.local/state/memfs/mounts``), beside each daemon's
log, control socket and journals. The serving process writes its record once the mount
is up and removes it when it stops; a record whose daemon died (``kill -9``, a reboot)
is *stale*: :func:`scan` reports it and deletes it (the directory of records:
:mod:`memfs.records`).

Also here, because the CLI and the agent must agree on it: :func:`default_mountpoint`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfs import __version__, host
from memfs.errors import MountError
from memfs.private import private_dir, write_private
from memfs.procs import pid_alive as pid_alive
from memfs.procs import runs_since
from memfs.records import STATE_DIR_ENV as STATE_DIR_ENV
from memfs.records import RecordDir, record_name

MOUNTPOINT_ENV = "MEMFS_MOUNTPOINT"


@dataclass(frozen=True, slots=True)
class MountRecord:
    """What the serving process says about itself."""

    mountpoint: str  # absolute, symlinks resolved
    store_url: str
    pid: int
    log_path: str
    started: float  # seconds since the epoch
    version: str = __version__
    # Files the daemon acknowledged but could not save yet (kept in its journal and a
    # copy under recovery_dir), and unexpected errors it logged: `memfs status` shows them.
    unsaved: tuple[str, ...] = ()
    errors: int = 0
    recovery_dir: str = ""
    # Set while the daemon cannot reach its store (a server away); it reconnects itself.
    store_problem: str = ""
    store_down_since: float = 0.0
    # The store's own URL (Store.url: one spelling per store), so that other doors can
    # find every mount of the store they change; "" from a daemon before this field.
    store_id: str = ""
    # The store's storage went away under the mount, and where memfs saved what it held.
    lost: str = ""
    # Writes that met another writer's change to the same bytes: "PATH -> COPY".
    conflicts: tuple[str, ...] = ()
    # The store directory mounted as the root (`memfs mount --subtree`), "" for the root.
    subtree: str = ""

    @property
    def alive(self) -> bool:
        """The daemon still runs: its pid is alive and is not a newer process that was
        given the same number after the daemon died (it must predate the record)."""
        return runs_since(self.pid, self.started)


def _parse(data: dict[str, Any]) -> MountRecord:
    return MountRecord(
        mountpoint=str(data["mountpoint"]),
        store_url=str(data["store_url"]),
        pid=int(data["pid"]),
        log_path=str(data["log_path"]),
        started=float(data["started"]),
        version=str(data.get("version", "")),
        unsaved=tuple(str(p) for p in data.get("unsaved", ())),
        errors=int(data.get("errors", 0)),
        recovery_dir=str(data.get("recovery_dir", "")),
        store_problem=str(data.get("store_problem", "")),
        store_down_since=float(data.get("store_down_since", 0.0)),
        store_id=str(data.get("store_id", "")),
        lost=str(data.get("lost", "")),
        conflicts=tuple(str(c) for c in data.get("conflicts", ())),
        subtree=str(data.get("subtree", "")),
    )


def _refuse(base: Path, exc: OSError) -> MountError:
    return MountError(
        f"Cannot create the memfs state directory {base}: {exc.strerror}; "
        f"set {STATE_DIR_ENV} to a writable directory."
    )


_RECORDS = RecordDir(default="mounts", override="", parse=_parse, refuse=_refuse)


def state_dir() -> Path:
    """Where the records and daemon logs live (created on demand)."""
    return _RECORDS.path()


def default_mountpoint() -> Path:
    """The directory ``memfs mount`` uses when none is given: ``$MEMFS_MOUNTPOINT`` or
    ``~/memories``. Fixed per user so that ``memfs agent`` finds it without arguments."""
    override = os.environ.get(MOUNTPOINT_ENV)
    return normalize(override) if override else normalize(Path.home() / "memories")


# What normalize() answered in this process, the answer included (it is its own
# normal form). A daemon normalizes its mountpoint before it mounts there; afterwards
# realpath's lstat of that path would be a request to the daemon itself, from its own
# thread (the committer publishing its health): killed while another of its threads
# held that request, the daemon could never exit, and its mount would hang every
# process that touched it. Symlinks are resolved once per process.
_NORMAL: dict[str, Path] = {}
_NORMAL_LOCK = threading.Lock()


def normalize(path: str | os.PathLike[str]) -> Path:
    """The absolute, symlink-free form of ``path`` used as the record key.

    Works on a dead mount too: realpath tolerates the ENOTCONN its lstat gets.
    """
    given = os.path.abspath(os.path.expanduser(os.fspath(path)))
    with _NORMAL_LOCK:
        known = _NORMAL.get(given)
    if known is not None:
        return known
    found = Path(os.path.realpath(given))
    with _NORMAL_LOCK:
        _NORMAL[given] = _NORMAL[str(found)] = found
    return found


def _key(mountpoint: Path) -> str:
    return record_name(str(mountpoint), str(mountpoint))


def record_path(mountpoint: str | os.PathLike[str]) -> Path:
    return _RECORDS.file(_key(normalize(mountpoint)))


def log_path(mountpoint: str | os.PathLike[str]) -> Path:
    return state_dir() / f"{_key(normalize(mountpoint))}.log"


def journal_dir(store_url: str) -> Path:
    """Where mounts of ``store_url`` journal acknowledged writes (one file per daemon),
    so that the next mount of the same store finds what a dead daemon left."""
    digest = hashlib.sha256(store_url.encode("utf-8", "surrogateescape")).hexdigest()
    return state_dir() / "journal" / digest[:24]


def journal_dirs() -> dict[str, Path]:
    """Every store that has a journal directory here, by URL (see :func:`mark_journal`)."""
    out = {}
    for d in sorted((state_dir() / "journal").glob("*/")):
        with contextlib.suppress(OSError):
            out[(d / "store-url").read_text().strip()] = d
    return out


def mark_journal(store_url: str) -> Path:
    """Create the journal directory of ``store_url``, labelled with the URL so that
    `memfs status` can say which store a left-over journal belongs to."""
    d = private_dir(journal_dir(store_url))
    label = d / "store-url"
    if not label.exists():
        write_private(label, store_url + "\n")  # the URL may hold a password: 0600
    return d


def control_path(mountpoint: str | os.PathLike[str]) -> Path:
    """The daemon's control socket (:mod:`memfs.mount.control`)."""
    return state_dir() / f"{_key(normalize(mountpoint))}.sock"


def report_path(mountpoint: str | os.PathLike[str]) -> Path:
    """What a daemon could not save when it stopped, for `memfs umount` to tell."""
    return state_dir() / f"{_key(normalize(mountpoint))}.unsaved"


def write(record: MountRecord) -> None:
    """Store ``record`` atomically (a reader never sees half a file)."""
    _RECORDS.write(_key(normalize(record.mountpoint)), record)


def remove(mountpoint: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Delete the record of ``mountpoint``; with ``pid``, only if that daemon owns it (a
    daemon shutting down must not delete the record of the one that replaced it)."""
    key = _key(normalize(mountpoint))
    _RECORDS.remove(key, unless=None if pid is None else (lambda current: current.pid != pid))


def scan() -> tuple[list[MountRecord], list[MountRecord]]:
    """``(live, stale)`` records sorted by mountpoint; stale and unreadable records are
    deleted as they are found, so each stale one is reported once, except one whose
    daemon left something to clear up: a dead mount still in the mount table, or files
    written into its directory since (memfs.mount.leftovers). That record says which
    store to mount there again, so it stays until a mount or umount there."""
    live, stale = _RECORDS.scan(lambda r: r.mountpoint)
    for record in stale:
        if left_behind(Path(record.mountpoint)):
            write(record)
    return live, stale


def left_behind(mountpoint: Path) -> bool:
    """Whether a dead daemon's ``mountpoint`` is still mounted or holds files."""
    if host.mount_entry(mountpoint) is not None:
        return True
    try:
        return any(mountpoint.iterdir())
    except FileNotFoundError:
        return False
    except OSError:
        return True  # ENOTCONN and the like: a mount after all


def records() -> list[MountRecord]:
    """The live mounts (stale records are cleaned on the way)."""
    return scan()[0]


def lookup(path: str | os.PathLike[str], *, include_stale: bool = False) -> MountRecord | None:
    """The live mount serving ``path``: its mountpoint or any path inside it (the deepest
    mountpoint wins when mounts nest). ``include_stale`` also returns a record whose
    daemon died, without deleting it."""
    target = normalize(path)
    best: MountRecord | None = None
    for record in _RECORDS.each(include_stale=include_stale):
        mp = Path(record.mountpoint)
        if (target == mp or mp in target.parents) and (
            best is None or len(mp.parts) > len(Path(best.mountpoint).parts)
        ):
            best = record
    return best


def new_record(
    mountpoint: Path, store_url: str, log: Path, store_id: str = "", subtree: str = ""
) -> MountRecord:
    return MountRecord(
        mountpoint=str(mountpoint),
        store_url=store_url,
        pid=os.getpid(),
        log_path=str(log),
        started=time.time(),
        store_id=store_id,
        subtree=subtree,
    )


def store_path(record: MountRecord, inside: str) -> str:
    """The store path of ``inside``, a path relative to ``record``'s mountpoint."""
    if not record.subtree:
        return inside
    return f"{record.subtree}/{inside}" if inside else record.subtree
