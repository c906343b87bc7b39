"""``memfs restore``, ``undo``, ``checkpoint`` and ``redact``: ways back, each one
operation of the tree by ``memfs <command> (user NAME)``.

A restore and an undo are one operation each, all or nothing, so ``memfs undo ID``
takes them back whole; each prints that hint with its id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memfs.cli import stores
from memfs.cli.common import ACTOR_OPTION, NUMBER, local_time, target
from memfs.cli.common import count as count_of
from memfs.cli.log import STORE_OPTION, point
from memfs.cli.stores import StoreChoice
from memfs.history.author import act_for, author_for
from memfs.store import shown_url

if TYPE_CHECKING:
    from memfs.mount.control import Redaction
    from memfs.store.base import Revision

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


def _undo_hint(choice: StoreChoice, op: int | None) -> str:
    args = ("undo",) if op is None else ("undo", str(op))
    return f"undo it with: {_again(choice, *args)}"


@click.command()
@click.argument("path", required=False, metavar="[PATH]")
@click.option("--rev", type=NUMBER, metavar="REV", help="Put PATH's revision REV back.")
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
    from memfs.mount.control import nearby

    author = author_for("restore")
    act = act_for("restore")
    with target(path, store_url, readonly=dry_run) as (store, rel, choice):
        if rev is not None:
            with nearby(store, [rel]), store.acting(act):
                entry = restore_file(store, rel, rev, author=author)
            if as_json:
                record = {"path": rel, "action": "write", "from_rev": rev, "rev": entry.rev}
                click.echo(json.dumps(record))
            else:
                click.echo(
                    f"restored {rel} from revision {rev} as revision {entry.rev};"
                    f" {_undo_hint(choice, act.id)}"
                )
            return
        assert to is not None
        seq = point(store, to, "--to")
        with nearby(store, [rel], dry_run=dry_run), store.acting(act):
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
            click.echo(f"{count_of(plan.changes, 'change')} would return {where} to {to}")
        elif plan.changes == 0:
            click.echo(f"{where} is already as it was at {to}")
        else:
            click.echo(
                f"returned {where} to {to} with {count_of(plan.changes, 'change')};"
                f" {_undo_hint(choice, act.id)}"
            )


@click.command()
@click.argument("op_id", required=False, type=NUMBER, metavar="[ID]")
@ACTOR_OPTION
@click.option(
    "--last",
    "last",
    type=NUMBER,
    is_flag=False,
    flag_value=1,
    metavar="[N]",
    help="The last operation (or the last N) [default without ID].",
)
@click.option("--since", "when", metavar="WHEN", help="Every operation after WHEN (2h, a time).")
@click.option("--force", is_flag=True, help="Take back what can be, despite later changes.")
@click.option("--dry-run", is_flag=True, help="Print what would be taken back, change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object saying what happened.")
@STORE_OPTION
def undo(
    op_id: int | None,
    actor: str | None,
    last: int | None,
    when: str | None,
    force: bool,
    dry_run: bool,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Take back operation ID whole, as one new operation (default: the last one).

    An operation is one memory command, one memfs command, or one process's burst of
    changes through a mount (an rm -rf, a git checkout). All or nothing: when a path it
    would change was changed since by someone else, the conflicts are listed and
    nothing changes, unless --force. Undoing an undo redoes it.
    """
    from memfs.cli.log import moment
    from memfs.history.operations import operation, operations, undo_operations
    from memfs.mount.control import nearby

    if op_id is not None and (last is not None or when is not None or actor is not None):
        raise click.UsageError("give an operation ID, or choose with --last/--since/--actor")
    with target(None, store_url, readonly=dry_run) as (store, _, choice):
        if op_id is not None:
            chosen = [operation(store, op_id)]  # NotFound: one line at the CLI's edge
        else:
            since_ns = None if when is None else moment(store, when, "--since") + 1
            count = None if when is not None and last is None else (last or 1)
            chosen = operations(store, actor=actor, since_ns=since_ns, limit=count or 2**62)
        if not chosen:
            raise click.ClickException("nothing to undo: no operation matches")
        ids = [op.id for op in chosen]
        touched = sorted({p for op in chosen for p in (op.top,)})
        with nearby(store, touched, dry_run=dry_run):
            result = undo_operations(
                store, ids, actor=author_for("undo"), force=force, dry_run=dry_run
            )
    names = ", ".join(f"{op.id} ({op.summary})" for op in chosen)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "undone": ids if result.done else [],
                    "would_undo": ids if dry_run else [],
                    "conflicts": result.conflicts,
                    "done": result.done,
                    "new_op": result.new_op,
                    "changes": result.made,
                }
            )
        )
    if result.conflicts and not result.done:
        if not as_json:
            click.echo(f"memfs undo: operation {names} cannot be taken back whole:", err=True)
            for why in result.conflicts:
                click.echo(f"  {why}", err=True)
        raise click.ClickException(
            "nothing was changed; take back what can be with --force"
            if not dry_run
            else "it could not be taken back now"
        )
    if as_json:
        return
    if dry_run:
        click.echo(f"would undo operation {names}: {count_of(len(result.steps), 'change')}")
        for step in result.steps:
            where = step.path if step.old_path is None else f"{step.old_path} -> {step.path}"
            click.echo(f"  {step.action}  {where}")
        return
    if not result.done:
        click.echo(f"operation {names} changed nothing to take back")
        return
    click.echo(
        f"undid operation {names} as operation {result.new_op}; {_undo_hint(choice, result.new_op)}"
    )
    for why in result.conflicts:  # with --force: what stayed as it is now
        click.echo(f"  left as it is: {why}")


