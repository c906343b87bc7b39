"""The MCP server: the SDK's low-level ``Server`` over one :class:`MemoryTree`.

Both eras of the protocol are served, as the SDK does: a handshake-era client
(``initialize``; Claude Desktop, Claude Code) subscribes with ``resources/subscribe``
and gets ``notifications/resources/updated`` on its session; a 2026-07-28 client opens
``subscriptions/listen`` and gets the same events on that stream. A subscription to a
directory's URI fires for any file below it.

Each request names its client (``clientInfo.name``, from ``initialize`` or the request's
envelope); its tool calls run on that client's thread, which is what attributes its edits
(:mod:`memfs.mcp.workers`). Changes reach subscribers from the watcher's thread through
:meth:`MemoryServer.changed`, one :class:`~memfs.mcp.watch.Update` per operation,
coalesced per turn of the event loop: each subscribed URI the operation concerns (a
file it touched, or a directory above one) gets one ``notifications/resources/updated``,
carrying the operation's summary as ``_meta["memfs/summary"]`` ("root (rm) deleted
5,000 files, removed 1 directory in /memories/many/"), so an ``rm -rf`` of 5,000 files
is one notification to a client subscribed to the directory, not one per file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from memfs import __version__
from memfs.actors import clean_actor
from memfs.errors import MemfsError
from memfs.handler.tree import DirTree
from memfs.mcp import resources, tools
from memfs.mcp.tree import MemoryTree
from memfs.mcp.watch import Update, Watch, watch_for
from memfs.mcp.workers import STOP_GRACE, Workers, author_name
from memfs.paths import MemPath

log = logging.getLogger(__name__)

PAGE = 500  # resources per resources/list page
SUMMARY_META = "memfs/summary"  # the _meta key of an update's summary
SUMMARIES_SHOWN = 3  # operations named in one coalesced notification's summary

INSTRUCTIONS = (
    "memfs serves a shared memory: files under /memories that people and other agents "
    "read and edit too. Use the memory tool to view and change them, memory_search to find "
    "text in them and memory_history to see who changed a file and what it held before. "
    "Every file is also a resource (memory:///memories/...) you can subscribe to."
)


def client_name(ctx: ServerRequestContext[Any]) -> str | None:
    params = ctx.session.client_params
    if params is None or params.client_info is None:
        return None
    return params.client_info.name


def connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    """The client's connection: the SDK makes a ServerSession per request, the
    Connection lives as long as the client (its notifications go out through it)."""
    return ctx.session._connection  # the SDK (pinned <3) keeps it only there


def _meta(summaries: list[str]) -> dict[str, Any] | None:
    """The notification's ``_meta``: what the operations behind it did."""
    if not summaries:
        return None
    text = "; ".join(summaries[:SUMMARIES_SHOWN])
    if len(summaries) > SUMMARIES_SHOWN:
        text += f"; and {len(summaries) - SUMMARIES_SHOWN} more"
    return {SUMMARY_META: text}


def _affected(path: MemPath) -> list[str]:
    """The URIs a change of ``path`` concerns: its own and each enclosing directory's."""
    parts = path.parts
    return [resources.uri_of(MemPath(parts[:i])) for i in range(len(parts), -1, -1)]


