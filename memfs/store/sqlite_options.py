"""How a ``sqlite://`` URL names a file, and the options it may carry.

URL forms (the registry hands over the URL without its ``?query``):

- ``sqlite:///abs/path/memory.db``: an absolute path (``sqlite:////abs/...`` too);
- ``sqlite:///./rel.db`` or ``sqlite:///../rel.db``: relative to the current directory
  at open time;
- a bare path with no scheme (``~/memory.db``, ``./x.db``, ``/abs/x.db``): used as is,
  with ``~`` expanded.

The path part of a URL is percent-decoded (``%20`` for a space); a bare path is not.

Options (URL query or keyword arguments to ``open_store``):

- ``max_file_bytes``: largest file content accepted (default 64 MiB) -> TooLarge;
- ``history``: previous revisions kept per file besides the current one (default 50;
  0 keeps only the current content);
- ``deleted_history_days``: how long the last revision of a path that no longer
  exists stays readable (default 30; 0 keeps none);
- ``max_tree_bytes``, ``max_files``: caps on the whole tree's file bytes and file count
  (default: none) -> CapExceeded;
- ``readonly``: open for reading only (never creates, migrates or writes the file;
  every mutation raises ReadOnlyStore), usually given as ``open_store(url, readonly=True)``;
- ``busy_timeout``: seconds a writer waits for another process's lock (default 5);
- ``synchronous``: ``normal`` (default: commits survive a killed process) or ``full``
  (commits survive a power loss too, at the price of an fsync per write).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from memfs.errors import StoreUnavailable
from memfs.store.rules import LIMIT_OPTIONS, Limits, parse_limits

DEFAULT_BUSY_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class SqliteOptions:
    limits: Limits = field(default_factory=Limits)
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    synchronous: str = "normal"


def path_from_url(url: str) -> Path:
    """The absolute file path a ``sqlite://`` URL or bare path names."""
    if url.lower().startswith("sqlite://"):
        rest = unquote(url[len("sqlite://") :])
        if rest.startswith(("/./", "/../")):
            raw = rest[1:]
        elif rest.startswith("/") and rest.strip("/"):
            raw = "/" + rest.lstrip("/")
        else:
            raise StoreUnavailable(
                f"the URL {url!r} names no file; write sqlite:///absolute/path/memory.db"
                " or sqlite:///./relative.db"
            )
    else:
        raw = os.path.expanduser(url)
        if not raw:
            raise StoreUnavailable("the store path is empty")
    return Path(os.path.abspath(raw))


def _seconds(name: str, value: object) -> float:
    try:
        number = float(value) if isinstance(value, int | float | str) else float("nan")
    except ValueError:
        number = float("nan")
    if isinstance(value, bool) or not number > 0 or number == float("inf"):
        raise StoreUnavailable(f"option {name}={value!r}: must be a positive number of seconds")
    return number


def parse_options(options: Mapping[str, object]) -> SqliteOptions:
    """Validate ``options`` (strings from a URL query or typed keyword values)."""
    known = {*LIMIT_OPTIONS, "busy_timeout", "synchronous"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise StoreUnavailable(
            f"unknown option {unknown[0]!r} for an sqlite store (known: {', '.join(sorted(known))})"
        )
    limits = parse_limits(options)
    busy = DEFAULT_BUSY_TIMEOUT
    if "busy_timeout" in options:
        busy = _seconds("busy_timeout", options["busy_timeout"])
    sync = "normal"
    if "synchronous" in options:
        sync = str(options["synchronous"]).lower()
        if sync not in ("normal", "full"):
            raise StoreUnavailable(
                f"option synchronous={options['synchronous']!r}: must be 'normal' or 'full'"
            )
    return SqliteOptions(limits, busy, sync)
