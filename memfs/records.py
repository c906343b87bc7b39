"""A directory of per-process JSON records: how a running memfs process (a mount's daemon,
a mirror) tells every other memfs process what it is.

One small file per record, written atomically (a reader never sees half a file) and
privately (0600 in a 0700 directory, see :mod:`memfs.private`: a record names a store by
its URL, which may hold a password). A record whose process died (``kill -9``, a reboot)
is *stale*: :meth:`RecordDir.scan` reports it once and deletes it, as it deletes a file
it cannot read (half-written by a writer that died, or edited by hand: it names nothing
usable).

Every kind of record lives below one state directory: ``$MEMFS_STATE_DIR`` (tests point
it at a temporary directory), else the per-user one (``~/.local/state/memfs``).
:mod:`memfs.mount.state` and :mod:`memfs.sync.running` say what their records hold.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from memfs.private import private_dir, write_private

# One setting moves every kind of record (and the daemons' logs and journals) at once.
STATE_DIR_ENV = "MEMFS_STATE_DIR"
SUFFIX = ".json"


class Record(Protocol):
    """A record is a dataclass that can tell whether its process still runs."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def alive(self) -> bool: ...


R = TypeVar("R", bound=Record)


def record_name(named_after: str, identity: str) -> str:
    """A record's file name (no suffix): the last component of ``named_after``, cut to
    what is safe in a file name, then 16 hex digits of ``identity``'s SHA-256, so a
    person can tell the files apart and two identities never share one."""
    digest = hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(named_after).name)[:40] or "root"
    return f"{stem}-{digest}"


class RecordDir(Generic[R]):
    """The records of one kind.

    ``default``: the directory below the per-user state directory; ``override``: the
    one below ``$MEMFS_STATE_DIR`` ("" for that directory itself). ``parse`` builds a
    record from its JSON object (KeyError, ValueError or TypeError: not a record).
    ``refuse`` is the typed error for a directory that cannot be made.
    """

    def __init__(
        self,
        *,
        default: str,
        override: str,
        parse: Callable[[dict[str, Any]], R],
        refuse: Callable[[Path, OSError], Exception],
    ) -> None:
        self._default = default
        self._override = override
        self._parse = parse
        self._refuse = refuse

    def path(self) -> Path:
        """The directory (created on demand, 0700)."""
        override = os.environ.get(STATE_DIR_ENV)
        if override:
            base = Path(override).expanduser() / self._override
        else:
            from platformdirs import user_state_dir

            base = Path(user_state_dir("memfs")) / self._default
        try:
            private_dir(base)
        except OSError as exc:
            raise self._refuse(base, exc) from exc
        return base

    def file(self, name: str) -> Path:
        return self.path() / f"{name}{SUFFIX}"

    def write(self, name: str, record: R) -> None:
        """Store ``record`` as ``name``, atomically and privately."""
        write_private(self.file(name), json.dumps(asdict(record), indent=2) + "\n")

    def load(self, file: Path) -> R | None:
        """The record in ``file``, or None if there is none or it is not one."""
        try:
            return self._parse(json.loads(file.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def each(self, *, include_stale: bool = False) -> Iterator[R]:
        """Every readable record, the stale ones too if asked; nothing is deleted."""
        for file in self.path().glob("*" + SUFFIX):
            record = self.load(file)
            if record is not None and (include_stale or record.alive):
                yield record

    def scan(self, order: Callable[[R], Any]) -> tuple[list[R], list[R]]:
        """``(live, stale)`` sorted by ``order``; stale and unreadable records are
        deleted as they are found, so each stale one is reported once."""
        live: list[R] = []
        stale: list[R] = []
        for file in sorted(self.path().glob("*" + SUFFIX)):
            record = self.load(file)
            if record is not None and record.alive:
                live.append(record)
                continue
            if record is not None:
                stale.append(record)
            with contextlib.suppress(FileNotFoundError):
                file.unlink()
        live.sort(key=order)
        stale.sort(key=order)
        return live, stale

    def remove(self, name: str, *, unless: Callable[[R], bool] | None = None) -> None:
        """Delete the record ``name``; with ``unless``, not while the record there now
        satisfies it (a process stopping must not delete its successor's record)."""
        target = self.file(name)
        if unless is not None:
            current = self.load(target)
            if current is not None and unless(current):
                return
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
