"""``memfs status``: what memfs runs for this user: mounts, then ``memfs sync`` mirrors.

A daemon or mirror that died is reported once (its record is then deleted), with the
command that recovers or restarts it. A store with tree caps (``?max_tree_bytes=N``,
``?max_files=N`` in its URL) gets one line of use against each cap; ``memfs status
--store URL`` shows one store's use and caps, whatever runs.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memfs.cli.common import count as count_of
from memfs.cli.common import size_text, store_option, table
from memfs.errors import MemfsError
from memfs.program import command
from memfs.store import shown_url

if TYPE_CHECKING:
    from memfs.mount.state import MountRecord


def _age(started: float) -> str:
    seconds = max(0, int(time.time() - started))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def _since(started: float) -> str:
    return datetime.fromtimestamp(started).isoformat(timespec="seconds")


def caps_line(
    files: int,
    size: int,
    max_files: int | None,
    max_tree_bytes: int | None,
    max_file_bytes: int | None,
) -> str:
    """Use against each cap: ``3 of 100 files, 1.2 KiB of 1.0 MiB, at most 64.0 MiB a file``."""
    count = (
        f"{files} of {count_of(max_files, 'file')}"
        if max_files is not None
        else f"{count_of(files, 'file')} (no cap)"
    )
    total = (
        f"{size_text(size)} of {size_text(max_tree_bytes)}"
        if max_tree_bytes is not None
        else f"{size_text(size)} (no cap)"
    )
    per_file = (
        f"at most {size_text(max_file_bytes)} a file" if max_file_bytes else "no cap per file"
    )
    return f"{count}, {total}, {per_file}"


def _has_caps(max_files: int | None, max_tree_bytes: int | None) -> bool:
    return max_files is not None or max_tree_bytes is not None


def _store_caps(url: str) -> str | None:
    """The caps line of a capped store (None without tree caps or when it cannot be read)."""
    from memfs.store import open_store

    try:
        with open_store(url, readonly=True) as store:
            if not _has_caps(store.max_files, store.max_tree_bytes):
                return None
            usage = store.usage()
            return caps_line(
                usage.files,
                usage.bytes,
                store.max_files,
                store.max_tree_bytes,
                store.max_file_bytes,
            )
    except MemfsError:
        return None


def _health_notes(r: MountRecord) -> list[str]:
    notes = []
    if r.lost:
        notes.append(f"{r.mountpoint}: {r.lost}; writes answer EIO: unmount it, then mount again")
    for conflict in r.conflicts:
        path, _, copy = conflict.partition(" -> ")
        notes.append(
            f"{r.mountpoint}: conflict: two writers changed the same lines of {path}; one"
            f" version is there, the other is kept whole as {copy}: merge them by hand,"
            " then delete the copy"
        )
    if r.unsaved:
        shown = ", ".join(r.unsaved[:10]) + (" ..." if len(r.unsaved) > 10 else "")
        notes.append(
            f"{r.mountpoint}: {count_of(len(r.unsaved), 'file')} not saved to the store yet:"
            f" {shown}; "
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


def _left_there(mountpoint: Path, again: str) -> str:
    """What a dead daemon's unmounted directory holds, and the command that saves it."""
    from memfs.mount import leftovers

    try:
        found = leftovers.find(mountpoint)
    except MemfsError as exc:
        return str(exc)
    if not found.files and not found.dirs:
        return "nothing is left mounted."
    shown = ", ".join(found.files[:10]) + (" ..." if len(found.files) > 10 else "")
    were = "was" if len(found.files) == 1 else "were"
    return (
        f"{count_of(len(found.files), 'file')} {were} written into the directory while it was not "
        f"mounted ({shown or 'directories only'}); this saves them to the store and "
        f"mounts again: {again}"
    )


def _mounts(out: dict[str, list[dict[str, object]]] | None = None) -> None:
    """The mounts' table and notes, or (``out``) their JSON records added to ``out``."""
    from memfs.mount import daemon

    mounts = daemon.status()
    journals = daemon.left_over_journals()
    for url, n in journals.items():
        # A --subtree mount's journal is named for its store and directory.
        url, _, subtree = url.partition("#subtree=")
        again = command(
            "mount", "--store", shown_url(url), *(["--subtree", subtree] * bool(subtree))
        )
        if out is not None:
            out["journals"].append({"store": shown_url(url), "journals": n, "recover": again})
            continue
        click.echo(
            f"Writes a stopped memfs daemon acknowledged are waiting in {n} journal(s) for "
            f"{shown_url(url)}; mount that store again to save them: {again}"
        )
    if not mounts and out is None:
        click.echo("No memfs mounts.")
        return
    rows = [("MOUNTPOINT", "STORE", "PID", "STATE", "UP", "FILES", "SIZE", "LOG")]
    notes: list[str] = []
    for m in mounts:
        r = m.record
        before = len(notes)
        if r.subtree:
            notes.append(f"{r.mountpoint}: serves the store's directory {r.subtree}/ as its root")
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
            if r.lost:
                state_text = "lost"
            if m.files is not None and _has_caps(m.max_files, m.max_tree_bytes):
                line = caps_line(
                    m.files, m.bytes or 0, m.max_files, m.max_tree_bytes, m.max_file_bytes
                )
                notes.append(f"{r.mountpoint}: caps: {line}")
        else:
            state_text = "dead"
            files = "-"
            again = command(
                "mount",
                r.mountpoint,
                "--store",
                shown_url(r.store_url),
                *(["--subtree", r.subtree] * bool(r.subtree)),
            )
            notes.append(
                f"{r.mountpoint}: its daemon (pid {r.pid}) died; "
                + (
                    "the mount fails every access until you run (it saves what the daemon"
                    f" journaled and mounts again): {again}"
                    if m.mounted
                    else _left_there(Path(r.mountpoint), again)
                )
            )
        if out is not None:
            out["mounts"].append(
                {
                    "mountpoint": r.mountpoint,
                    "store": shown_url(r.store_url),
                    "subtree": r.subtree,
                    "pid": r.pid,
                    "state": state_text,
                    "started": r.started,
                    "files": m.files,
                    "bytes": m.bytes,
                    "max_files": m.max_files,
                    "max_tree_bytes": m.max_tree_bytes,
                    "max_file_bytes": m.max_file_bytes,
                    "log": r.log_path,
                    "notes": [n.removeprefix(f"{r.mountpoint}: ") for n in notes[before:]],
                }
            )
            continue
        rows.append(
            (
                r.mountpoint,
                shown_url(r.store_url) + (f" ({r.subtree}/)" if r.subtree else ""),
                str(r.pid),
                state_text,
                _age(r.started),
                files,
                size_text(m.bytes),
                r.log_path,
            )
        )
    if out is not None:
        return
    table(rows)
    for note in notes:
        click.echo(note)