class MemoryServer:
    """The tools and resources of one tree, for any number of clients at once."""

    def __init__(self, tree: MemoryTree) -> None:
        self.tree = tree
        self.files = DirTree(tree.root)  # the handler's symlink-proof reads, for resources
        self.workers = Workers()
        # Authors whose commands still ran when serving stopped (on daemon threads).
        self.stranded: list[str] = []
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        # Handshake-era connections: their subscribed URIs; every one seen, for
        # list_changed. Weak: a client that went away holds nothing here.
        self.subscriptions: weakref.WeakKeyDictionary[Connection, set[str]] = (
            weakref.WeakKeyDictionary()
        )
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, list[str]] = {}  # uri -> summaries of its operations
        self._listing_changed = False
        self._wake: asyncio.Event | None = None
        self.server: Server[Any] = Server(
            "memfs",
            version=__version__,
            title="memfs shared memory",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=self.listen,
        )

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(
            NotificationOptions(resources_changed=True)
        )

    # --- requests -------------------------------------------------------------------

    def _author(self, ctx: ServerRequestContext[Any]) -> str:
        """The client's worker thread (its name cut to what the kernel keeps)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.connections.add(connection_of(ctx))
        return author_name(client_name(ctx))

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.TOOLS)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = dict(params.arguments or {})
        author = self._author(ctx)
        # The whole client name travels with the change (the thread's name is cut).
        actor = clean_actor(client_name(ctx) or "", "client", prefix="mcp:")

        def run() -> types.CallToolResult:
            try:
                return tools.call(self.tree, params.name, args, actor)
            except Exception:
                log.exception("memfs mcp: tool %s failed", params.name)
                message = f"Error: An internal error stopped {params.name}; nothing was changed."
                return types.CallToolResult(
                    content=[types.TextContent(text=message)], is_error=True
                )

        return await self.workers.run(author, run)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        start = 0
        if cursor:
            try:
                start = int(cursor)
            except ValueError:
                raise MCPError(INVALID_PARAMS, f"Unknown cursor {cursor!r}") from None

        def page() -> tuple[list[resources.FileInfo], bool]:
            found: list[resources.FileInfo] = []
            for i, info in enumerate(resources.walk(self.files)):
                if i >= start + PAGE:
                    return found, True
                if i >= start:
                    found.append(info)
            return found, False

        found, more = await self.workers.run(self._author(ctx), page)
        listed = [
            types.Resource(
                name=info.path.model,
                uri=resources.uri_of(info.path),
                mime_type=resources.mime_type(info.path),
                size=info.size,
            )
            for info in found
        ]
        return types.ListResourcesResult(
            resources=listed, next_cursor=str(start + PAGE) if more else None
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        path = self._path(uri)
        try:
            content = await self.workers.run(
                self._author(ctx), lambda: resources.read(self.files, path)
            )
        except MemfsError as exc:
            raise MCPError(INVALID_PARAMS, f"No file at {path.model} ({exc})") from None
        except OSError as exc:
            raise MCPError(INVALID_PARAMS, f"Cannot read {path.model}: {exc.strerror}") from None
        item: types.TextResourceContents | types.BlobResourceContents
        if content.text is not None:
            item = types.TextResourceContents(
                uri=uri, mime_type=content.mime_type, text=content.text
            )
        else:
            item = types.BlobResourceContents(
                uri=uri, mime_type=content.mime_type, blob=content.blob or ""
            )
        return types.ReadResourceResult(contents=[item])

    @staticmethod
    def _path(uri: str) -> MemPath:
        try:
            return resources.path_of(uri)
        except MemfsError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        path = self._path(str(params.uri))
        self._author(ctx)
        self.subscriptions.setdefault(connection_of(ctx), set()).add(resources.uri_of(path))
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        path = self._path(str(params.uri))
        self.subscriptions.get(connection_of(ctx), set()).discard(resources.uri_of(path))
        return types.EmptyResult()

    # --- changes --------------------------------------------------------------------

    def changed(self, update: Update) -> None:
        """Called from any thread: one operation changed these paths."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._note, update)

    def _note(self, update: Update) -> None:
        uris: dict[str, None] = {}
        for path in update.paths:
            for uri in _affected(path):
                uris[uri] = None
        for uri in uris:
            summaries = self._pending.setdefault(uri, [])
            if update.summary and update.summary not in summaries:
                summaries.append(update.summary)
        self._listing_changed = self._listing_changed or update.listing
        if self._wake is not None:
            self._wake.set()

    async def _deliver(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            pending, self._pending = self._pending, {}
            listing, self._listing_changed = self._listing_changed, False
            try:
                await self._send(pending, listing)
            except Exception:
                log.exception("memfs mcp: delivering change notifications failed")

    async def _send(self, pending: dict[str, list[str]], listing: bool) -> None:
        # The 2026-07-28 streams filter by URI themselves; the SDK's bus carries no _meta.
        for uri in pending:
            await self.bus.publish(ResourceUpdated(uri=uri))
        if listing:
            await self.bus.publish(ResourcesListChanged())
        for connection, subscribed in list(self.subscriptions.items()):
            for uri in subscribed.intersection(pending):
                meta = _meta(pending[uri])
                sending = connection.send_resource_updated(uri, meta=meta)
                await self._notify(connection, sending)
        if listing:
            for connection in list(self.connections):
                await self._notify(connection, connection.send_resource_list_changed())

    async def _notify(self, connection: Connection, sending: Any) -> None:
        try:
            await sending
        except Exception as exc:
            # The client went away: forget it rather than fail every later delivery.
            log.info("dropping a client that cannot be notified: %s", exc)
            self.subscriptions.pop(connection, None)
            self.connections.discard(connection)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Follow the tree's changes while serving; on exit, finish commands in flight."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        watch: Watch = watch_for(self.tree, self.changed)
        watch.start()
        delivery = asyncio.ensure_future(self._deliver())
        try:
            yield
        finally:
            delivery.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivery
            self.listen.close()
            watch.stop()
            self._loop = None
            left = await asyncio.to_thread(self.workers.close)
            self.stranded = left
            if left:
                log.warning(
                    "stopping with commands of %s still running (given %.1f s to finish)",
                    ", ".join(left),
                    STOP_GRACE,
                )
