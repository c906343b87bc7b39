"""One small JSON file per running mirror (``memfs sync DIR``), for ``memfs status``.

The records live in ``$MEMFS_STATE_DIR/mirrors`` (tests point it at a temporary
directory) or else in the per-user state directory (``~/.local/state/memfs/mirrors``).
:func:`run_recorded` writes a mirror's record once its first pass is done and DIR is
watched, and removes it when the mirror stops; a record whose process died (kill -9, a
reboot) is *stale*: :func:`scan` reports it once and deletes it. One file per process,
so two mirrors never share (or delete) a record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memfs import __version__, procs
from memfs.errors import SyncError
from memfs.private import private_dir, write_private

if TYPE_CHECKING:
    from memfs.sync.mirror import Mirror

# The same variable as the mount's records (memfs.mount.state): one setting moves all of
# memfs's process records.
STATE_DIR_ENV = "MEMFS_STATE_DIR"


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


def records_dir() -> Path:
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        base = Path(override).expanduser() / "mirrors"
    else:
        from platformdirs import user_state_dir

        base = Path(user_state_dir("memfs")) / "mirrors"
    try:
        private_dir(base)
    except OSError as exc:
        raise SyncError(
            f"cannot create the memfs state directory {base}: {exc.strerror}; "
            f"set {STATE_DIR_ENV} to a writable directory"
        ) from exc
    return base


def record_path(record: MirrorRecord) -> Path:
    digest = hashlib.sha256(f"{record.dir}\0{record.store_url}".encode()).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(record.dir).name)[:40] or "root"
    return records_dir() / f"{stem}-{digest}-{record.pid}.json"


def new_record(dir: Path, store_url: str) -> MirrorRecord:
    return MirrorRecord(dir=str(dir), store_url=store_url, pid=os.getpid(), started=time.time())


def write(record: MirrorRecord) -> None:
    """Store ``record`` atomically (a reader never sees half a file)."""
    target = record_path(record)
    try:
        write_private(target, json.dumps(asdict(record), indent=2) + "\n")
    except OSError as exc:
        raise SyncError(f"cannot write the mirror's record {target}: {exc.strerror}") from exc


def remove(record: MirrorRecord) -> None:
    with contextlib.suppress(FileNotFoundError):
        record_path(record).unlink()


def run_recorded(mirror: Mirror) -> None:
    """Run ``mirror`` until it stops, its record present from its first pass on."""
    record = new_record(mirror.root, mirror.store.url)
    try:
        mirror.run(on_ready=lambda: write(record))
    finally:
        remove(record)


def _load(path: Path) -> MirrorRecord | None:
    try:
        data = json.loads(path.read_text())
        return MirrorRecord(
            dir=str(data["dir"]),
            store_url=str(data["store_url"]),
            pid=int(data["pid"]),
            started=float(data["started"]),
            version=str(data.get("version", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def scan() -> tuple[list[MirrorRecord], list[MirrorRecord]]:
    """``(live, stale)`` records sorted by directory; stale and unreadable records are
    deleted as they are found, so each stale one is reported once."""
    live: list[MirrorRecord] = []
    stale: list[MirrorRecord] = []
    for path in sorted(records_dir().glob("*.json")):
        record = _load(path)
        if record is not None and record.alive:
            live.append(record)
            continue
        if record is not None:
            stale.append(record)
        # Stale, or half-written by a writer that died: either way it names nothing usable.
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    live.sort(key=lambda r: (r.dir, r.pid))
    stale.sort(key=lambda r: (r.dir, r.pid))
    return live, stale
