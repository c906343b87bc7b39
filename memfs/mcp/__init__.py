"""``memfs mcp``: the memory tree as a Model Context Protocol server.

Every MCP host (Claude Desktop, Claude Code, IDE assistants, other vendors' agents) can
use the same memory as people and ``memfs agent``. Nothing here executes a command
itself: the ``memory`` tool goes to :class:`memfs.handler.MemoryHandler` behind the path
gate, so the model sees the memory tool's contract strings exactly.

- :mod:`memfs.mcp.tree` decides which directory the handler works on and which store
  (if any) stands behind it, and maps ``memory:///memories/...`` resources to files;
- :mod:`memfs.mcp.workers` runs each client's commands on a thread named after it, which
  is how a memfs mount attributes the edits (``mcp:CLIENT (pid N)``);
- :mod:`memfs.mcp.tools` holds the tools (``memory``, ``memory_search``,
  ``memory_history``), their schemas and descriptions for a model;
- :mod:`memfs.mcp.watch` follows the store's change feed, or a plain directory through
  watchdog, to tell subscribed clients that a file changed;
- :mod:`memfs.mcp.server` assembles the SDK's low-level server and runs it over stdio;
  :mod:`memfs.mcp.http` serves it over streamable HTTP, with a bearer token.
"""

from __future__ import annotations

__all__ = ["MEMORY_URI_PREFIX"]

MEMORY_URI_PREFIX = "memory://"
