"""The guard in front of memfs's HTTP doors (``memfs mcp --http``, ``memfs web``): the
address to listen on, the listening socket, and who may talk to it.

Both doors listen on loopback unless told otherwise; any other address needs a token
(the commands refuse to start without one). :class:`Guard`, an ASGI middleware, then
checks every request before the app sees it:

- **Host** must name the address actually served, with its port: the host given to
  ``--http`` (a name or an address; for a wildcard such as ``0.0.0.0`` the address the
  request came in on), plus ``localhost`` on loopback. A DNS-rebinding page
  (``Host: evil.com``), a smuggled name (``Host: 127.0.0.1:PORT@evil``) or a wrong port
  is answered 421 before anything else happens.
- **Origin**, when a browser sends one, must be that same served origin
  (``http://HOST:PORT``); any other, ``null`` included, is answered 403. Pages on other
  ports of the same machine are other origins too.
- **The token**, when there is one, must come as ``Authorization: Bearer TOKEN`` (or,
  for a door that names a cookie, a session cookie, which a ``GET ...?token=TOKEN``
  sets; for a door that takes Basic, ``memfs webdav``, as the Basic password, since
  DAV clients send nothing else reliably); otherwise 401. Comparisons take constant
  time. The cookie never holds the token: it holds a random session this server
  minted at that login and keeps only while it runs, under a name that includes the
  port (a browser sends a host's cookies to every port of it, so what another port
  sees is no key to anything else). The login sends the browser on to a path of this
  server only, never to ``//elsewhere``.

Every response, refusals included, says it may not be framed (``X-Frame-Options:
DENY`` and ``frame-ancestors 'none'``: no page elsewhere can trick a click on a button),
that its types are as given, that it sends no referrer elsewhere, and a
Content-Security-Policy that loads scripts, styles and images from this server only
(images also ``data:``), so a memory's Markdown cannot make the browser fetch anything
from elsewhere.

The socket is bound here, before anything is served, so a port in use or an address
this machine does not have is one line for a person, not a traceback from the server.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hmac
import html
import ipaddress
import json
import re
import secrets
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from memfs.errors import HttpError

DEFAULT_HOST = "127.0.0.1"
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
# host[:port] as RFC 9110 allows it in Host: a bracketed IPv6 literal or a plain name
# or IPv4 address. Nothing else (userinfo, paths, spaces) is a host.
_HOST = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9.-]+))(?::(?P<port>\d{1,5}))?$"
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
# Browser sessions one server keeps (each a login with the token); the oldest goes first.
MAX_SESSIONS = 1000


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    def url(self, port: int | None = None) -> str:
        return f"http://{self.url_host}:{self.port if port is None else port}"


def parse_address(text: str, option: str = "--http") -> Address:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` or ``PORT`` (the last two on loopback)."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise HttpError(
            f"{option} {text}: write an IPv6 address in brackets, as [{host}]:{port_text}"
        )
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise HttpError(f"{option} {text}: the port must be a number from 0 to 65535")
    return Address(host or DEFAULT_HOST, port)


def _addresses(address: Address, option: str = "--http") -> list[tuple[Any, ...]]:
    try:
        return socket.getaddrinfo(
            address.host, address.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise HttpError(f"{option}: cannot resolve {address.host!r}: {exc.strerror}") from None


def is_loopback(address: Address) -> bool:
    found = _addresses(address)
    return bool(found) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in found)


def bind(address: Address, option: str = "--http") -> socket.socket:
    """A listening socket on ``address``; HttpError says in one line why there is none."""
    family, kind, proto, _, sockaddr = _addresses(address, option)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        where = f"{address.url_host}:{address.port}"
        if exc.errno == errno.EADDRINUSE:
            raise HttpError(
                f"cannot listen on {where}: the port is in use; "
                f"stop what uses it or choose another with {option} HOST:PORT"
            ) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise HttpError(f"cannot listen on {where}: this machine has no such address") from None
        if exc.errno == errno.EACCES:
            raise HttpError(
                f"cannot listen on {where}: permission denied (ports below 1024 need root)"
            ) from None
        raise HttpError(f"cannot listen on {where}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def _canonical(host: str) -> str:
    """One spelling per host: IP literals normalised, names lower-cased."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower()


