"""The sync-state record: what both sides held at the last sync, per path.

It lives outside the tree, in ``user_state_dir("memfs")/sync/<hash>.json`` where the
hash is of DIR's absolute path and the store URL, so wiping DIR (even its hidden files)
cannot take the record with it, and one DIR may be mirrored to two stores. It is JSON
written atomically (temp file, fsync, rename), so a kill at any moment leaves the old
record or the new one.

Saving lags behind the work on purpose: the state only ever *under*-reports what was
synced, and the merge treats "both sides already equal" as "record it", so replaying
from an older state is idempotent. An exclusive ``flock`` on ``<state>.lock`` keeps two
mirrors from sharing one record.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfs.errors import SyncError
from memfs.private import private_dir
from memfs.sync.merge import SideKind, Version

FORMAT = 1
log = logging.getLogger("memfs.sync")


@dataclass(slots=True)
class Record:
    """The last synced version of one path. ``size``/``mtime_ns``/``ino``/``ctime_ns``
    describe the disk file that held it, so an unchanged file need not be re-hashed."""

    kind: SideKind
    rev: int = 0
    sha256: str | None = None
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0

    @property
    def version(self) -> Version:
        return Version(self.kind, self.sha256)

    def same_stat(self, st: os.stat_result) -> bool:
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) == (
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.ino,
        )


@dataclass(slots=True)
class SyncState:
    dir: str
    store_url: str
    dir_id: tuple[int, int] | None = None  # (st_dev, st_ino) of DIR at the last sync
    last_seq: int = 0
    entries: dict[str, Record] = field(default_factory=dict)
    fresh: bool = False  # no saved record was used (first run, or a damaged one)

    def files(self) -> int:
        return sum(1 for r in self.entries.values() if r.kind == "file")

    def under(self, rel: str) -> list[str]:
        """Recorded paths strictly below ``rel`` (every path for the root)."""
        if rel == "":
            return list(self.entries)
        prefix = rel + "/"
        return [p for p in self.entries if p.startswith(prefix)]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "dir": self.dir,
            "store": self.store_url,
            "dir_id": list(self.dir_id) if self.dir_id else None,
            "last_seq": self.last_seq,
            # Spelled out rather than dataclasses.asdict: this runs for every entry on
            # every save, and asdict's deep copy dominated a large tree's saves.
            "entries": {
                p: {
                    "kind": r.kind,
                    "rev": r.rev,
                    "sha256": r.sha256,
                    "size": r.size,
                    "mtime_ns": r.mtime_ns,
                    "ctime_ns": r.ctime_ns,
                    "ino": r.ino,
                }
                for p, r in self.entries.items()
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SyncState:
        if data.get("format") != FORMAT:
            raise ValueError(f"unknown format {data.get('format')!r}")
        dir_id = data.get("dir_id")
        return cls(
            dir=data["dir"],
            store_url=data["store"],
            dir_id=(int(dir_id[0]), int(dir_id[1])) if dir_id else None,
            last_seq=int(data["last_seq"]),
            entries={p: Record(**r) for p, r in data["entries"].items()},
        )


def default_state_path(dir: Path, store_url: str) -> Path:
    from platformdirs import user_state_dir

    key = hashlib.sha256(f"{dir}\0{store_url}".encode()).hexdigest()[:24]
    return Path(user_state_dir("memfs")) / "sync" / f"{key}.json"


class StateFile:
    """Loads, saves and locks one sync-state record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_fd: int | None = None

    def lock(self) -> None:
        """Take the record's lock, or raise SyncError if another mirror holds it."""
        private_dir(self.path.parent)  # the record names the store by its URL
        fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SyncError(
                f"another memfs sync is already running with the state {self.path}"
            ) from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def load(self, dir: Path, store_url: str) -> SyncState:
        """The saved record, or a fresh one (first run) if there is none."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return SyncState(dir=str(dir), store_url=store_url, fresh=True)
        except OSError as e:
            raise SyncError(f"cannot read the sync state {self.path}: {e.strerror}") from e
        try:
            state = SyncState.from_json(json.loads(raw))
        except (ValueError, KeyError, TypeError) as e:
            # Starting over with an empty base is safe (it merges, never deletes), so a
            # damaged record costs a re-scan, not data; keep it for inspection.
            with contextlib.suppress(OSError):
                os.replace(self.path, str(self.path) + ".damaged")
            log.warning(
                "the sync state %s is damaged (%s); kept as .damaged, merging afresh", self.path, e
            )
            return SyncState(dir=str(dir), store_url=store_url, fresh=True)
        return state

    def save(self, state: SyncState) -> None:
        data = json.dumps(state.to_json(), separators=(",", ":")).encode()
        private_dir(self.path.parent)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
