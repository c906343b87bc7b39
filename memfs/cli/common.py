"""What several commands share: the one ``--store`` option, how a PATH names a store
and a place in it, opening that store with every error as one line, and the small
printing helpers (local times, sizes, tables)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from memfs.cli import stores
from memfs.cli.stores import StoreChoice
from memfs.errors import MemfsError, PathError, StoreUnavailable
from memfs.history.when import MAX_NUMBER
from memfs.store import shown_url
from memfs.store.base import Store

F = TypeVar("F", bound=Callable[..., Any])


class Renamed(click.Option):
    """An option with old names still accepted but no longer shown in help: one name
    for one meaning across commands (``--rev`` for a revision, ``--as`` for who acts),
    without breaking a script written against the old one."""

    def __init__(self, *args: Any, old: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.old = old

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        names = record[0]
        for name in self.old:
            names = names.replace(f", {name}", "")
        return names, record[1]

    def get_error_hint(self, ctx: click.Context | None) -> str:
        # An error names the option by its one shown name, not its old ones.
        return " / ".join(f"'{name}'" for name in self.opts if name not in self.old)


class OldRevs(click.Argument):
    """Positional revisions (the old form, after PATH): unshown in the usage line, and
    named REV when a value is refused."""

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return "'REV'"


# --json, one convention for every command that reports (docs/cli.md has the shapes):
# JSON lines, one object per line: one per item for a list (revisions, operations,
# hits, findings, trees, files of a diff), one for a command that reports one result.
JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per line (shapes: docs/cli.md)."
)


def emit(record: dict[str, Any]) -> None:
    """One line of --json output."""
    import json

    click.echo(json.dumps(record, ensure_ascii=False))


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 change``, ``2 changes``, ``1 entry`` (with ``plural="entries"``): a count as
    a person writes it."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


STORE_HELP = "Store URL (default: the mount's, then $MEMFS_STORE, then the user's memory.db)."


def store_option(help: str = STORE_HELP) -> Callable[[F], F]:
    """``--store URL``, as every command takes it (into ``store_url``); ``help`` says
    what the store is for when the command means more than the default."""
    return click.option("--store", "store_url", metavar="URL", help=help)


# ``--actor TEXT`` of the commands that choose operations (log, undo): into ``actor``.
ACTOR_OPTION = click.option(
    "--actor",
    "--author",
    "actor",
    metavar="TEXT",
    help="Only operations whose actor contains TEXT (--author is an alias).",
)


# An id, revision or count as the history commands take it: from 1 to the largest number
# a store keeps (memfs.history.when's range, the web's too); past it, click's one line.
NUMBER = click.IntRange(min=1, max=MAX_NUMBER)


def local_time(time_ns: int) -> str:
    return datetime.fromtimestamp(time_ns / 1e9).astimezone().isoformat(timespec="seconds")


def size_text(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def resolve(path: str, store_url: str | None) -> tuple[StoreChoice, str]:
    """The store and the store-relative path that ``path`` names.

    A path inside a mount is a file of the mount's store, so it is translated to its
    place in the tree even when ``--store`` names the store to read (another mount of
    it, a copy); without ``--store`` the mount's own store is read.
    """
    from memfs.mount import state
    from memfs.paths import ROOT, parse, parse_rel

    record = state.lookup(path)
    if record is not None:
        inside = state.normalize(path).relative_to(record.mountpoint)
        rel = parse_rel("" if inside == Path(".") else inside.as_posix()).rel
        # A --subtree mount shows one directory of the store as its root.
        rel = state.store_path(record, rel)
        if store_url is None:
            return StoreChoice(record.store_url, stores.FROM_MOUNT), rel
        return stores.choose(store_url), rel
    choice = stores.choose(store_url)
    if path == ROOT or path.startswith(ROOT + "/"):
        return choice, parse(path).rel
    return choice, parse_rel(path.strip("/")).rel


def require_existing(choice: StoreChoice) -> None:
    """Refuse to create a store just to show that it has nothing (one line, exit 1)."""
    try:
        stores.require_existing_store(choice)
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc


def choose_target(path: str | None, store_url: str | None) -> tuple[StoreChoice, str]:
    """The store and store-relative path a command on ``path`` works on, every error
    its one line. Without ``path``: the whole tree of the mount the current directory is
    in, else of ``--store`` or the user's store."""
    try:
        if path is None:
            choice = resolve(".", store_url)[0] if _in_mount() else stores.choose(store_url)
            return choice, ""
        return resolve(path, store_url)
    except PathError as exc:
        raise click.ClickException(f"{path!r} is not a memory path: {exc}") from exc
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc


def store_error(
    exc: MemfsError, elsewhere: str | None, url: str | None = None
) -> click.ClickException:
    """The one line for an error of the store a command chose, and the one place the
    CLI says a store cannot be used: that line ends with how to use another store
    (``elsewhere``, said the way this one was chosen; None when the command chose
    none). Any other error names the store (``url``) when given."""
    if isinstance(exc, StoreUnavailable) and elsewhere is not None:
        return click.ClickException(exc.advice(elsewhere))
    where = f" (in the store {shown_url(url)})" if url is not None else ""
    return click.ClickException(f"{exc}{where}")


@contextmanager
def store_errors(elsewhere: str | None, url: str | None = None) -> Iterator[None]:
    """Every MemfsError raised inside as :func:`store_error`'s one line."""
    try:
        yield
    except MemfsError as exc:
        raise store_error(exc, elsewhere, url) from exc


@contextmanager
def opened(choice: StoreChoice, *, readonly: bool) -> Iterator[Store]:
    """The one place a command opens the store it chose, every error turned into its
    one line: ``readonly`` for a command that only reads, so it works where the store
    cannot be written (a read-only file, directory or mount, a read-only database role)
    and never creates, migrates or writes anything (a PostgreSQL tree that is not there
    is refused naming the trees that are, never made). A store that does not exist is
    refused either way: nothing is created just to find it empty."""
    from memfs.store import open_store

    with store_errors(choice.elsewhere, choice.url):
        require_existing(choice)
        with open_store(choice.url, readonly=readonly) as store:
            yield store


@contextmanager
def target(
    path: str | None, store_url: str | None, *, readonly: bool = False
) -> Iterator[tuple[Store, str, StoreChoice]]:
    """The opened store and store-relative path a history command works on (see
    :func:`choose_target`); ``readonly`` when this run of it only reads (see
    :func:`opened`)."""
    choice, rel = choose_target(path, store_url)
    with opened(choice, readonly=readonly) as store:
        yield store, rel, choice


def reading(
    path: str | None, store_url: str | None
) -> AbstractContextManager[tuple[Store, str, StoreChoice]]:
    """:func:`target` for a command that only ever reads."""
    return target(path, store_url, readonly=True)


def _in_mount() -> bool:
    from memfs.mount import state

    return state.lookup(".") is not None