def _mirrors(out: dict[str, list[dict[str, object]]] | None = None) -> None:
    from memfs.sync import running

    live, stale = running.scan()
    if not live and not stale:
        return  # nothing to say: most people never run a mirror
    rows = [("MIRROR", "STORE", "PID", "STATE", "SINCE")]
    notes: list[str] = []
    for record, alive in [(r, True) for r in live] + [(r, False) for r in stale]:
        before = len(notes)
        rows.append(
            (
                record.dir,
                shown_url(record.store_url),
                str(record.pid),
                "syncing" if alive else "dead",
                _since(record.started),
            )
        )
        if alive:
            line = _store_caps(record.store_url)
            if line is not None:
                notes.append(f"{record.dir}: caps: {line}")
        if not alive:
            restart = command("sync", record.dir, "--store", shown_url(record.store_url))
            notes.append(
                f"{record.dir}: its mirror (pid {record.pid}) died; restart it with: {restart}"
            )
        if out is not None:
            out["mirrors"].append(
                {
                    "dir": record.dir,
                    "store": shown_url(record.store_url),
                    "pid": record.pid,
                    "state": "syncing" if alive else "dead",
                    "started": record.started,
                    "notes": [n.removeprefix(f"{record.dir}: ") for n in notes[before:]],
                }
            )
    if out is not None:
        return
    click.echo()
    table(rows)
    for note in notes:
        click.echo(note)


def _webdav(out: dict[str, list[dict[str, object]]] | None = None) -> None:
    """The running WebDAV servers (``memfs webdav``): address, store, process."""
    from memfs.webdav import running

    live, _ = running.scan()
    if out is not None:
        for record in live:
            out["webdav"].append(
                {
                    "url": record.url,
                    "store": shown_url(record.store_url),
                    "subtree": record.subtree,
                    "pid": record.pid,
                    "started": record.started,
                }
            )
        return
    if not live:
        return  # a dead server leaves nothing to do: its record is cleaned up quietly
    rows = [("WEBDAV", "STORE", "PID", "SINCE")]
    for record in live:
        where = shown_url(record.store_url) + (f" ({record.subtree}/)" if record.subtree else "")
        rows.append((record.url, where, str(record.pid), _since(record.started)))
    click.echo()
    table(rows)


def _one_store(url: str, as_json: bool = False) -> None:
    from memfs.cli import stores
    from memfs.cli.common import opened

    choice = stores.choose(url)
    with opened(choice, readonly=True) as store:
        usage = store.usage()
        caps = (store.max_files, store.max_tree_bytes, store.max_file_bytes)
    if as_json:
        record = {
            "store": shown_url(choice.url),
            "files": usage.files,
            "dirs": usage.dirs,
            "bytes": usage.bytes,
            "max_files": caps[0],
            "max_tree_bytes": caps[1],
            "max_file_bytes": caps[2],
        }
        click.echo(json.dumps(record, ensure_ascii=False))
        return
    line = caps_line(usage.files, usage.bytes, *caps)
    dirs = count_of(usage.dirs, "directory", "directories")
    click.echo(f"{shown_url(choice.url)}: {dirs}; caps: {line}")


@click.command()
@store_option("Show only this store's use against its caps (files, bytes, per file).")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object: mounts, mirrors, journals, webdav."
)
def status(store_url: str | None, as_json: bool) -> None:
    """List memfs mounts (mountpoint, store, daemon, size, log), running mirrors and
    WebDAV servers, with use against the caps of each capped store."""
    try:
        if store_url is not None:
            _one_store(store_url, as_json)
            return
        if as_json:
            out: dict[str, list[dict[str, object]]] = {
                "mounts": [],
                "mirrors": [],
                "journals": [],
                "webdav": [],
            }
            _mounts(out)
            _mirrors(out)
            _webdav(out)
            click.echo(json.dumps(out, ensure_ascii=False))
            return
        _mounts()
        _mirrors()
        _webdav()
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc


COMMANDS: list[click.Command] = [status]