def _check_name(name: str) -> None:
    """Refuse a name ``restore --to`` would read as something else: a WHEN is tried as a
    checkpoint first, so a checkpoint "2h" would shadow the duration for good."""
    from memfs.history.when import Ambiguous, BadWhen, parse_duration, parse_time

    text = name.strip()
    if not text or text.isdigit():
        raise click.BadParameter("a checkpoint name needs a letter (numbers are revisions)")
    try:
        parse_duration(text)
        span = True
    except Ambiguous:
        span = True  # "90m" is refused as a span, but reads as one all the same
    except BadWhen:
        span = False
    if span:
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
    with target(None, store_url, readonly=listing) as (store, _, choice):
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
@click.option("--rev", type=NUMBER, required=True, metavar="REV")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object per redacted revision, then one saying what was purged.",
)
@STORE_OPTION
def redact(path: str, rev: int, as_json: bool, store_url: str | None) -> None:
    """Remove revision REV of PATH's content for good (a secret that got in).

    Every retained revision with the same content is redacted with it; their records
    stay, saying who redacted them and when. The content also goes from what memfs
    keeps on this machine: the journals of the store's mounts (a stopped daemon's
    pending writes are saved first) and recovered copies.
    """
    from memfs.mount.control import redact_here

    with target(path, store_url) as (store, rel, _):

        def redact_in_store() -> list[Revision]:
            with store.acting(act_for("redact")):
                return store.redact(rel, rev, author=author_for("redact"))

        done = redact_here(store, rel, rev, redact_in_store)
    for revision in done.revisions:
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
    if as_json:
        click.echo(
            json.dumps(
                {
                    "purged": {
                        "journals_compacted": [
                            {"mount": mount, "journal": journal, "dropped_bytes": dropped}
                            for mount, journal, dropped in done.compacted
                        ],
                        "stopped_journals_deleted": done.orphans,
                        "saved_first": list(done.saved),
                        "recovered_copies_deleted": list(done.copies),
                    },
                    "not_purged": {
                        "mounts_not_answering": list(done.silent),
                        "journal_kept": done.kept or None,
                        "quarantined_journals": list(done.quarantined),
                        "rescued_stores": list(done.rescued),
                    },
                }
            )
        )
        return
    for line in _purge_lines(done):
        click.echo(line)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _purge_lines(done: Redaction) -> list[str]:
    """What ``memfs redact`` says it purged beside the store, and what it could not."""
    kinds = []
    if done.compacted:
        mounts = ", ".join(mount for mount, _, _ in done.compacted)
        kinds.append(
            f"{_count(len(done.compacted), 'journal', 'journals')} compacted"
            f" ({_count(len(done.compacted), 'mount', 'mounts')} {mounts})"
        )
    if done.orphans:
        saved = (
            f", {_count(len(done.saved), 'file', 'files')} saved from them first"
            if done.saved
            else ""
        )
        kinds.append(
            f"{_count(done.orphans, 'journal', 'journals')} of stopped daemons deleted{saved}"
        )
    if done.copies:
        kinds.append(f"{_count(len(done.copies), 'recovered copy', 'recovered copies')} deleted")
    lines = [
        "purged: " + ", ".join(kinds)
        if kinds
        else "purged: nothing else held it (no mount, journal or recovered copy of this store here)"
    ]
    for mount in done.silent:
        lines.append(
            f"not purged: the mount at {mount} did not answer; its journal may hold the"
            " content until it is unmounted"
        )
    if done.kept:
        lines.append(
            f"not purged: {done.kept} holds writes a stopped daemon acknowledged that could"
            " not be saved now; mount the store to save them, then redact again"
        )
    if done.quarantined:
        lines.append(
            f"not purged: {_count(len(done.quarantined), 'journal', 'journals')} memfs could"
            f" not replay, set aside in {Path(done.quarantined[0]).parent}"
            " (*.failed-*); read them, then delete them"
        )
    if done.rescued:
        lines.append(
            f"not purged: {_count(len(done.rescued), 'whole store', 'whole stores')} rescued"
            f" in {Path(done.rescued[0]).parent} (*.rescued-*) may hold it; delete them once"
            " you no longer need them"
        )
    return lines


COMMANDS = [restore, undo, checkpoint, redact]
