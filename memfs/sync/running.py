"""One small JSON file per running mirror (``memfs sync DIR``), for ``memfs status``.

The records live in ``$MEMFS_STATE_DIR/mirrors`` (tests point it at a temporary
directory) or else in the per-user state directory (``~/.local/state/memfs/mirrors``).
:func:`run_recorded` writes a mirror's record once its first pass is done and DIR is
watched, and removes it when the mirror stops; a record whose process died (kill -9, a
reboot) is *stale*: :func:`scan` reports it once and deletes it. One file per process,
so two mirrors never share (or delete) a record (the directory of records:
:mod:`memfs.records`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfs import __version__, procs
from memfs.errors import SyncError
from memfs.records import STATE_DIR_ENV as STATE_DIR_ENV
from memfs.records import RecordDir, record_name

if TYPE_CHECKING:
    from memfs.sync.mirror import Mirror


@dataclass(frozen=True, slots=True)
class MirrorRecord:
    """What a running mirror says about itself."""

    dir: str  # absolute
    store_url: str
    pid: int
    started: float  # seconds since the epoch
    version: str = __version__

    @property
    def alive(self) -> bool:
        return procs.runs_since(self.pid, self.started)


def _parse(data: dict[str, Any]) -> MirrorRecord:
    return MirrorRecord(
        dir=str(data["dir"]),
        store_url=str(data["store_url"]),
        pid=int(data["pid"]),
        started=float(data["started"]),
        version=str(data.get("version", "")),
    )


def _refuse(base: Path, exc: OSError) -> SyncError:
    return SyncError(
        f"cannot create the memfs state directory {base}: {exc.strerror}; "
        f"set {STATE_DIR_ENV} to a writable directory"
    )


_RECORDS = RecordDir(default="mirrors", override="mirrors", parse=_parse, refuse=_refuse)


def records_dir() -> Path:
    return _RECORDS.path()


def _name(record: MirrorRecord) -> str:
    return record_name(record.dir, f"{record.dir}\0{record.store_url}") + f"-{record.pid}"


def record_path(record: MirrorRecord) -> Path:
    return _RECORDS.file(_name(record))


def new_record(dir: Path, store_url: str) -> MirrorRecord:
    return MirrorRecord(dir=str(dir), store_url=store_url, pid=os.getpid(), started=time.time())


def write(record: MirrorRecord) -> None:
    """Store ``record`` atomically (a reader never sees half a file)."""
    try:
        _RECORDS.write(_name(record), record)
    except OSError as exc:
        target = record_path(record)
        raise SyncError(f"cannot write the mirror's record {target}: {exc.strerror}") from exc


def remove(record: MirrorRecord) -> None:
    _RECORDS.remove(_name(record))


def run_recorded(mirror: Mirror) -> None:
    """Run ``mirror`` until it stops, its record present from its first pass on."""
    record = new_record(mirror.root, mirror.store.url)
    try:
        mirror.run(on_ready=lambda: write(record))
    finally:
        remove(record)


def scan() -> tuple[list[MirrorRecord], list[MirrorRecord]]:
    """``(live, stale)`` records sorted by directory; stale and unreadable records are
    deleted as they are found, so each stale one is reported once."""
    return _RECORDS.scan(lambda r: (r.dir, r.pid))