def _split_host(text: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Host header value (port 80 when none is given), or None
    when it is not a plain host[:port]."""
    found = _HOST.match(text)
    if found is None:
        return None
    host = found.group("v6") or found.group("name")
    port = int(found.group("port") or 80)
    if found.group("v6") is not None:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    return _canonical(host), port


class Guard:
    """ASGI middleware: Host, Origin and token checks for every HTTP request (see the
    module docstring). ``address`` is what the door was asked to listen on; the port
    and, for a wildcard, the address come from each connection itself (``port 0``
    binds whatever port is free)."""

    def __init__(
        self,
        app: ASGIApp,
        address: Address,
        token: str | None,
        *,
        cookie: str | None = None,
        basic: bool = False,
    ) -> None:
        self.app = app
        self.address = address
        self.token = token
        self.expected = f"Bearer {token}".encode() if token else b""
        self.cookie = cookie
        self.basic = basic
        self.sessions: OrderedDict[str, None] = OrderedDict()

    def cookie_name(self, port: int) -> str:
        return f"{self.cookie}_{port}"

    def served_hosts(self, scope: Scope) -> tuple[set[str], int]:
        """The host names this connection may be addressed by, and its port."""
        local = scope.get("server") or (self.address.host, self.address.port)
        local_host, port = str(local[0]), int(local[1])
        bound = self.address.host
        hosts = {_canonical(local_host if bound in _WILDCARDS else bound)}
        try:
            if ipaddress.ip_address(local_host).is_loopback:
                hosts.add("localhost")
        except ValueError:
            pass
        return hosts, port

    def _origin_ok(self, origin: str, hosts: set[str], port: int) -> bool:
        try:
            parts = urlsplit(origin)
            given_port = parts.port or 80
        except ValueError:
            return False
        if parts.scheme != "http" or parts.username is not None or parts.path not in ("", "/"):
            return False
        if parts.query or parts.fragment or parts.hostname is None:
            return False
        return _canonical(parts.hostname) in hosts and given_port == port

    def _token_ok(self, headers: dict[bytes, bytes], port: int) -> bool:
        given = headers.get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            return True
        if self.basic and self.token is not None and given[:6].lower() == b"basic ":
            return hmac.compare_digest(_basic_password(given[6:]), self.token.encode())
        if self.cookie is not None and self.token is not None:
            value = _cookie(headers.get(b"cookie", b""), self.cookie_name(port))
            # A set lookup of a 32-byte random value: its timing tells nothing useful.
            return bool(value) and value in self.sessions
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self._guard(scope, receive, send_guarded)

    async def _guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # neither door has one
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(name.lower(), value)
        hosts, port = self.served_hosts(scope)
        host = _split_host(headers.get(b"host", b"").decode("latin-1"))
        if host is None or host[0] not in hosts or host[1] != port:
            served = f"{sorted(hosts)[0]}:{port}"
            await _refuse(send, headers, 421, "misdirected", f"this server answers to {served}")
            return
        origin = headers.get(b"origin")
        if origin is not None and not self._origin_ok(origin.decode("latin-1"), hosts, port):
            await _refuse(
                send, headers, 403, "forbidden", "requests from other origins are refused"
            )
            return
        if self.token is not None and not self._token_ok(headers, port):
            if await self._login(scope, send, port):
                return
            challenge = b'Basic realm="memfs"' if self.basic else b'Bearer realm="memfs"'
            await _refuse(
                send,
                headers,
                401,
                "unauthorized",
                (
                    "give the token as the password"
                    if self.basic
                    else "send Authorization: Bearer TOKEN"
                )
                + (", or open the address with ?token=TOKEN" if self.cookie else ""),
                extra=[(b"www-authenticate", challenge)],
            )
            return
        await self.app(scope, receive, send)

    async def _login(self, scope: Scope, send: Send, port: int) -> bool:
        """A GET carrying the right ``?token=`` sets a session cookie and sends the
        browser to the same path of this server without it (so the token leaves the
        address bar)."""
        if self.cookie is None or self.token is None or scope.get("method") != "GET":
            return False
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in query if k == "token"), None)
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            return False
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        location = local_path(scope["path"]) + (f"?{rest}" if rest else "")
        session = secrets.token_urlsafe(32)
        self.sessions[session] = None
        while len(self.sessions) > MAX_SESSIONS:
            self.sessions.popitem(last=False)
        cookie = f"{self.cookie_name(port)}={session}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1", "replace")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})
        return True


def local_path(path: str) -> str:
    """``path`` as a redirect that stays on this server: ``//host/x`` and ``/\\host/x``
    are addresses elsewhere to a browser, so leading slashes collapse to one."""
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")


def _basic_password(value: bytes) -> bytes:
    """The password of a Basic credential (``base64(user:password)``); b"" if malformed."""
    try:
        decoded = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return b""
    _, sep, password = decoded.partition(b":")
    return password if sep else b""


def _cookie(header: bytes, name: str) -> str:
    for part in header.decode("latin-1").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value
    return ""


async def _refuse(
    send: Send,
    headers: dict[bytes, bytes],
    status: int,
    error: str,
    description: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    if b"text/html" in headers.get(b"accept", b""):
        text = html.escape(description)
        body = f"<!doctype html><title>memfs: {error}</title><p>memfs: {text}.</p>\n"
        content_type = b"text/html; charset=utf-8"
        data = body.encode()
    else:
        data = json.dumps({"error": error, "error_description": description}).encode()
        content_type = b"application/json"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(data)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
