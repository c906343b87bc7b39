"""The MCP tools: ``memory`` (the memory tool as is), ``memory_search``, ``memory_history``.

``memory`` takes exactly the memory tool's input and hands it to the handler untouched:
the handler, not the schema, judges it, so a mistyped field gets the contract's message
rather than a schema error the model was never trained on. Every function here is
blocking and runs on the calling client's worker thread (:mod:`memfs.mcp.workers`).
The descriptions are written for a model reading them cold.
"""

from __future__ import annotations

import time
from typing import Any

import mcp_types as types

from memfs.errors import MemfsError, NotFound
from memfs.handler import Result, strings
from memfs.handler.search import format_hits, search_directory
from memfs.history.restore import restore_file
from memfs.mcp.tree import MemoryTree
from memfs.paths import ROOT, parse
from memfs.secrets import Finding, redact, scan
from memfs.store.base import Act, SearchHit
from memfs.store.matching import DEFAULT_LIMIT, decode_text

MEMORY = "memory"
SEARCH = "memory_search"
HISTORY = "memory_history"
SEARCH_MAX_LIMIT = 50  # as the agent's memory_search

_STR = {"type": "string"}

MEMORY_DESCRIPTION = """\
Your persistent memory: a tree of files under /memories that outlives this conversation \
and is shared, live, with the people and other agents using the same memory. Check it \
before you start a task (view /memories) and keep what you learn in it as you go: \
progress, decisions, facts about the user or the project. Assume anything not in memory \
is forgotten next time, and that someone else may have edited a file since you last read it.

Commands (every path starts with /memories):
- view: a directory lists files and directories two levels deep with sizes; a file shows \
its lines numbered. view_range [start, end] shows lines start..end (end -1: to the end).
- create: write a new file with file_text (parents are created). An existing file is \
not replaced.
- str_replace: replace old_str, which must occur exactly once in the file, with new_str \
(omit new_str to delete old_str).
- insert: insert insert_text after line insert_line (0: at the top).
- delete: remove a file or a directory with everything in it.
- rename: move old_path to new_path (never over an existing entry).

Errors come back as text starting with "Error:" that says what to change."""

SEARCH_DESCRIPTION = """\
Full-text search of the memory files under /memories, ranked best first. Use it to find \
where something was written down before reading whole files with the memory tool's view.

query: words that must all appear in a file (case-insensitive, inside longer words too); \
"a quoted phrase" is one term. With regex true, query is one regular expression matched \
line by line (case-sensitive). path narrows the search to a directory or a file \
(default /memories). Each result names the file and its matching lines with their line \
numbers, ready for view with a view_range. Without a memfs store behind the memory \
the files are read one by one, which is slower on a large tree."""

HISTORY_DESCRIPTION = """\
The revisions of one memory file, newest first: revision number, time (UTC), author \
(a person's editor such as "vim (pid 812)", an agent such as "mcp:claude-code (pid 90)") \
and size. Give rev to read the file as it was at that revision, for instance to see what \
someone changed or to recover text that was overwritten or deleted. With rev and \
restore true, that revision becomes the file's newest one again (a deleted file comes \
back); nothing in the history is lost. A deleted file's last revision stays readable \
for a while."""

TOOLS = [
    types.Tool(
        name=MEMORY,
        title="Memory",
        description=MEMORY_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
                    "description": "The operation to perform.",
                },
                "path": {
                    "type": "string",
                    "description": "The file or directory, starting with /memories "
                    "(all commands but rename).",
                },
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "view of a file: [start_line, end_line], 1-based; "
                    "end_line -1 reads to the end.",
                },
                "file_text": {**_STR, "description": "create: the whole content."},
                "old_str": {**_STR, "description": "str_replace: the exact text to replace."},
                "new_str": {**_STR, "description": "str_replace: the replacement text."},
                "insert_line": {
                    "type": "integer",
                    "description": "insert: the line after which to insert (0: the top).",
                },
                "insert_text": {**_STR, "description": "insert: the text to insert."},
                "old_path": {**_STR, "description": "rename: the current path."},
                "new_path": {**_STR, "description": "rename: the new path."},
            },
            "required": ["command"],
        },
        annotations=types.ToolAnnotations(
            title="Memory", read_only_hint=False, destructive_hint=True, open_world_hint=False
        ),
    ),
    types.Tool(
        name=SEARCH,
        title="Search memory",
        description=SEARCH_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "query": {**_STR, "description": "Words (or a regular expression) to find."},
                "path": {
                    **_STR,
                    "description": "Where to search (default /memories).",
                },
                "regex": {"type": "boolean", "description": "query is a regular expression."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SEARCH_MAX_LIMIT,
                    "description": "Most files to return (default 20).",
                },
            },
            "required": ["query"],
        },
        annotations=types.ToolAnnotations(
            title="Search memory", read_only_hint=True, open_world_hint=False
        ),
    ),
    types.Tool(
        name=HISTORY,
        title="Memory file history",
        description=HISTORY_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "path": {**_STR, "description": "The file, starting with /memories."},
                "rev": {
                    "type": "integer",
                    "description": "A revision number from the list: read that revision.",
                },
                "restore": {
                    "type": "boolean",
                    "description": "With rev: make that revision the file's content again.",
                },
            },
            "required": ["path"],
        },
        annotations=types.ToolAnnotations(
            title="Memory file history", read_only_hint=False, open_world_hint=False
        ),
    ),
]


class ToolRefused(Exception):
    """A tool call the model can correct; the message says how."""


def _text(message: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=is_error)


