"""``memfs claude-code enable|status|disable``: a repository's Claude Code memory on the
shared store (the library: :mod:`memfs.agent.claude_code`)."""

from __future__ import annotations

from pathlib import Path

import click

from memfs.cli import stores
from memfs.cli.common import count, size_text, store_error, store_option
from memfs.errors import MemfsError
from memfs.program import command
from memfs.store import shown_url


def _note(message: str) -> None:
    click.echo(message, err=message.startswith("Warning"))


@click.group("claude-code")
def claude_code() -> None:
    """Share this repository's Claude Code memory through the memfs store.

    Run in a git work tree. Every work tree, clone and machine of the repository (and
    every teammate on the same store) then shares one memory directory.
    """


@claude_code.command()
@store_option(
    "Store URL (default: $MEMFS_STORE or the user's memory.db; a postgresql:// URL to "
    "share across machines)."
)
@click.option(
    "--mountpoint",
    type=click.Path(path_type=Path),
    help="Where to mount the store if it is not mounted (default: $MEMFS_MOUNTPOINT or "
    "~/memories).",
)
def enable(store_url: str | None, mountpoint: Path | None) -> None:
    """Mount the store if needed, import Claude Code's current memory into the
    repository's directory, and point Claude Code at it (.claude/settings.local.json)."""
    from memfs.agent import claude_code as cc

    choice = stores.choose(store_url)
    try:
        done = cc.enable(Path.cwd(), choice.url, mountpoint=mountpoint, on_note=_note)
    except MemfsError as exc:
        raise store_error(exc, choice.elsewhere) from exc
    if done.mounted is not None:
        click.echo(f"Mounted {shown_url(done.store_url)} at {done.mounted.mountpoint}.")
    imported = done.imported
    if imported is not None:
        click.echo(
            f"Imported {imported.source}: {count(len(imported.written), 'new file')}, "
            f"{count(imported.index_lines, 'line')} added to {cc.INDEX},"
            f" {imported.same} already there."
        )
        for file, copy in imported.copies:
            click.echo(f"  {file} differs from the shared one: kept beside it as {copy}")
    click.echo(
        f"Claude Code's memory for {done.repo.root} is now {done.memory_dir}\n"
        f"  (store {shown_url(done.store_url)}, directory {done.store_path}),"
        f" set as {cc.KEY} in {done.settings}."
    )
    if done.store_url.lower().startswith(("postgres://", "postgresql://")):
        click.echo(
            "Share it with other machines and teammates: in their clone, run "
            f"{command('claude-code', 'enable', '--store', shown_url(done.store_url))}"
        )
    else:
        click.echo(
            "Other work trees and clones on this machine: run "
            f"{command('claude-code', 'enable')} in each."
        )
    click.echo(f"Undo with: {command('claude-code', 'disable')}")


@claude_code.command()
def status() -> None:
    """Which memory directory Claude Code uses here, on which store, whether it is
    mounted, and how much of MEMORY.md Claude Code loads."""
    from memfs.agent import claude_code as cc

    st = cc.status(Path.cwd())
    click.echo(f"Repository: {st.repo.root} ({st.repo.identity})")
    click.echo(f"Memory directory: {st.memory_dir}")
    if not st.enabled:
        click.echo(
            "Shared: no (Claude Code's own directory); share it with: "
            f"{command('claude-code', 'enable')}"
        )
    else:
        assert st.store_url is not None
        click.echo(f"Store: {shown_url(st.store_url)}, directory {st.store_path}")
        if st.mounted:
            click.echo(f"Mounted: yes, at {st.mountpoint}")
        else:
            click.echo(
                "Mounted: NO - Claude Code would write to the local disk under the "
                f"mountpoint; mount it with: {command('claude-code', 'enable')}"
            )
        if st.setting_changed:
            click.echo(
                f"Warning: {cc.KEY} no longer names the shared directory (changed by hand?);"
                f" set it again with: {command('claude-code', 'enable')}"
            )
    if st.index_lines is None or st.index_bytes is None:
        click.echo(f"{cc.INDEX}: none yet")
        return
    click.echo(
        f"{cc.INDEX}: {st.index_lines} line(s), {size_text(st.index_bytes)}; Claude Code loads"
        f" the first {cc.INDEX_MAX_LINES} lines or {cc.INDEX_MAX_BYTES // 1024} KB"
        + (" - it is cut: move detail into topic files" if st.index_cut else "")
    )


@claude_code.command()
def disable() -> None:
    """Put Claude Code's settings back as enable found them; the memory stays in the
    store (and mounted)."""
    from memfs.agent import claude_code as cc

    done = cc.disable(Path.cwd())
    what = (
        f"{cc.KEY} is {done.restored!r} again"
        if done.had_key
        else (f"removed {done.settings}" if done.removed_file else f"removed {cc.KEY}")
    )
    click.echo(
        f"Claude Code uses {done.memory_dir} again ({what}).\n"
        f"The shared memory stays in {shown_url(done.store_url)} at {done.store_path}."
    )


COMMANDS: list[click.Command] = [claude_code]
