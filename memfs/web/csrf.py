"""Forms carry a token only this server and this browser can make.

Each browser gets a random session cookie (HttpOnly, SameSite=Strict) on its first
page; a form's token is an HMAC of that session under a key made when the server
started, so a page elsewhere can neither read nor forge it. A POST whose ``csrf``
field does not match is refused with 403 before anything is read or changed. The Host
and Origin checks of :mod:`memfs.httpguard` stand in front of this.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request

from memfs.httpguard import ASGIApp, Receive, Scope, Send

COOKIE = "memfs_session"
FIELD = "csrf"


def _cookie(scope: Scope) -> str:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())  # ASGI's, raw
    for name, value in headers:
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, sep, found = part.strip().partition("=")
                if sep and key == COOKIE and found:
                    return found
    return ""


class Sessions:
    """ASGI middleware: ``scope["state"]["session"]`` is the browser's session id, made
    (and set as a cookie on the response) when the request has none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = _cookie(scope)
        fresh = not session
        if fresh:
            session = secrets.token_urlsafe(24)
        scope.setdefault("state", {})["session"] = session

        async def send_with_cookie(message: Any) -> None:
            if fresh and message["type"] == "http.response.start":
                cookie = f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


class Tokens:
    """Makes and checks form tokens under one key (one per server run)."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key or secrets.token_bytes(32)

    def token(self, request: Request) -> str:
        session = str(request.scope.get("state", {}).get("session", ""))
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()

    def valid(self, request: Request, given: object) -> bool:
        if not isinstance(given, str) or not given:
            return False
        return hmac.compare_digest(given.encode(), self.token(request).encode())
