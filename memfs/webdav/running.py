"""One small JSON file per running WebDAV server (``memfs webdav``), for ``memfs status``.

The records live in ``$MEMFS_STATE_DIR/webdav`` or the per-user state directory, one file
per process, written once the server listens and removed when it stops; a record whose
process died is stale and :func:`scan` reports it once (:mod:`memfs.records`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfs import __version__, procs
from memfs.errors import HttpError
from memfs.records import STATE_DIR_ENV, RecordDir


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """What a running WebDAV server says about itself."""

    url: str  # the address it serves, http://HOST:PORT/
    store_url: str
    subtree: str
    pid: int
    started: float  # seconds since the epoch
    version: str = __version__

    @property
    def alive(self) -> bool:
        return procs.runs_since(self.pid, self.started)


def _parse(data: dict[str, Any]) -> ServerRecord:
    return ServerRecord(
        url=str(data["url"]),
        store_url=str(data["store_url"]),
        subtree=str(data.get("subtree", "")),
        pid=int(data["pid"]),
        started=float(data["started"]),
        version=str(data.get("version", "")),
    )


def _refuse(base: Path, exc: OSError) -> HttpError:
    return HttpError(
        f"cannot create the memfs state directory {base}: {exc.strerror}; "
        f"set {STATE_DIR_ENV} to a writable directory"
    )


_RECORDS = RecordDir(default="webdav", override="webdav", parse=_parse, refuse=_refuse)


def new_record(url: str, store_url: str, subtree: str) -> ServerRecord:
    return ServerRecord(url, store_url, subtree, os.getpid(), time.time())


def write(record: ServerRecord) -> None:
    try:
        _RECORDS.write(f"server-{record.pid}", record)
    except OSError as exc:
        raise HttpError(f"cannot write the server's record: {exc.strerror}") from exc


def remove(record: ServerRecord) -> None:
    _RECORDS.remove(f"server-{record.pid}")


def scan() -> tuple[list[ServerRecord], list[ServerRecord]]:
    """``(live, stale)`` records by address; stale ones are deleted as they are found."""
    return _RECORDS.scan(lambda r: (r.url, r.pid))