def from_result(result: Result) -> types.CallToolResult:
    """The handler's result as MCP content: text, or the image blocks of a ``view``."""
    if isinstance(result.content, str):
        return _text(result.content, result.is_error)
    blocks: list[types.ContentBlock] = []
    for block in result.content:
        source = block["source"]
        blocks.append(types.ImageContent(data=source["data"], mime_type=source["media_type"]))
    return types.CallToolResult(content=blocks, is_error=result.is_error)


def _string(args: dict[str, Any], name: str, default: str | None = None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str):
        raise ToolRefused(f"Error: {name} must be a string.")
    return value


def search(tree: MemoryTree, args: dict[str, Any]) -> types.CallToolResult:
    query = _string(args, "query")
    where = parse(_string(args, "path", ROOT))
    regex = args.get("regex", False)
    limit = args.get("limit", DEFAULT_LIMIT)
    if not isinstance(regex, bool):
        raise ToolRefused("Error: regex must be true or false.")
    if type(limit) is not int or not 1 <= limit <= SEARCH_MAX_LIMIT:
        raise ToolRefused(f"Error: limit must be an integer from 1 to {SEARCH_MAX_LIMIT}.")
    try:
        if tree.store is None:
            hits = search_directory(tree.root, query, where.rel, regex=regex, limit=limit)
        else:
            found = tree.store.search(query, tree.store_path(where), regex=regex, limit=limit)
            hits = []
            for hit in found:
                model = tree.model_path(hit.path)
                if model is not None:
                    hits.append(SearchHit(model.rel, hit.score, hit.lines))
    except NotFound:
        raise ToolRefused(f"Error: The path {where.model} does not exist.") from None
    return _text(format_hits(hits, query, where.model))


def _when(time_ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(time_ns / 1e9))


def history(tree: MemoryTree, args: dict[str, Any], author: str) -> types.CallToolResult:
    path = parse(_string(args, "path"))
    rev = args.get("rev")
    restore = args.get("restore", False)
    if rev is not None and type(rev) is not int:
        raise ToolRefused("Error: rev must be an integer revision number from the history.")
    if not isinstance(restore, bool) or (restore and rev is None):
        raise ToolRefused("Error: restore must be true or false, and true needs a rev.")
    if tree.store is None:
        raise ToolRefused(
            f"Error: No history here: {tree.root} is a plain directory, not a memfs store; "
            "only a memfs mount or store keeps revisions."
        )
    revisions = tree.store.history(tree.store_path(path))
    if not revisions:
        raise ToolRefused(f"Error: {path.model} has no revisions (it never was a file).")
    if rev is None:
        rows = [f"rev {r.rev}  {_when(r.time_ns)}  {r.author}  {r.size} bytes" for r in revisions]
        return _text(f"Revisions of {path.model}, newest first:\n" + "\n".join(rows))
    match = next((r for r in revisions if r.rev == rev), None)
    if match is None:
        known = ", ".join(str(r.rev) for r in revisions[:10])
        raise ToolRefused(f"Error: {path.model} has no revision {rev}; its revisions: {known}.")
    data = tree.store.read_revision(tree.store_path(path), rev)
    policy = tree.options.secrets
    text = decode_text(data)
    findings: list[Finding] = [] if text is None or policy == "allow" else scan(text)
    found = [(f.line, f.kind, f.why) for f in findings]
    if restore:
        # A restore is a write of the model's: the same screen as create's file_text.
        if findings and policy == "refuse":
            raise ToolRefused(strings.secrets_refused(path.model, f"revision {rev}", found))
        clean = None if text is None or not findings else redact(text, findings).encode()
        with tree.store.acting(Act(author, detail="memory_history restore")):
            entry = restore_file(tree.store, tree.store_path(path), rev, author=author, data=clean)
        done = f"Restored {path.model} to revision {rev}; the file is now revision {entry.rev}."
        return _text(done + (strings.secrets_redacted(f"revision {rev}", found) if found else ""))
    if text is None:
        raise ToolRefused(f"Error: Revision {rev} of {path.model} is not UTF-8 text.")
    header = f"{path.model} at revision {rev} ({_when(match.time_ns)}, by {match.author}):"
    if not findings:
        return _text(f"{header}\n{text}")
    masked = ", ".join(f"{kind} on line {line}" for line, kind, _why in found)
    note = (
        f"(memfs shows {len(found)} likely credential{'s' if len(found) != 1 else ''} of this"
        f" revision as [REDACTED:kind]: {masked})"
    )
    return _text(f"{header}\n{redact(text, findings)}\n{note}")


def call(tree: MemoryTree, name: str, args: dict[str, Any], actor: str) -> types.CallToolResult:
    """Run one tool; every failure the model can act on is an ``isError`` result.
    ``actor`` names the client (``mcp:NAME``): every change it makes carries it."""
    if name == MEMORY:
        return from_result(tree.handler_for(actor).execute(args))
    try:
        if name == SEARCH:
            return search(tree, args)
        if name == HISTORY:
            return history(tree, args, actor)
    except ToolRefused as exc:
        return _text(str(exc), True)
    except NotFound:
        return _text(f"Error: Nothing is recorded at {args.get('path')!r}.", True)
    except MemfsError as exc:  # the gate's messages, a query error, a store that failed
        message = str(exc)
        return _text(message if message.startswith("Error:") else f"Error: {message}", True)
    known = ", ".join(tool.name for tool in TOOLS)
    return _text(f"Error: There is no tool {name!r}; the tools are {known}.", True)
