"""``memfs export DEST`` and ``memfs import SRC``: the tree to plain files and back.

The library (:mod:`memfs.history.transfer`) decides; this module picks the store, draws
the progress bar (tqdm, on a terminal only, never with ``--quiet``) and turns typed
errors into one line (an import refused lists each entry it refused first).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn

import click

from memfs.cli import stores
from memfs.cli.common import JSON_OPTION, emit, opened, resolve, store_error, store_option
from memfs.cli.stores import StoreChoice
from memfs.errors import CapExceeded, ImportRefused, MemfsError, PathError, StoreUnavailable
from memfs.store import shown_url

if TYPE_CHECKING:
    from tqdm import tqdm  # imported when a bar is first drawn

_SHOWN_PROBLEMS = 20


class _Bar:
    """A :class:`memfs.history.transfer.Progress` drawn by tqdm on stderr."""

    def __init__(self, what: str, quiet: bool) -> None:
        self.what = what
        self.enabled = not quiet and sys.stderr.isatty()
        self.bar: tqdm[NoReturn] | None = None

    def start(self, total: int | None) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        self.close()
        self.bar = tqdm(total=total, desc=self.what, unit=" entries", file=sys.stderr, leave=False)

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, t: type | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _choose(prefix: str | None, store_url: str | None) -> tuple[StoreChoice, str]:
    if prefix is None:
        return stores.choose(store_url), ""
    try:
        return resolve(prefix, store_url)
    except PathError as exc:
        raise click.ClickException(f"{prefix!r} is not a memory path: {exc}") from exc


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


@click.command("export")
@click.argument("dest", type=click.Path(path_type=Path))
@store_option()
@click.option(
    "--prefix",
    metavar="PATH",
    help="Export only this directory: a path in the store, a model path, or one in a mount.",
)
@click.option("--history", is_flag=True, help="Carry every retained revision too.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@JSON_OPTION
def export_cmd(
    dest: Path,
    store_url: str | None,
    prefix: str | None,
    history: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Write the memory tree to DEST: a directory (new or empty), or a .tar, .tar.gz,
    .tgz or .zip file. Names, bytes, modes and mtimes are kept; with --history the
    revisions too, in .memfs-history.db beside the tree."""
    from memfs.history.transfer import export_tree

    choice, rel = _choose(prefix, store_url)
    with opened(choice, readonly=True) as store:
        try:
            with _Bar("export", quiet) as bar:
                result = export_tree(store, dest, prefix=rel, history=history, progress=bar)
        except StoreUnavailable:
            raise  # said by opened(), with how to use another store
        except MemfsError as exc:
            # What the export refuses (a destination in the way, no such PREFIX) says
            # where already.
            raise click.ClickException(str(exc)) from exc
    if as_json:
        emit({"dest": str(dest), **asdict(result)})
        return
    carried = " and its history" if result.history else ""
    click.echo(
        f"exported {_count(result.files, 'file', 'files')}, "
        f"{_count(result.dirs, 'directory', 'directories')} "
        f"({_count(result.bytes, 'byte', 'bytes')}){carried} to {dest} ({result.format})"
    )
    if result.symlinks_skipped:
        click.echo(
            f"left out {_count(result.symlinks_skipped, 'symlink', 'symlinks')}"
            " (memfs keeps links only as editors' lock files; import refuses links)"
        )
    if result.changed_during:
        click.echo(
            f"note: {_count(result.changed_during, 'change was', 'changes were')} made while"
            " exporting; each file is whole at one revision, the newest one read"
        )


@click.command("import")
@click.argument("src", type=click.Path(path_type=Path))
@store_option()
@click.option(
    "--prefix",
    metavar="PATH",
    help="Put the tree below this directory: a path in the store, a model path, or one in a mount.",
)
@click.option("--overwrite", is_flag=True, help="Replace files that differ (a new revision each).")
@click.option("--history", is_flag=True, help="Copy the carried revisions into an empty store.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@JSON_OPTION
def import_cmd(
    src: Path,
    store_url: str | None,
    prefix: str | None,
    overwrite: bool,
    history: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Read SRC into the store: an export (directory, .tar, .tar.gz, .tgz, .zip), any
    such tree, or the folder of the SDK's BetaLocalFilesystemMemoryTool (its base path or
    its memories/ directory). All or nothing: an entry memfs would refuse, or a file
    that exists with other content (without --overwrite), refuses the whole import."""
    from memfs.history.author import act_for
    from memfs.history.transfer import import_tree
    from memfs.mount.control import nearby
    from memfs.store import open_store

    if history and (prefix is not None or overwrite):
        raise click.UsageError("--history copies a whole store: no --prefix or --overwrite")
    if not src.exists() and not src.is_symlink():
        # Before the store is opened: a mistyped SRC must not create an empty store.
        raise click.ClickException(f"cannot import {src}: there is nothing there")
    choice, rel = _choose(prefix, store_url)
    try:
        with (
            stores.announced(choice.url),
            open_store(choice.url) as store,
            _Bar("import", quiet) as bar,
            nearby(store, [rel or ""]),
            store.acting(act_for("import")),
        ):
            result = import_tree(
                store, src, prefix=rel, overwrite=overwrite, history=history, progress=bar
            )
    except ImportRefused as exc:
        lines = [f"  {p}" for p in exc.problems[:_SHOWN_PROBLEMS]]
        if len(exc.problems) > _SHOWN_PROBLEMS:
            lines.append(f"  ... and {len(exc.problems) - _SHOWN_PROBLEMS:,} more")
        click.echo("\n".join(lines), err=True)
        raise click.ClickException(str(exc)) from exc
    except CapExceeded as exc:
        raise click.ClickException(f"import refused, nothing was imported: {exc}") from exc
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere) from exc
    where = shown_url(choice.url) + (f" under {rel}" if rel else "")
    if as_json:
        emit({"src": str(src), "store": shown_url(choice.url), "prefix": rel, **asdict(result)})
        return
    if history:
        click.echo(
            f"imported {_count(result.revisions, 'change', 'changes')} of history: "
            f"{_count(result.files, 'file', 'files')}, "
            f"{_count(result.dirs, 'directory', 'directories')} "
            f"({_count(result.bytes, 'byte', 'bytes')}) from {src} into {where}"
        )
        return
    click.echo(
        f"imported {_count(result.files, 'file', 'files')}, "
        f"{_count(result.dirs, 'new directory', 'new directories')} "
        f"({_count(result.bytes, 'byte', 'bytes')}) from {src} ({result.source}) into {where}"
    )
    if result.replaced or result.unchanged:
        click.echo(f"replaced {result.replaced:,}, already there unchanged {result.unchanged:,}")
    if result.skipped:
        click.echo(
            f"skipped {_count(len(result.skipped), 'temporary file', 'temporary files')}"
            " the SDK's tool left behind: " + ", ".join(result.skipped[:5])
        )


COMMANDS = [export_cmd, import_cmd]

__all__ = ["COMMANDS"]
