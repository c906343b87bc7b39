"""``memfs agent PROMPT``: Claude with the memory tool on the mounted memory tree.

With ``--sessions NAME`` the run is one session of long work (:mod:`memfs.agent.sessions`):
templates set up, a checkpoint at its start, a warning when it leaves the progress log
as it was (the exit status stays what the run earned).

Errors go through the one error edge of :mod:`memfs.cli` like every command's. Exit
status: 0 when the model finished; 1 when the API failed after the SDK's retries or the
agent could not start (no API key, nothing mounted, a tree it cannot use); 2 for a usage
error (options that need another, no PROMPT); 3 when ``--max-iterations`` stopped the
model before it finished; 130 on Ctrl-C.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from memfs.cli.common import store_option
from memfs.cli.session import announce, default_root, progress_warning
from memfs.cli.tool import actor_option, secrets_option
from memfs.errors import MemfsError

if TYPE_CHECKING:
    from memfs.agent.sessions import ProjectSessions, SessionStart

EXIT_API = 1
EXIT_MAX_ITERATIONS = 3


class _Renderer:
    """Prints events: text on stdout as it arrives, memory operations on stderr."""

    def __init__(self, show_operations: bool) -> None:
        self.show_operations = show_operations
        self.at_line_start = True
        self.max_iterations_reached = False

    def _text(self, text: str) -> None:
        if text:
            click.echo(text, nl=False)
            self.at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        if not self.at_line_start:
            click.echo()
            self.at_line_start = True

    def render(self, event: object) -> None:
        from memfs.agent import Compacted, Done, MessageDone, NoticeAdded, TextDelta, ToolCall

        if isinstance(event, TextDelta):
            self._text(event.text)
        elif isinstance(event, MessageDone):
            self.end_line()
        elif isinstance(event, ToolCall):
            if self.show_operations:
                click.echo(event.summary, err=True)
        elif isinstance(event, Compacted):
            if self.show_operations:
                click.echo("context compacted: the API summarised the conversation", err=True)
        elif isinstance(event, NoticeAdded):
            if self.show_operations:
                click.echo(f"notice: {event.text}", err=True)
        elif isinstance(event, Done):
            self.end_line()
            if event.max_iterations_reached:
                self.max_iterations_reached = True
                turns = f"{event.turns} model turn{'s' if event.turns != 1 else ''}"
                click.echo(
                    f"Stopped after {turns} (--max-iterations); "
                    "the last tool results were not sent; raise --max-iterations to let it finish",
                    err=True,
                )


def _project(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A bad project name is a usage error (exit 2), said before anything runs."""
    if value is None:
        return None
    from memfs.agent.sessions import check_project

    try:
        return check_project(value)
    except MemfsError as exc:
        raise click.BadParameter(str(exc)) from None


def _check_progress(sessions: ProjectSessions, started: SessionStart) -> None:
    """Warn (one line, the exit status unchanged) when the session left the progress
    log as it found it: the next session would start from an old state."""
    try:
        updated = sessions.progress_updated(started)
    except MemfsError as exc:
        click.echo(f"memfs agent: could not check the progress log: {exc}", err=True)
        return
    if not updated:
        click.echo(progress_warning(started.progress, "memfs agent"), err=True)


def _read_prompts(first: str | None, interactive: bool, stdin: TextIO) -> Iterator[str]:
    """PROMPT, then (interactive) one prompt per line until EOF or ``/exit``."""
    if first is not None and first.strip():
        yield first
    if not interactive:
        return
    while True:
        if stdin.isatty():
            click.echo("> ", nl=False, err=True)
        line = stdin.readline()
        if not line or line.strip() == "/exit":
            return
        if line.strip():
            yield line.rstrip("\n")


