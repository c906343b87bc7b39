"""The WebDAV door as one ASGI app: the guard, then WsgiDAV over the store.

Order of a request: :class:`memfs.httpguard.Guard` (Host, Origin, the token as the Basic
password off loopback), then a2wsgi's bridge into WSGI, then :class:`Door` (who acts,
bounded bodies, one operation per request), then WsgiDAV with :class:`StoreProvider`
and the store-kept lock and property managers (:mod:`memfs.webdav.shared`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from a2wsgi import WSGIMiddleware
from wsgidav import util as wsgidav_util
from wsgidav.dav_error import DAVError
from wsgidav.error_printer import ErrorPrinter
from wsgidav.request_resolver import RequestResolver
from wsgidav.wsgidav_app import WsgiDAVApp

from memfs.actors import clean_actor
from memfs.httpguard import Address, ASGIApp, Guard, Receive, Scope, Send
from memfs.store.base import Act, Store
from memfs.webdav.provider import ACTOR_KEY, StoreProvider
from memfs.webdav.shared import StoreLocks, StoreProps

# XML bodies (PROPFIND, PROPPATCH, LOCK) are a few hundred bytes from any real client.
MAX_XML_BODY = 1 << 20
# Methods that change nothing: served streaming, outside any operation.
READING = frozenset({"GET", "HEAD", "OPTIONS", "PROPFIND"})

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_FINITE_DEPTH = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>\n'
)


def basic_user(environ: dict[str, Any]) -> str | None:
    """The user name of a Basic ``Authorization`` header, if there is one."""
    header = str(environ.get("HTTP_AUTHORIZATION", ""))
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user = text.partition(":")[0].strip()
    return user or None


def _refuse(
    start_response: Callable[..., Any], status: str, body: bytes, kind: str = "text/plain"
) -> list[bytes]:
    start_response(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
    return [body]


class Door:
    """WSGI middleware: names the actor (``webdav:USER``), bounds what a request may
    send, and makes each changing request one operation of the store's log."""

    def __init__(self, app: WSGIApp, store: Store, user: str) -> None:
        self.app = app
        self.store = store
        self.user = user

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        method = str(environ.get("REQUEST_METHOD", ""))
        who = basic_user(environ) or self.user
        actor = clean_actor(who, "anonymous", prefix="webdav:")
        environ[ACTOR_KEY] = actor
        environ["wsgidav.auth.user_name"] = who
        environ["wsgidav.auth.realm"] = "memfs"
        length_text = str(environ.get("CONTENT_LENGTH") or "")
        length = int(length_text) if length_text.isdigit() else None
        chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
        if method != "PUT":
            if (length is not None and length > MAX_XML_BODY) or (length is None and chunked):
                return _refuse(
                    start_response, "413 Request Entity Too Large", b"request body too large\n"
                )
        elif (
            length is not None
            and self.store.max_file_bytes is not None
            and length > self.store.max_file_bytes
        ):
            return _refuse(
                start_response,
                "413 Request Entity Too Large",
                f"files are capped at {self.store.max_file_bytes} bytes\n".encode(),
            )
        try:
            wsgidav_util.normalize_path(wsgidav_util.re_encode_wsgi(str(environ["PATH_INFO"])))
        except DAVError:
            # A path that climbs above the root ("/../x"): WsgiDAV refuses it too, but
            # from inside a generator that loses the answer's body.
            return _refuse(start_response, "400 Bad Request", b"the path leaves the root\n")
        if method == "PROPFIND" and str(environ.get("HTTP_DEPTH", "infinity")).lower() not in (
            "0",
            "1",
        ):
            # RFC 4918 9.1: a server may refuse an infinite PROPFIND; a whole tree in one
            # answer is what a hostile client asks for.
            return _refuse(
                start_response, "403 Forbidden", _FINITE_DEPTH, 'application/xml; charset="utf-8"'
            )
        if method in READING:
            return self.app(environ, start_response)
        return self._acting(environ, start_response, method, actor)

    def _acting(
        self,
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        method: str,
        actor: str,
    ) -> Iterator[bytes]:
        # Every mutation of the request in one operation: the whole answer is made on
        # this thread inside acting() (a changing method's answer is small).
        path = str(environ.get("PATH_INFO", ""))
        with self.store.acting(Act(actor, detail=f"{method} {path}", label="webdav")):
            answer = list(self.app(environ, start_response))
        yield from answer


class _Lifespan:
    """uvicorn's lifespan events answered here (WSGI has none)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await self.app(scope, receive, send)


def dav_app(store: Store, prefix: str, user: str) -> WSGIApp:
    """WsgiDAV over ``store`` (below ``prefix``), wrapped in :class:`Door`."""
    provider = StoreProvider(store, prefix)
    config: dict[str, Any] = {
        "provider_mapping": {"/": provider},
        "middleware_stack": [ErrorPrinter, RequestResolver],
        # Locks and dead properties in the store: every server of it sees them.
        "lock_storage": StoreLocks(store, prefix),
        "property_manager": StoreProps(store, prefix),
        "http_authenticator": {"domain_controller": None},
        "simple_dc": {"user_mapping": {"*": True}},
        "verbose": 1,
        "logging": {"enable": False},
        "suppress_version_info": True,
        "add_header_MS_Author_Via": True,
        "dir_browser": {"enable": False},
    }
    return Door(WsgiDAVApp(config), store, user)


def build(
    store: Store, *, address: Address, token: str | None, user: str, prefix: str = ""
) -> ASGIApp:
    """The door's ASGI app: guard, bridge, door, WsgiDAV."""
    bridge: ASGIApp = WSGIMiddleware(dav_app(store, prefix, user), workers=8)  # type: ignore[arg-type,assignment]
    return _Lifespan(Guard(bridge, address, token, basic=True))
