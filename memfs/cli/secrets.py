"""``memfs secrets [PATH] [--history]``: credentials already in the memory, masked.

The handler keeps credentials out of what the model writes from now on; this finds what
is already stored (written before, by a person through the mount or the mirror, or with
``--secrets allow``), in the current tree and with ``--history`` in every retained old
revision and deleted file, so a person can take it out. PATH (default: the whole tree,
or the current directory inside a mount) is read as ``memfs history`` reads it. A
secret is never printed whole: each finding shows its line with every finding on it
masked (:func:`memfs.secrets.mask`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import click

from memfs.cli import stores
from memfs.cli.common import opened, resolve, store_option
from memfs.errors import IsADirectory, MemfsError, NotFound, PathError
from memfs.paths import shown
from memfs.secrets import Finding, mask, scan
from memfs.store.base import Store
from memfs.store.matching import decode_text

PREVIEW_WIDTH = 100


@dataclass(frozen=True, slots=True)
class Row:
    path: str
    rev: int
    current: bool
    line: int
    kind: str
    why: str
    preview: str


def preview(text: str, finding: Finding, findings: list[Finding]) -> str:
    """``finding``'s line with every finding that starts on it masked, cut to
    :data:`PREVIEW_WIDTH` characters around the finding."""
    line_start = text.rfind("\n", 0, finding.start) + 1
    line_end = text.find("\n", finding.start)
    line_end = len(text) if line_end == -1 else line_end
    parts: list[str] = []
    at = line_start
    anchor = 0
    for f in findings:
        if f.start < line_start or f.start >= line_end:
            continue
        parts.append(text[at : f.start])
        if f is finding:
            anchor = sum(len(p) for p in parts)
        parts.append(mask(f.value))
        at = max(at, min(f.end, line_end))
    parts.append(text[at:line_end])
    shown = "".join(parts).replace("\t", " ")
    if len(shown) <= PREVIEW_WIDTH:
        return shown
    begin = max(0, min(anchor - PREVIEW_WIDTH // 3, len(shown) - PREVIEW_WIDTH))
    cut = shown[begin : begin + PREVIEW_WIDTH]
    return ("…" if begin else "") + cut + ("…" if begin + PREVIEW_WIDTH < len(shown) else "")


def _rows(path: str, rev: int, current: bool, data: bytes) -> list[Row]:
    """The findings in one revision; binary content (a NUL byte, not UTF-8) is skipped,
    as search skips it, and every printed string has its control bytes escaped."""
    text = decode_text(data)
    if text is None:
        return []
    findings = scan(text)
    return [
        Row(shown(path), rev, current, f.line, f.kind, f.why, shown(preview(text, f, findings)))
        for f in findings
    ]


def _under(path: str, rel: str) -> bool:
    return not rel or path == rel or path.startswith(rel + "/")


def _live_files(store: Store, rel: str) -> Iterator[tuple[str, int]]:
    if rel:
        entry = store.stat(rel)
        if entry.is_file:
            yield entry.path, entry.rev
            return
        if not entry.is_dir:
            return
    for entry in store.walk(rel):
        if entry.is_file:
            yield entry.path, entry.rev


def _ever_files(store: Store, rel: str) -> list[str]:
    """Every path under ``rel`` that the change feed names: files deleted or renamed
    away keep revisions too."""
    seen: set[str] = set()
    for change in store.changes():
        for p in (change.path, change.old_path):
            if p is not None and _under(p, rel):
                seen.add(p)
    return sorted(seen)


@dataclass
class Tally:
    files: int = 0
    old_revisions: int = 0


def scan_store(store: Store, rel: str, with_history: bool, tally: Tally) -> Iterator[Row]:
    """Findings in the files under ``rel``, then (``with_history``) in their retained
    old revisions and in those of files no longer there."""
    current: dict[str, int] = {}
    try:
        live = list(_live_files(store, rel))
    except NotFound:
        if not with_history:
            raise
        live = []  # a deleted file: only its history is left
    for path, _rev in live:
        data, entry = store.read(path)
        current[path] = entry.rev
        tally.files += 1
        yield from _rows(path, entry.rev, True, data)
    if not with_history:
        return
    for path in _ever_files(store, rel):
        try:
            revisions = store.history(path)
        except (NotFound, IsADirectory):
            continue
        for revision in revisions:
            if current.get(path) == revision.rev or revision.redacted_by is not None:
                continue
            try:
                data = store.read_revision(path, revision.rev)
            except NotFound:
                continue  # no longer retained, or redacted meanwhile (Redacted is a NotFound)
            tally.old_revisions += 1
            yield from _rows(path, revision.rev, False, data)


def format_row(row: Row) -> str:
    where = f"rev {row.rev}" + (" (current)" if row.current else "")
    return f"{row.path}  {where}  line {row.line}  {row.kind}  {row.preview}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' if n != 1 else ''}"


def _summary(rows: list[Row], tally: Tally, with_history: bool) -> str:
    from memfs.program import command

    scanned = _count(tally.files, "file")
    if with_history:
        scanned += " and " + _count(tally.old_revisions, "old revision")
    if not rows:
        return f"No credentials found in {scanned}."
    # Where the findings are, each against how many were scanned: "in 5177 files" read as
    # if the findings were spread over all of them.
    holding = _count(len({r.path for r in rows if r.current}), "file")
    where = f"{holding} (of {tally.files:,} scanned)"
    if with_history:
        old = _count(len({(r.path, r.rev) for r in rows if not r.current}), "old revision")
        where += f" and {old} (of {tally.old_revisions:,} scanned)"
    lines = [f"{_count(len(rows), 'likely credential')} in {where}."]
    if any(r.current for r in rows):
        lines.append("Edit a file to take a secret out of its current content.")
    if with_history:
        lines.append(
            f"Remove an old revision's content for good with `{command('redact')} PATH --rev REV`."
        )
    else:
        lines.append(
            f"Old revisions may hold more: `{command('secrets', '--history')}` lists them."
        )
    return "\n".join(lines)


@click.command("secrets")
@click.argument("path", metavar="[PATH]", required=False)
@store_option()
@click.option(
    "--history", "with_history", is_flag=True, help="Also scan old revisions and deleted files."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per finding.")
@click.option(
    "--exit-zero", is_flag=True, help="Exit 0 even when credentials are found (report only)."
)
def secrets(
    path: str | None, store_url: str | None, with_history: bool, as_json: bool, exit_zero: bool
) -> None:
    """List likely credentials stored in the memory tree, masked.

    Exit status 1 when any is found (as a check in a script or CI would want), 0 when
    none is or with --exit-zero.

    Each finding: path, revision, line, kind, and the line with the secret masked.
    PATH is a file or directory in a memfs mount, a model path such as
    /memories/notes, or a path in the store; without it the whole tree (or, inside a
    mount, the current directory). --json prints objects with path, rev, current,
    line, kind, why and preview.
    """
    from memfs.mount import state

    try:
        if path is None and state.lookup(os.getcwd()) is not None:
            choice, rel = resolve(os.getcwd(), store_url)
        elif path is None:
            choice, rel = stores.choose(store_url), ""
        else:
            choice, rel = resolve(path, store_url)
    except PathError as exc:
        raise click.ClickException(f"{path!r} is not a memory path: {exc}") from exc
    except MemfsError as exc:
        raise click.ClickException(str(exc)) from exc
    tally = Tally()
    with opened(choice, readonly=True) as store:
        rows = []
        for row in scan_store(store, rel, with_history, tally):
            rows.append(row)
            click.echo(json.dumps(asdict(row), ensure_ascii=False) if as_json else format_row(row))
    if not as_json:
        click.echo(_summary(rows, tally, with_history))
    if rows and not exit_zero:
        raise click.exceptions.Exit(1)


COMMANDS: list[click.Command] = [secrets]
