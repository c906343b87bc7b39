"""Streamable HTTP for the MCP server: its path, behind the shared guard.

Addresses, the listening socket and the Host, Origin and token checks are
:mod:`memfs.httpguard`'s, the same for ``memfs web``: loopback by default, a token
required on any other address, and a request that names another host or comes from
another origin refused (DNS rebinding) before it reaches the SDK.
"""

from __future__ import annotations

from memfs.httpguard import DEFAULT_HOST, Address, Guard, bind, is_loopback, parse_address

PATH = "/mcp"

__all__ = ["DEFAULT_HOST", "PATH", "Address", "Guard", "bind", "is_loopback", "parse_address"]
