"""``memfs mount``, ``memfs umount`` and ``memfs status``: the mount daemon for people."""

from __future__ import annotations

import time
from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.program import command
from memfs.errors import MemfsError
from memfs.mount import daemon, host, state
from memfs.mount.options import MountOptions
from memfs.mount.state import MountRecord


def _fail(exc: MemfsError, elsewhere: str | None = None) -> click.ClickException:
    return click.ClickException(stores.message(exc, elsewhere))


def _note(message: str) -> None:
    click.echo(message, err=message.startswith("Warning"))


def _mounted_message(record: MountRecord) -> str:
    mp = record.mountpoint
    return (
        f"Mounted {record.store_url} at {mp} (pid {record.pid}).\n"
        f'Open it in an editor, grep it, or run: {command("agent", "--root", mp)} "..."\n'
        f"Stop with: {command('umount', mp)}"
    )


@click.command()
@click.argument("mountpoint", required=False, type=click.Path(path_type=Path))
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    help="Store URL (default: $MEMFS_STORE or the user's memory.db).",
)
@click.option("--foreground", is_flag=True, help="Serve in this process until Ctrl-C.")
@click.option("--debug", is_flag=True, help="Log every FUSE request (to the log, or stderr).")
@click.option(
    "--commit-on-close",
    is_flag=True,
    help="Commit a file's writes when it is closed, not only on fsync or after 0.1 s "
    "without writes (slower: every close reaches the daemon).",
)
@click.option(
    "--allow-other",
    is_flag=True,
    help="Let other users use the mount (the kernel checks file modes; their new files "
    "are theirs). Needs root, or user_allow_other in /etc/fuse.conf.",
)
def mount(
    mountpoint: Path | None,
    store_url: str | None,
    foreground: bool,
    debug: bool,
    commit_on_close: bool,
    allow_other: bool,
) -> None:
    """Mount a memory store at MOUNTPOINT (created if missing).

    MOUNTPOINT defaults to $MEMFS_MOUNTPOINT or ~/memories.
    """
    options = None
    if commit_on_close or allow_other:
        options = MountOptions(commit_on_close=commit_on_close, allow_other=allow_other)
    choice = stores.choose(store_url)
    store_url = choice.url
    try:
        if allow_other:
            host.check_allow_other()
        target = mountpoint if mountpoint is not None else state.default_mountpoint()
        if foreground:
            daemon.start(
                target,
                store_url,
                foreground=True,
                debug=debug,
                options=options,
                on_note=_note,
                on_ready=lambda record: click.echo(
                    _mounted_message(record).replace("Stop with:", "Stop with Ctrl-C or:")
                ),
            )
            click.echo(f"Unmounted {state.normalize(target)}.")
            return
        record = daemon.start(target, store_url, debug=debug, options=options, on_note=_note)
    except MemfsError as exc:
        raise _fail(exc, choice.elsewhere) from exc
    click.echo(_mounted_message(record))


@click.command()
@click.argument("mountpoint", required=False, type=click.Path(path_type=Path))
def umount(mountpoint: Path | None) -> None:
    """Unmount a memfs mount, committing buffered writes first.

    MOUNTPOINT defaults to $MEMFS_MOUNTPOINT or ~/memories.
    """
    target = mountpoint if mountpoint is not None else state.default_mountpoint()
    try:
        daemon.stop(target, on_note=_note)
    except MemfsError as exc:
        raise _fail(exc) from exc
    click.echo(f"Unmounted {state.normalize(target)}.")


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _age(started: float) -> str:
    seconds = max(0, int(time.time() - started))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def _health_notes(r: MountRecord) -> list[str]:
    notes = []
    if r.unsaved:
        shown = ", ".join(r.unsaved[:10]) + (" ..." if len(r.unsaved) > 10 else "")
        notes.append(
            f"{r.mountpoint}: {len(r.unsaved)} file(s) not saved to the store yet: {shown}; "
            f"the daemon keeps retrying, copies are in {r.recovery_dir} (see {r.log_path})"
        )
    if r.errors:
        notes.append(
            f"{r.mountpoint}: the daemon logged {r.errors} unexpected error(s); see {r.log_path}"
        )
    return notes


@click.command()
def status() -> None:
    """List memfs mounts: mountpoint, store, daemon, size, log."""
    try:
        mounts = daemon.status()
        journals = daemon.left_over_journals()
    except MemfsError as exc:
        raise _fail(exc) from exc
    for url, n in journals.items():
        click.echo(
            f"Writes a stopped memfs daemon acknowledged are waiting in {n} journal(s) for "
            f"{url}; mount that store again to save them: memfs mount --store {url}"
        )
    if not mounts:
        click.echo("No memfs mounts.")
        return
    rows = [("MOUNTPOINT", "STORE", "PID", "STATE", "UP", "FILES", "SIZE", "LOG")]
    notes = []
    for m in mounts:
        r = m.record
        if m.alive:
            state_text = "mounted" if m.mounted else "starting"
            files = "-" if m.files is None else str(m.files)
            if m.problem:
                notes.append(f"{r.mountpoint}: the store cannot be read: {m.problem}")
            notes.extend(_health_notes(r))
            if r.unsaved:
                state_text = "degraded"
        else:
            state_text = "dead"
            files = "-"
            notes.append(
                f"{r.mountpoint}: its daemon (pid {r.pid}) died; "
                + (
                    f"recover with: {command('mount', r.mountpoint)}"
                    f" or {command('umount', r.mountpoint)}"
                    if m.mounted
                    else "nothing is left mounted."
                )
            )
        rows.append(
            (
                r.mountpoint,
                r.store_url,
                str(r.pid),
                state_text,
                _age(r.started),
                files,
                _size(m.bytes),
                r.log_path,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for note in notes:
        click.echo(note)


COMMANDS: list[click.Command] = [mount, umount, status]
