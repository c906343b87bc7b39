"""``memfs expire --unused-for DURATION``: delete the memories nobody used for that long.

The store is ``--store URL``, the one behind a path in a mount (``memfs expire
~/memories --unused-for 30d``), or the user's store. What counts as use and what stays
in history: :mod:`memfs.history.expire`.
"""

from __future__ import annotations

import json
from datetime import datetime

import click

from memfs.cli import stores
from memfs.cli.common import count, store_errors, store_option
from memfs.cli.stores import StoreChoice


def _choice(path: str | None, store_url: str | None) -> StoreChoice:
    if path is None:
        return stores.choose(store_url)
    from memfs.mount import state

    record = state.lookup(path)
    if record is None:
        raise click.ClickException(
            f"{path} is not in a memfs mount; give a path in a mount or --store URL"
        )
    if store_url is not None:
        return stores.choose(store_url)
    return StoreChoice(record.store_url, stores.FROM_MOUNT)


def _when(time_ns: int) -> str:
    return datetime.fromtimestamp(time_ns / 1e9).astimezone().isoformat(timespec="seconds")


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
@click.option(
    "--unused-for",
    "unused_for",
    required=True,
    metavar="DURATION",
    help=(
        "Delete files neither written nor viewed by the model for this long (90min, 12h,"
        " 30d; m alone is refused as ambiguous)."
    ),
)
@store_option()
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, for scripts.")
def expire(
    path: str | None, unused_for: str, store_url: str | None, dry_run: bool, as_json: bool
) -> None:
    """Delete memory files unused for DURATION: not written by anyone and not viewed by
    the model through the memory tool (people's reads through a mount do not count).

    PATH is any path in a memfs mount, naming its store. Deleted files stay in history:
    `memfs restore PATH --rev REV` brings one back. Directories the deletes leave empty
    are removed too.
    """
    from memfs.history.author import act_for
    from memfs.history.expire import expire as run_expire
    from memfs.history.when import BadWhen, parse_duration
    from memfs.mount.control import nearby
    from memfs.store import open_store

    try:
        span = parse_duration(unused_for)
    except BadWhen as exc:
        raise click.BadParameter(str(exc), param_hint="--unused-for") from exc
    choice = _choice(path, store_url)
    with store_errors(choice.elsewhere, choice.url):
        stores.require_existing_store(choice)
        with (
            open_store(choice.url) as store,
            nearby(store, [""], dry_run=dry_run),
            store.acting(act_for("expire")),
        ):
            report = run_expire(store, span, dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    if as_json:
        for f in report.deleted:
            record = {"action": verb, "path": f.path, "rev": f.rev, "size": f.size}
            click.echo(json.dumps(record, ensure_ascii=False))
        for d in report.dirs:
            click.echo(json.dumps({"action": verb, "path": d + "/"}, ensure_ascii=False))
        for p, why in report.skipped:
            click.echo(json.dumps({"action": "skipped", "path": p, "why": why}, ensure_ascii=False))
        return
    for f in report.deleted:
        click.echo(f"{verb} {f.path} (revision {f.rev}, {count(f.size, 'byte')})")
    for d in report.dirs:
        click.echo(f"{verb} {d}/ (left empty)")
    for p, why in report.skipped:
        click.echo(f"skipped {p}: {why}")
    n = len(report.deleted)
    summary = f"{count(n, 'file')} unused since {_when(report.cutoff_ns)}"
    if dry_run:
        click.echo(f"Dry run: {summary} would be deleted; nothing was changed.")
    elif n:
        click.echo(f"Deleted {summary}; they stay in history (memfs history PATH, memfs restore).")
    else:
        click.echo(f"Nothing to expire: no file unused since {_when(report.cutoff_ns)}.")


COMMANDS: list[click.Command] = [expire]
