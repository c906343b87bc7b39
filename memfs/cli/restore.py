"""``memfs restore``, ``undo``, ``checkpoint`` and ``redact``: ways back, each an
ordinary change of the tree authored ``memfs <command> (user NAME)``.

A restore of the tree and an undo are one batch each, so one ``memfs undo`` reverts
them whole; each prints that hint.
"""

from __future__ import annotations

import json

import click

from memfs.cli import stores
from memfs.cli.common import local_time, target
from memfs.cli.log import STORE_OPTION, point
from memfs.cli.stores import StoreChoice
from memfs.history.author import author_for
from memfs.store import shown_url

_VERBS = {
    "write": "put back",
    "delete": "delete",
    "mkdir": "make directory",
    "rmdir": "remove directory",
}


def _again(choice: StoreChoice, *args: str) -> str:
    """A memfs command line that works on the same store, pasted anywhere."""
    from memfs.program import command

    if choice.elsewhere in (stores.FROM_DEFAULT, stores.FROM_ENV):
        return command(*args)
    return command(*args, "--store", shown_url(choice.url))


def _undo_hint(choice: StoreChoice) -> str:
    return f"undo it with: {_again(choice, 'undo')}"


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
@click.option(
    "--rev", type=click.IntRange(min=1), metavar="REV", help="Put PATH's revision REV back."
)
@click.option(
    "--to",
    "to",
    metavar="WHEN",
    help="Return the tree (or PATH) to a checkpoint, revision or time.",
)
@click.option("--dry-run", is_flag=True, help="Print what --to would do, change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per path.")
@STORE_OPTION
def restore(
    path: str | None,
    rev: int | None,
    to: str | None,
    dry_run: bool,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Put earlier content back as new revisions.

    memfs restore PATH --rev REV puts one revision of a file back, also for a deleted
    file or a path renamed away. memfs restore --to NAME|REV|TIME [PATH] returns the
    whole tree (or PATH's subtree) to a checkpoint, a revision or a time: files are put
    back, files made since are deleted (they stay in history).
    """
    from memfs.history.restore import restore_file, restore_tree

    if (rev is None) == (to is None):
        raise click.UsageError("give either PATH --rev REV or --to WHEN [PATH]")
    if rev is not None and path is None:
        raise click.UsageError("--rev needs the PATH of the file to restore")
    if dry_run and to is None:
        raise click.UsageError("--dry-run goes with --to")
    author = author_for("restore")
    with target(path, store_url) as (store, rel, choice):
        if rev is not None:
            entry = restore_file(store, rel, rev, author=author)
            if as_json:
                record = {"path": rel, "action": "write", "from_rev": rev, "rev": entry.rev}
                click.echo(json.dumps(record))
            else:
                click.echo(f"restored {rel} from revision {rev} as revision {entry.rev}")
            return
        assert to is not None
        seq = point(store, to, "--to")
        plan = restore_tree(store, seq, rel, author=author, dry_run=dry_run)
        if as_json:
            for kind in ("delete", "rmdir", "mkdir", "write", "unavailable", "symlinks"):
                for item in getattr(plan, kind):
                    record = {"path": item, "action": kind, "dry_run": dry_run}
                    click.echo(json.dumps(record))
            return
        for kind in ("delete", "rmdir", "mkdir", "write"):
            for item in getattr(plan, kind):
                click.echo(f"{'would ' if dry_run else ''}{_VERBS[kind]}  {item}")
        for item in plan.unavailable:
            click.echo(f"cannot restore  {item}  (its content is no longer retained)")
        for item in plan.symlinks:
            click.echo(f"cannot restore  {item}  (a symlink: its target is not in history)")
        where = rel or "the tree"
        if dry_run:
            click.echo(f"{plan.changes} changes would return {where} to {to}")
        elif plan.changes == 0:
            click.echo(f"{where} is already as it was at {to}")
        else:
            click.echo(
                f"returned {where} to {to} with {plan.changes} changes; {_undo_hint(choice)}"
            )


@click.command()
@click.option("--author", metavar="TEXT", help="Only changes whose author contains TEXT.")
@click.option("--last", type=click.IntRange(min=1), metavar="N", help="The last N operations.")
@click.option(
    "--since", "when", metavar="WHEN", help="Every change after a revision, time or span."
)
@click.option("--dry-run", is_flag=True, help="Print what would be undone, change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per change.")
@STORE_OPTION
def undo(
    author: str | None,
    last: int | None,
    when: str | None,
    dry_run: bool,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Revert the chosen changes (default: the last operation), newest first.

    A change whose file was changed since by someone else is left alone and reported
    as a conflict, never overwritten.
    """
    from memfs.history.undo import select
    from memfs.history.undo import undo as run_undo

    with target(None, store_url) as (store, _, choice):
        since = None if when is None else point(store, when)
        chosen = select(store, author=author, last=last, since_seq=since)
        if not chosen:
            click.echo("nothing to undo")
            return
        report = run_undo(store, chosen, author=author_for("undo"), dry_run=dry_run)
    for outcome in report.outcomes:
        change = outcome.change
        path = change.path if change.old_path is None else f"{change.old_path} -> {change.path}"
        if as_json:
            record = {
                "seq": change.seq,
                "op": change.kind,
                "path": change.path,
                "old_path": change.old_path,
                "author": change.author,
                "result": outcome.result,
                "why": outcome.why,
            }
            click.echo(json.dumps(record))
            continue
        verb = {"done": "would undo" if dry_run else "undid"}.get(outcome.result, outcome.result)
        why = f"  ({outcome.why})" if outcome.why else ""
        click.echo(f"{verb}  {change.kind}  {path}  by {change.author}{why}")
    if as_json:
        return
    done, conflicts = report.count("done"), report.count("conflict")
    summary = f"{done} {'would be ' if dry_run else ''}undone, {conflicts} conflicts"
    others = len(report.outcomes) - done - conflicts
    if others:
        summary += f", {others} not undoable"
    if not dry_run and report.made:
        summary += f"; {_undo_hint(choice)}"
    click.echo(summary)


def _check_name(name: str) -> None:
    """Refuse a name ``restore --to`` would read as something else: a WHEN is tried as a
    checkpoint first, so a checkpoint "2h" would shadow the duration for good."""
    from memfs.history.when import BadWhen, parse_duration, parse_time

    text = name.strip()
    if not text or text.isdigit():
        raise click.BadParameter("a checkpoint name needs a letter (numbers are revisions)")
    try:
        parse_duration(text)
    except BadWhen:
        pass
    else:
        raise click.BadParameter(
            f"{name!r} reads as a duration (2h, 3d); a checkpoint name must not, or"
            " `restore --to` could not tell them apart: give it a word, e.g. before-refactor"
        )
    if parse_time(text) is not None:
        raise click.BadParameter(
            f"{name!r} reads as a time; a checkpoint name must not, or `restore --to` could"
            " not tell them apart: give it a word, e.g. before-refactor"
        )


@click.command()
@click.argument("name", required=False)
@click.option("--list", "listing", is_flag=True, help="List the checkpoints.")
@click.option("--delete", "delete", is_flag=True, help="Forget checkpoint NAME (history stays).")
@click.option("--json", "as_json", is_flag=True, help="With --list: one JSON object per line.")
@STORE_OPTION
def checkpoint(
    name: str | None, listing: bool, delete: bool, as_json: bool, store_url: str | None
) -> None:
    """Name the current state of the whole tree (cheap: a point of its feed, no copy).

    Return to it with: memfs restore --to NAME
    """
    if listing == (name is not None):
        raise click.UsageError("give a NAME, or --list")
    if name is not None:
        _check_name(name)
    with target(None, store_url) as (store, _, choice):
        if listing:
            for cp in store.checkpoints():
                record = {
                    "name": cp.name,
                    "seq": cp.seq,
                    "time_ns": cp.time_ns,
                    "author": cp.author,
                }
                line = f"{cp.name}  {local_time(cp.time_ns)}  {cp.author}  change {cp.seq}"
                click.echo(json.dumps(record) if as_json else line)
            return
        assert name is not None
        if delete:
            store.delete_checkpoint(name)
            click.echo(f"forgot checkpoint {name}")
            return
        cp = store.set_checkpoint(name, author=author_for("checkpoint"))
    again = _again(choice, "restore", "--to", cp.name)
    click.echo(f"checkpoint {cp.name} at change {cp.seq}; return to it with: {again}")


@click.command()
@click.argument("path", metavar="PATH")
@click.option("--rev", type=click.IntRange(min=1), required=True, metavar="REV")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per redacted revision.")
@STORE_OPTION
def redact(path: str, rev: int, as_json: bool, store_url: str | None) -> None:
    """Remove revision REV of PATH's content for good (a secret that got in).

    Every retained revision with the same content is redacted with it; their records
    stay, saying who redacted them and when.
    """
    with target(path, store_url) as (store, rel, _):
        redacted = store.redact(rel, rev, author=author_for("redact"))
    for revision in redacted:
        if as_json:
            record = {
                "path": revision.path,
                "rev": revision.rev,
                "sha256": revision.sha256,
                "redacted_by": revision.redacted_by,
                "redacted_ns": revision.redacted_ns,
            }
            click.echo(json.dumps(record))
        else:
            click.echo(
                f"redacted {revision.path} revision {revision.rev} (by {revision.redacted_by})"
            )


COMMANDS = [restore, undo, checkpoint, redact]
