"""Which store a command uses and where that choice came from.

A message about a bad store ends with how to use another one, said the way this one was
chosen: ``--store URL`` when the URL came from the option, ``$MEMFS_STORE`` when from
the environment, both when the user's default store is the bad one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memfs.errors import MemfsError
from memfs.store import STORE_ENV, default_url

if TYPE_CHECKING:
    from memfs.store.base import Store

FROM_OPTION = "give another --store URL"
FROM_ENV = f"point ${STORE_ENV} at another store"
FROM_DEFAULT = f"give --store URL (or set ${STORE_ENV}) to use another store"
FROM_MOUNT = "give --store URL to read another store"  # the store behind a mounted path


@dataclass(frozen=True, slots=True)
class StoreChoice:
    url: str
    elsewhere: str  # how to choose another store, as the end of a message


def choose(option: str | None) -> StoreChoice:
    """The store named by ``--store``, else by ``$MEMFS_STORE``, else the default."""
    if option is not None:
        return StoreChoice(option, FROM_OPTION)
    if os.environ.get(STORE_ENV, "").strip():
        return StoreChoice(default_url(), FROM_ENV)
    return StoreChoice(default_url(), FROM_DEFAULT)


def require_existing_store(choice: StoreChoice) -> None:
    """Refuse to create a SQLite store just to report on it (a server store is left to
    the backend: opening it creates no file)."""
    from memfs.store.sqlite_options import path_from_url

    url = choice.url
    if "://" in url and not url.lower().startswith("sqlite://"):
        return
    file = path_from_url(url.partition("?")[0] if "://" in url else url)
    if not file.exists():
        raise MemfsError(f"no store at {file}; {choice.elsewhere}")


def new_store_file(url: str) -> Path | None:
    """The SQLite file ``url`` names when there is none there yet (opening it for
    writing will create it), else None; a server's store creates no file."""
    from memfs.store.sqlite_options import path_from_url

    if "://" in url and not url.lower().startswith("sqlite://"):
        return None
    file = path_from_url(url.partition("?")[0] if "://" in url else url)
    return None if file.exists() else file


def announce_new_store(file: Path | None) -> None:
    """Say that a store was created: a mistyped path makes a new, empty store, which
    must not pass for the one the person meant."""
    if file is not None and file.exists():
        click.echo(f"Created a new store at {file}.", err=True)


@contextmanager
def open_announced(url: str) -> Iterator[Store]:
    """The store at ``url`` opened for writing, said as soon as it is open when the open
    created it (:func:`announce_new_store`): how a command that runs on (``sync``) opens
    a store it may create. A mount's daemon opens its own and the mount says so the same
    way; a command that reports when done says it then (:func:`announced`)."""
    from memfs.store import open_store

    fresh = new_store_file(url)
    with open_store(url) as store:
        announce_new_store(fresh)
        yield store


@contextmanager
def announced(url: str) -> Iterator[None]:
    """Around a command's work on the store at ``url``: when that work created it, say
    so once the work is done (``import``, ``copy``); a refused run stays its one error
    line."""
    fresh = new_store_file(url)
    yield
    announce_new_store(fresh)
