"""Streamable HTTP for the MCP server: the address, the bearer token, the listening socket.

Loopback is the default and needs no token (the SDK's DNS-rebinding protection keeps
web pages from reaching it). Any other address requires a token, and then every request
without ``Authorization: Bearer TOKEN`` is answered 401 before it reaches the server;
a token given on loopback is enforced too. The socket is bound here, before anything
is served, so a port in use or an address this machine does not have is one line for a
person, not a traceback from the web server.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from memfs.errors import McpError

DEFAULT_HOST = "127.0.0.1"
PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_address(text: str) -> Address:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` or ``PORT`` (the last two on loopback)."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise McpError(f"--http {text}: write an IPv6 address in brackets, as [{host}]:{port_text}")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise McpError(f"--http {text}: the port must be a number from 0 to 65535")
    return Address(host or DEFAULT_HOST, port)


def _addresses(address: Address) -> list[tuple[Any, ...]]:
    try:
        return socket.getaddrinfo(
            address.host, address.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise McpError(f"--http: cannot resolve {address.host!r}: {exc.strerror}") from None


def is_loopback(address: Address) -> bool:
    found = _addresses(address)
    return bool(found) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in found)


def bind(address: Address) -> socket.socket:
    """A listening socket on ``address``; McpError says in one line why there is none."""
    family, kind, proto, _, sockaddr = _addresses(address)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        where = f"{address.url_host}:{address.port}"
        if exc.errno == errno.EADDRINUSE:
            raise McpError(
                f"cannot listen on {where}: the port is in use; "
                "stop what uses it or choose another with --http HOST:PORT"
            ) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise McpError(f"cannot listen on {where}: this machine has no such address") from None
        if exc.errno == errno.EACCES:
            raise McpError(
                f"cannot listen on {where}: permission denied (ports below 1024 need root)"
            ) from None
        raise McpError(f"cannot listen on {where}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


class BearerToken:
    """ASGI middleware: 401 for any HTTP request without the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = b""
            for name, value in scope.get("headers", ()):
                if name.lower() == b"authorization":
                    given = value
                    break
            if not hmac.compare_digest(given, self.expected):
                await _refuse(send)
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send) -> None:
    body = json.dumps(
        {"error": "unauthorized", "error_description": "send Authorization: Bearer TOKEN"}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="memfs"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
