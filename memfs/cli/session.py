"""``memfs session start|end NAME``: the multi-session pattern for any agent on the
mount (:mod:`memfs.agent.sessions`), e.g. from Claude Code's SessionStart and Stop hooks.

``start`` sets the project's files up from the templates where absent, takes the
session's checkpoint and prints the protocol for the model on stdout (a SessionStart
hook's stdout goes into Claude's context); what it did goes to stderr. ``end`` checks
that the progress log changed since the project's newest session checkpoint: if not, a
one-line warning on stderr, and with ``--block`` exit status 2 (a Stop hook's exit 2
sends that line to Claude, which then updates the log before it stops).

``memfs agent --sessions NAME`` does both around its own run and prints the same lines.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memfs.cli.tool import actor_option

if TYPE_CHECKING:
    from memfs.agent.sessions import SessionStart

# A Stop hook that exits 2 makes the host continue; the host says so on the next call.
BLOCKED = 2


def announce(started: SessionStart, root: Path, who: str) -> None:
    """Tell the person (stderr) what a session's start did: the files it set up and
    the checkpoint its work is seen from."""
    from memfs.program import command

    if started.created:
        names = ", ".join(path.rsplit("/", 1)[1] for path in started.created)
        click.echo(f"{who}: wrote {names} in {started.directory}/ from templates", err=True)
    if started.checkpoint is None:
        click.echo(
            f"{who}: {root} keeps no history (not a memfs mount): no session checkpoint",
            err=True,
        )
        return
    name = started.checkpoint.name
    see = command("diff", "--since", name, root.absolute())  # pasted from anywhere
    click.echo(f"{who}: session checkpoint {name}; its work: {see}", err=True)


def progress_warning(progress: str, who: str) -> str:
    """The line for a session that ends with the progress log as it found it."""
    return (
        f"{who}: warning: this session ended without updating {progress}; the next"
        " session will not know what it did: update it (or ask the model to)"
    )


def default_root() -> Path:
    """The `memfs mount` mountpoint, when something is mounted there (else a set-up
    error, exit 1, as for every door that needs a mount)."""
    from memfs.mount import state
    from memfs.program import command

    mountpoint = state.default_mountpoint()
    if state.lookup(mountpoint) is None:
        raise click.ClickException(
            f"nothing is mounted at {mountpoint}; run `{command('mount')}` or pass --root DIR"
        )
    return mountpoint


ROOT_OPTION = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Memory directory (default: the `memfs mount` mountpoint, if mounted).",
)


@click.group()
def session() -> None:
    """Long work over many sessions: a progress log, a feature checklist and start-up
    notes in /memories/sessions/NAME/, for an agent that is not `memfs agent`."""


@session.command()
@click.argument("name")
@ROOT_OPTION
@actor_option("agent")
@click.option(
    "--files",
    is_flag=True,
    help="Name the files by their place under DIR (for a host that edits files on the"
    " mount, e.g. Claude Code), not by their /memories path (the memory tool, MCP).",
)
def start(name: str, root: Path | None, actor: str, files: bool) -> None:
    """Start a session of project NAME: write the files that are absent from templates,
    take the checkpoint session-NAME-N, print the protocol for the model on stdout."""
    from memfs.agent.sessions import SESSIONS_DIR, ProjectSessions, instruction

    root = root if root is not None else default_root()
    started = ProjectSessions(root, name, actor=actor).start()
    announce(started, root, "memfs session")
    shown = str(root.absolute() / SESSIONS_DIR / name) if files else None
    click.echo(instruction(started, shown))


def _host_continued() -> bool:
    """Whether the host says this stop was already blocked once (Claude Code's Stop
    hook input, JSON on stdin, has ``stop_hook_active``): blocking again would loop."""
    if sys.stdin is None or sys.stdin.isatty():
        return False
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("stop_hook_active") is True


@session.command()
@click.argument("name")
@ROOT_OPTION
@click.option(
    "--block",
    is_flag=True,
    help="Exit 2 when the progress log was not updated (a Claude Code Stop hook then"
    " sends the warning to Claude), once per stop.",
)
def end(name: str, root: Path | None, block: bool) -> None:
    """Check the end of project NAME's newest session: warn (stderr) when its progress
    log did not change since the session's checkpoint."""
    from memfs.agent.sessions import ProjectSessions
    from memfs.program import command

    root = root if root is not None else default_root()
    sessions = ProjectSessions(root, name)
    latest = sessions.latest()
    if latest is None:
        raise click.ClickException(
            f"no session of {name} has started at {root}; start one with:"
            f" {command('session', 'start', name, '--root', root)}"
        )
    if sessions.progress_updated_since(latest):
        return
    click.echo(progress_warning(f"{sessions.directory}/progress.md", "memfs session"), err=True)
    if block and not _host_continued():
        sys.exit(BLOCKED)


COMMANDS: list[click.Command] = [session]
