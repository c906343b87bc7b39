"""``memory_search``: the agent's optional second tool, full-text search over the memory.

On a memfs mount (or with a store URL) it asks the store, which answers from its index;
on a plain directory it reads the files (:func:`memfs.handler.search.search_directory`).
Either way the query means what :mod:`memfs.store.matching` says and paths are model
paths, checked by the same gate as the memory tool's. A bad query or path comes back
as an error result the model can act on (the SDK's ``ToolError``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from anthropic.lib.tools import BetaFunctionToolResultType, ToolError
from anthropic.lib.tools._beta_functions import BetaBuiltinFunctionTool
from anthropic.types.beta import BetaToolParam

from memfs.errors import MemfsError, NotFound
from memfs.handler.search import format_hits, search_directory
from memfs.paths import ROOT, parse
from memfs.store.base import SearchHit
from memfs.store.matching import DEFAULT_LIMIT

NAME = "memory_search"
MAX_LIMIT = 50
DESCRIPTION = (
    "Search the text of every file in your memory directory (/memories) and get the"
    " matching files, best match first, with their matching lines and line numbers."
    " Use it before viewing files one by one when the memory is large or you do not know"
    " where something was written. `query`: words that must all appear in a file, ignoring"
    ' case, also inside longer words ("parse_rel", "todo"); put a phrase in double quotes.'
    " Set `regex` to true to give one regular expression (Python syntax without back"
    " references or look-around, case-sensitive) matched line by line instead. `path`: a"
    " directory or file under /memories to search (default /memories). `limit`: at most"
    " this many files (default 20)."
)
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to find, or a regex with regex=true."},
        "path": {"type": "string", "description": "Where to search; default /memories."},
        "regex": {"type": "boolean", "description": "query is a regular expression."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    },
    "required": ["query"],
}

Searcher = Callable[[str, str, bool, int], list[SearchHit]]


def searcher_for(root: Path, store_url: str | None = None) -> tuple[Searcher, Callable[[], None]]:
    """A search over the tree at ``root`` and a function that releases it: the store
    behind a mount (or ``store_url``), below the mount's subdirectory ``root`` names;
    else the plain directory."""
    from memfs.mount import state
    from memfs.store import open_store

    subdir = ""
    if store_url is None:
        record = state.lookup(root)
        if record is None:
            return (lambda q, p, r, n: search_directory(root, q, p, regex=r, limit=n)), _nothing
        store_url = record.store_url
        rel = os.path.relpath(state.normalize(root), record.mountpoint)
        subdir = "" if rel == "." else rel
    store = open_store(store_url)

    def search(query: str, path: str, regex: bool, limit: int) -> list[SearchHit]:
        inside = f"{subdir}/{path}".strip("/") if subdir else path
        hits = store.search(query, inside, regex=regex, limit=limit)
        if not subdir:
            return hits
        cut = len(subdir) + 1
        return [SearchHit(h.path[cut:], h.score, h.lines) for h in hits]

    return search, store.close


def _nothing() -> None:
    return None


class SearchTool(BetaBuiltinFunctionTool):
    """The ``memory_search`` tool for the SDK's tool runner."""

    def __init__(self, search: Searcher) -> None:
        self._search = search

    def to_dict(self) -> BetaToolParam:
        return {"name": NAME, "description": DESCRIPTION, "input_schema": INPUT_SCHEMA}

    def call(self, input: object) -> BetaFunctionToolResultType:
        if not isinstance(input, Mapping):
            raise ToolError("Error: the memory_search input must be an object with a query.")
        query = input.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("Error: memory_search needs a non-empty string `query`.")
        regex = input.get("regex", False)
        limit = input.get("limit", DEFAULT_LIMIT)
        where = input.get("path", ROOT)
        if not isinstance(regex, bool):
            raise ToolError("Error: `regex` must be true or false.")
        if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"Error: `limit` must be an integer from 1 to {MAX_LIMIT}.")
        if not isinstance(where, str):
            raise ToolError("Error: `path` must be a string such as /memories/notes.")
        try:
            path = parse(where)
            hits = self._search(query, path.rel, regex, limit)
        except NotFound:
            raise ToolError(f"The path {where} does not exist.") from None
        except MemfsError as exc:  # a path the gate refuses, a bad regex, a store failure
            raise ToolError(f"Error: {exc}") from None
        return format_hits(hits, query, path.model)
