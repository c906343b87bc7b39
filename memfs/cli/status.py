"""``memfs status``: what memfs runs for this user: mounts, then ``memfs sync`` mirrors.

A daemon or mirror that died is reported once (its record is then deleted), with the
command that recovers or restarts it.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING

import click

from memfs.errors import MemfsError
from memfs.program import command

if TYPE_CHECKING:
    from memfs.mount.state import MountRecord


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


def _since(started: float) -> str:
    return datetime.fromtimestamp(started).isoformat(timespec="seconds")


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _health_notes(r: MountRecord) -> list[str]:
    notes = []
    if r.unsaved:
        shown = ", ".join(r.unsaved[:10]) + (" ..." if len(r.unsaved) > 10 else "")
        notes.append(
            f"{r.mountpoint}: {len(r.unsaved)} file(s) not saved to the store yet: {shown}; "
            f"the daemon keeps retrying, copies are in {r.recovery_dir} (see {r.log_path})"
        )
    if r.store_problem:
        notes.append(
            f"{r.mountpoint}: the daemon cannot reach its store since"
            f" {_since(r.store_down_since)} and reconnects by itself; cached files stay"
            f" readable, writes wait in its journal ({r.store_problem})"
        )
    if r.errors:
        notes.append(
            f"{r.mountpoint}: the daemon logged {r.errors} unexpected error(s); see {r.log_path}"
        )
    return notes


def _mounts() -> None:
    from memfs.mount import daemon

    mounts = daemon.status()
    journals = daemon.left_over_journals()
    for url, n in journals.items():
        click.echo(
            f"Writes a stopped memfs daemon acknowledged are waiting in {n} journal(s) for "
            f"{url}; mount that store again to save them: {command('mount', '--store', url)}"
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
            if r.store_problem:
                state_text = "reconnecting"
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
    _table(rows)
    for note in notes:
        click.echo(note)


def _mirrors() -> None:
    from memfs.sync import running

    live, stale = running.scan()
    if not live and not stale:
        return  # nothing to say: most people never run a mirror
    rows = [("MIRROR", "STORE", "PID", "STATE", "SINCE")]
    notes = []
    for record, alive in [(r, True) for r in live] + [(r, False) for r in stale]:
        rows.append(
            (
                record.dir,
                record.store_url,
                str(record.pid),
                "syncing" if alive else "dead",
                _since(record.started),
            )
        )
        if not alive:
            restart = command("sync", record.dir, "--store", record.store_url)
            notes.append(
                f"{record.dir}: its mirror (pid {record.pid}) died; restart it with: {restart}"
            )
    click.echo()
    _table(rows)
    for note in notes:
        click.echo(note)


@click.command()
def status() -> None:
    """List memfs mounts (mountpoint, store, daemon, size, log) and running mirrors."""
    try:
        _mounts()
        _mirrors()
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc


COMMANDS: list[click.Command] = [status]
