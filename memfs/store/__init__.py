"""Open a store by URL: the registry of backends.

``open_store("sqlite:///home/me/memory.db?history=20")`` picks the backend by the URL's
scheme; a string without ``scheme://`` is a file path for the SQLite backend. With no
URL, :func:`default_url` is used: ``$MEMFS_STORE`` if set, else ``memory.db`` in the
platform's user data directory for ``memfs``.

Query options (``?name=value&...``) and keyword options are handed to the backend,
which validates them (keyword options win over the URL's); ``readonly=True`` opens a
store for reading only, never creating, migrating or writing it. A backend is a callable
``opener(url_without_query, options) -> Store`` registered with :func:`register`; the
SQL backends are one algorithm (:mod:`memfs.store.engine`) over a dialect each
(:mod:`memfs.store.sql` says what a new one supplies).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from memfs.errors import StoreUnavailable, UnknownScheme
from memfs.store.base import Change, Entry, Revision, SearchHit, Store, Usage

__all__ = [
    "STORE_ENV",
    "Change",
    "Entry",
    "Opener",
    "Revision",
    "SearchHit",
    "Store",
    "TreeInfo",
    "Usage",
    "default_url",
    "known_schemes",
    "list_trees",
    "open_store",
    "register",
    "shown_url",
]

Opener = Callable[[str, Mapping[str, object]], Store]

STORE_ENV = "MEMFS_STORE"

_openers: dict[str, Opener] = {}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def shown_url(url: str) -> str:
    """``url`` with any password in it masked, for tables and logs a person reads."""
    from urllib.parse import parse_qsl, urlencode, urlsplit

    if _SCHEME.match(url) is None:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rsplit('@', 1)[1]}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in pairs):
        masked = [(k, "***" if k == "password" else v) for k, v in pairs]
        query = urlencode(masked, safe="/*")
    else:
        query = parts.query
    # Built by hand: urlunsplit drops the "//" of an empty host (postgresql:///db).
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return shown + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")


def register(scheme: str, opener: Opener) -> None:
    """Make ``scheme://`` URLs open with ``opener`` (a later registration replaces)."""
    _openers[scheme.lower()] = opener


def known_schemes() -> list[str]:
    return sorted(_openers)


def default_url() -> str:
    """``$MEMFS_STORE``, or an SQLite file in the user data directory."""
    env = os.environ.get(STORE_ENV, "").strip()
    if env:
        return env
    from platformdirs import user_data_dir

    return "sqlite://" + str(Path(user_data_dir("memfs")) / "memory.db")


def _split(url: str) -> tuple[str, str, dict[str, str]]:
    match = _SCHEME.match(url)
    if match is None:
        # A bare path: no query parsing, a "?" is part of the file name.
        return "sqlite", url, {}
    base, _, query = url.partition("?")
    options: dict[str, str] = {}
    if query:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError as e:
            raise StoreUnavailable(f"the store URL {url!r} has a malformed query: {e}") from e
        for name, value in pairs:
            if name in options:
                raise StoreUnavailable(f"the store URL {url!r} gives option {name!r} twice")
            options[name] = value
    return match.group(1).lower(), base, options


def open_store(url: str | os.PathLike[str] | None = None, **options: object) -> Store:
    """Open (creating if needed, unless ``readonly=True``) the store named by ``url``;
    see the module docstring.

    A :class:`pathlib.Path` is taken as a bare file path.
    """
    url = default_url() if url is None else os.fspath(url)
    if not isinstance(url, str) or not url.strip():
        raise StoreUnavailable(f"the store URL {url!r} is empty or not text")
    scheme, base, query = _split(url.strip())
    opener = _openers.get(scheme)
    if opener is None:
        known = ", ".join(f"{s}://" for s in known_schemes())
        raise UnknownScheme(f"no store backend for {scheme}:// URLs (known: {known})")
    return opener(base, {**query, **options})


@dataclass(frozen=True, slots=True)
class TreeInfo:
    """One memory tree a store URL's database holds."""

    name: str
    url: str  # opens this tree
    usage: Usage
    last_seq: int


def list_trees(url: str | os.PathLike[str] | None = None) -> list[TreeInfo]:
    """Every tree the database named by ``url`` holds, by name. A server database holds
    any number (``?tree=NAME`` picks one); a file store is one tree, ``default``. Only
    reads: creates, migrates and writes nothing."""
    url = default_url() if url is None else os.fspath(url)
    scheme, base, query = _split(url.strip())
    if scheme in ("postgresql", "postgres"):
        from memfs.store.postgres_trees import list_trees as pg_trees

        return [TreeInfo(n, u, usage, seq) for n, u, usage, seq, _ in pg_trees(base, query)]
    with open_store(url, readonly=True) as store:
        return [TreeInfo("default", store.url, store.usage(), store.last_seq())]


def _open_sqlite(url: str, options: Mapping[str, object]) -> Store:
    # Imported on first use so that importing memfs.store stays cheap for the CLI.
    from memfs.store.sqlite import open_sqlite

    return open_sqlite(url, options)


register("sqlite", _open_sqlite)


def _open_postgres(url: str, options: Mapping[str, object]) -> Store:
    from memfs.store.postgres import open_postgres

    return open_postgres(url, options)


register("postgresql", _open_postgres)
register("postgres", _open_postgres)
