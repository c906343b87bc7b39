"""``memfs sync DIR``: keep a plain directory and a store in two-way sync."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from memfs.cli import stores
from memfs.cli.common import JSON_OPTION, emit, store_error, store_option
from memfs.errors import MemfsError
from memfs.store import shown_url

if TYPE_CHECKING:
    from memfs.sync import Mirror


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@store_option()
@click.option("--once", is_flag=True, help="Do one reconciliation pass and exit.")
@click.option(
    "--state",
    "state_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Sync-state file (default: in the user state directory, per DIR and store).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every file synced.")
@JSON_OPTION
def sync(
    directory: Path,
    store_url: str | None,
    once: bool,
    state_path: Path | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """Keep DIR and a memory store in two-way sync until Ctrl-C.

    A missing DIR is created and filled from the store. Edits in DIR (from any editor)
    land in the store, the store's changes land in DIR.
    When both sides changed a file, the store's version keeps the name and DIR's is kept
    beside it as NAME.conflict-<time>-local.EXT, in DIR and in the store. A delete never
    beats an edit; a file must stay gone 250 ms before its delete is synced, and when at
    least 3 files and over half the tree vanish at once (or DIR is replaced), they are
    restored from the store instead. Editor temp/swap/backup files, .git, symlinks and
    names memfs refuses stay local (the last three with a warning).
    """
    from memfs.sync import Mirror, running

    choice = stores.choose(store_url)
    url = choice.url
    handler = _log_to_stderr(verbose, quiet_warnings=once and not verbose)
    try:
        # The store first: a bad one must fail before DIR is created for it. But a DIR
        # that can never be synced (a file) must not leave a new, empty store behind.
        if directory.exists() and not directory.is_dir():
            raise click.ClickException(f"cannot sync {directory}: it is not a directory")
        with stores.open_announced(url) as store:
            _create_missing(directory)
            mirror = Mirror(directory, store, state_path=state_path)
            if once:
                problems = _Problems(verbose)
                logging.getLogger("memfs.sync").addHandler(problems)
                try:
                    mirror.run_once()
                finally:
                    logging.getLogger("memfs.sync").removeHandler(problems)
                problems.check(mirror.root)
                if as_json:
                    emit({"dir": str(mirror.root), "store": shown_url(url), "synced": True})
                else:
                    click.echo(f"Synced {mirror.root} with {shown_url(url)}.")
                return
            _stop_on_signals(mirror)
            click.echo(f"Syncing {mirror.root} with {shown_url(url)} (Ctrl-C to stop).", err=True)
            running.run_recorded(mirror)
            click.echo(f"Stopped syncing {mirror.root}.", err=True)
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere) from exc
    finally:
        logging.getLogger("memfs.sync").removeHandler(handler)


class _Problems(logging.Handler):
    """What a one-off pass could not do: its warnings, so that ``--once`` fails with one
    line saying how many and the first, rather than claiming it synced."""

    def __init__(self, verbose: bool) -> None:
        super().__init__(logging.WARNING)
        self.verbose = verbose
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())

    def check(self, root: Path) -> None:
        if not self.seen:
            return
        n = len(self.seen)
        more = f" (and {n - 1} more: run with -v for each)" if n > 1 and not self.verbose else ""
        raise click.ClickException(f"could not sync {root}: {self.seen[0]}{more}")


def _create_missing(directory: Path) -> None:
    if directory.exists() or directory.is_symlink():
        return
    # Like `memfs mount`, a fresh mirror should just work; a typo'd path costs nothing
    # but a new directory filled from the store.
    try:
        directory.mkdir(parents=True, mode=0o700)
    except OSError as exc:
        raise click.ClickException(f"cannot create {directory}: {exc.strerror}") from exc
    click.echo(f"Created {directory.absolute()}.", err=True)


def _log_to_stderr(verbose: bool, quiet_warnings: bool = False) -> logging.Handler:
    # Warnings (conflicts, skipped files, restored wipes) are the person's only news of
    # what the mirror decided, so they go to stderr even without -v; a one-off pass
    # (``quiet_warnings``) sums them up in its one error line instead.
    handler = logging.StreamHandler(sys.stderr)
    if quiet_warnings:
        handler.setLevel(logging.ERROR)
    handler.setFormatter(logging.Formatter("memfs sync: %(message)s"))
    logger = logging.getLogger("memfs.sync")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    return handler


def _stop_on_signals(mirror: Mirror) -> None:
    # The loop runs on this (the main) thread; the handler only asks it to finish, so
    # pending edits are flushed and the state saved before the process exits.
    def handle(signum: int, frame: FrameType | None) -> None:
        mirror.stop_soon()
        # A second Ctrl-C means "now": the default handler raises KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


COMMANDS: list[click.Command] = [sync]