@click.command("agent")
@click.argument("prompt", required=False)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Memory directory (default: the `memfs mount` mountpoint, if mounted).",
)
@store_option("Store URL for change notices (default: the mount's).")
@click.option("--model", default=None, help="Claude model (default: claude-sonnet-5-5).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Per reply.")
@click.option(
    "--system",
    "system_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File whose text is the system prompt.",
)
@click.option("--max-iterations", type=click.IntRange(min=1), help="Model turns per prompt.")
@click.option(
    "--transcript",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the whole exchange to this file as JSON lines.",
)
@click.option(
    "--context-management",
    is_flag=True,
    help="Clear old tool results (memory ones too) as the context grows.",
)
@click.option(
    "--clear-at",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="With --context-management: clear once a prompt passes TOKENS (default 100000).",
)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    metavar="N",
    help="With --context-management: keep the newest N tool uses (default 3).",
)
@click.option(
    "--compaction",
    is_flag=True,
    help="Let the API summarise the conversation as it fills; Claude is told first.",
)
@click.option(
    "--compact-at",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="With --compaction: summarise once a prompt passes TOKENS (default 150000).",
)
@click.option("--search-tool", is_flag=True, help="Give Claude memory_search as a second tool.")
@click.option(
    "--sessions",
    "project",
    metavar="NAME",
    callback=_project,
    help="One session of long work on project NAME: its progress log, feature checklist"
    " and start-up notes in /memories/sessions/NAME/ (see docs/sessions.md).",
)
@click.option("-i", "--interactive", is_flag=True, help="Chat: one prompt per line.")
@click.option("--create-overwrites", is_flag=True, help="Let `create` replace a file.")
@secrets_option
@actor_option("agent")
@click.option("--no-stream", is_flag=True, help="Print each reply whole.")
@click.option("-v", "--verbose", is_flag=True, help="Show memory operations on stderr.")
def agent(
    prompt: str | None,
    root: Path | None,
    store_url: str | None,
    model: str | None,
    max_tokens: int | None,
    system_file: Path | None,
    max_iterations: int | None,
    transcript: Path | None,
    context_management: bool,
    clear_at: int | None,
    keep: int | None,
    compaction: bool,
    compact_at: int | None,
    search_tool: bool,
    project: str | None,
    interactive: bool,
    create_overwrites: bool,
    secrets: str,
    actor: str,
    no_stream: bool,
    verbose: bool,
) -> None:
    """Run Claude with the memory tool on the shared memory tree.

    Needs ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL is honoured). Exit status: 0 done,
    1 an API error after retries or a setup problem (no key, nothing mounted), 2 a usage
    error, 3 stopped by --max-iterations, 130 interrupted.
    """
    import anthropic

    from memfs.agent import (
        DEFAULT_MAX_TOKENS,
        DEFAULT_MODEL,
        MISSING_KEY,
        AgentSession,
        ContextOptions,
        Transcript,
        has_credentials,
    )

    if (clear_at is not None or keep is not None) and not context_management:
        raise click.UsageError("--clear-at and --keep need --context-management")
    if compact_at is not None and not compaction:
        raise click.UsageError("--compact-at needs --compaction")
    if not interactive and (prompt is None or not prompt.strip()):
        raise click.UsageError("give a PROMPT, or use -i for an interactive session")
    client = anthropic.Anthropic()
    if not has_credentials(client):
        raise click.ClickException(MISSING_KEY)
    root = root if root is not None else default_root()
    system = system_file.read_text(encoding="utf-8") if system_file is not None else None
    sessions: tuple[ProjectSessions, SessionStart] | None = None
    if project is not None:
        from memfs.agent.sessions import ProjectSessions, instruction

        try:
            project_sessions = ProjectSessions(root, project, actor=actor, store_url=store_url)
            started = project_sessions.start()
        except MemfsError as exc:
            raise click.ClickException(str(exc)) from None
        sessions = (project_sessions, started)
        announce(started, root, "memfs agent")
        system = "\n\n".join(part for part in (system, instruction(started)) if part)

    show = verbose or sys.stdout.isatty()
    renderer = _Renderer(show)
    failed = False
    try:
        log = Transcript(transcript) if transcript is not None else None
    except OSError as exc:
        raise click.ClickException(
            f"cannot write the transcript {transcript}: {exc.strerror}"
        ) from None
    try:
        session = AgentSession(
            root,
            client=client,
            model=model or DEFAULT_MODEL,
            max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
            system=system,
            max_iterations=max_iterations,
            context=ContextOptions(
                clear=context_management,
                clear_at=clear_at,
                keep=keep,
                compaction=compaction,
                compact_at=compact_at,
            ),
            search_tool=search_tool,
            create_overwrites=create_overwrites,
            secrets=secrets,
            stream=not no_stream,
            store_url=store_url,
            transcript=log,
            actor=actor,
        )
    except MemfsError as exc:
        if log is not None:
            log.close()
        raise click.ClickException(str(exc)) from None
    with session:
        for line in _read_prompts(prompt, interactive, sys.stdin):
            try:
                for event in session.ask(line):
                    renderer.render(event)
            except MemfsError as exc:
                renderer.end_line()
                if not interactive:
                    raise click.ClickException(str(exc)) from None
                # A chat goes on after a failed turn: the same one line, then the next.
                click.ClickException(str(exc)).show()
                failed = True
            except KeyboardInterrupt:
                renderer.end_line()
                if sessions is not None:
                    _check_progress(*sessions)
                raise  # the error edge: exit 130
    if sessions is not None:
        _check_progress(*sessions)
    if failed:
        sys.exit(EXIT_API)
    if renderer.max_iterations_reached:
        sys.exit(EXIT_MAX_ITERATIONS)


COMMANDS: list[click.Command] = [agent]
