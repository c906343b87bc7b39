"""``memfs mount`` and ``memfs umount``: the mount daemon for people (``memfs status``
lists what runs: :mod:`memfs.cli.status`)."""

from __future__ import annotations

from pathlib import Path

import click

from memfs import host
from memfs.cli import stores
from memfs.cli.common import JSON_OPTION, emit, store_error, store_option
from memfs.errors import MemfsError
from memfs.mount import daemon, state
from memfs.mount.options import MountOptions
from memfs.mount.state import MountRecord
from memfs.program import command
from memfs.store import shown_url


def _fail(exc: MemfsError, elsewhere: str | None = None) -> click.ClickException:
    return store_error(exc, elsewhere)


def _note(message: str) -> None:
    click.echo(message, err=message.startswith("Warning"))


def _mounted_message(record: MountRecord) -> str:
    mp = record.mountpoint
    what = shown_url(record.store_url)
    if record.subtree:
        what = f"{record.subtree}/ of {what}"
    return (
        f"Mounted {what} at {mp} (pid {record.pid}).\n"
        f'Open it in an editor, grep it, or run: {command("agent", "--root", mp)} "..."\n'
        f"Stop with: {command('umount', mp)}"
    )


def _record_json(record: MountRecord) -> dict[str, object]:
    return {
        "mountpoint": record.mountpoint,
        "store": shown_url(record.store_url),
        "pid": record.pid,
    }


def _ready_here(record: MountRecord, fresh: Path | None) -> None:
    stores.announce_new_store(fresh)
    click.echo(_mounted_message(record).replace("Stop with:", "Stop with Ctrl-C or:"))


@click.command()
@click.argument("mountpoint", required=False, type=click.Path(path_type=Path))
@store_option("Store URL (default: $MEMFS_STORE or the user's memory.db).")
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
@click.option(
    "--expire-unused-for",
    "expire_unused_for",
    metavar="DURATION",
    help="Delete files unused this long (not written, not viewed by the model) on a "
    "schedule, as `memfs expire` would (e.g. 30d); they stay in history.",
)
@click.option(
    "--subtree",
    metavar="PATH",
    help="Mount only this directory of the store (made if missing) as the mount's root; "
    "nothing outside it is reachable through the mount.",
)
@click.option(
    "--exist-ok",
    is_flag=True,
    help="Succeed, saying so, when memfs already serves MOUNTPOINT (make run uses it).",
)
@JSON_OPTION
def mount(
    mountpoint: Path | None,
    store_url: str | None,
    foreground: bool,
    debug: bool,
    commit_on_close: bool,
    allow_other: bool,
    expire_unused_for: str | None,
    subtree: str | None,
    exist_ok: bool,
    as_json: bool,
) -> None:
    """Mount a memory store at MOUNTPOINT (created if missing).

    MOUNTPOINT defaults to $MEMFS_MOUNTPOINT or ~/memories. Caps go in the store URL:
    --store 'sqlite:///path/memory.db?max_tree_bytes=10000000&max_files=500'; a write
    past one is refused with EDQUOT ("Disk quota exceeded").
    """
    from memfs.history.when import BadWhen, parse_duration

    expire_ns = None
    if expire_unused_for is not None:
        try:
            expire_ns = parse_duration(expire_unused_for)
        except BadWhen as exc:
            raise click.BadParameter(str(exc), param_hint="--expire-unused-for") from exc
    options = None
    if commit_on_close or allow_other or expire_ns is not None:
        options = MountOptions(
            commit_on_close=commit_on_close,
            allow_other=allow_other,
            expire_unused_for_ns=expire_ns,
        )
    choice = stores.choose(store_url)
    store_url = choice.url
    try:
        if allow_other:
            host.check_allow_other()
        target = mountpoint if mountpoint is not None else state.default_mountpoint()
        serving = state.lookup(target) if exist_ok else None
        if serving is not None and Path(serving.mountpoint) == state.normalize(target):
            if as_json:
                emit({**_record_json(serving), "already_mounted": True})
                return
            click.echo(
                f"{serving.mountpoint} is already mounted by memfs: "
                f"{shown_url(serving.store_url)} (pid {serving.pid}).\n"
                f"Stop with: {command('umount', serving.mountpoint)}"
            )
            return
        fresh = stores.new_store_file(store_url)
        if foreground:
            daemon.start(
                target,
                store_url,
                foreground=True,
                debug=debug,
                options=options,
                on_note=_note,
                on_ready=lambda record: _ready_here(record, fresh),
                subtree=subtree,
            )
            click.echo(f"Unmounted {state.normalize(target)}.")
            return
        record = daemon.start(
            target, store_url, debug=debug, options=options, on_note=_note, subtree=subtree
        )
    except MemfsError as exc:
        raise _fail(exc, choice.elsewhere) from exc
    if as_json:
        created = str(fresh) if fresh is not None and fresh.exists() else None
        emit({**_record_json(record), "already_mounted": False, "created_store": created})
        return
    stores.announce_new_store(fresh)
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


COMMANDS: list[click.Command] = [mount, umount]
