"""WsgiDAV's provider over a memfs store: every DAV resource an entry of the store.

Paths come from WsgiDAV decoded once; each goes through the gate (:func:`memfs.paths.parse`,
which peels further percent-encodings and refuses dot segments, separators and control
characters) before the store sees it, so a hostile URL is a 404 or a 403, never an
escape. A subtree (``--subtree``) is a store prefix the client never sees above.

Writes are the store's own transactions:

- a PUT whose ``If-Match`` names a revision (the ETag this server gave, ``"r<rev>"``) is
  compare-and-set on it: a newer revision meanwhile is 412, never a lost update;
- a PUT without one is a save of the whole file and follows the mount's merge rules
  (:func:`memfs.store.rebase.land`): merged against the revision this client last read
  (its last GET), else against what was there when the request began. A client is its
  user and its program (``User-Agent``): two clients sharing both share that base, and
  a save of one may then take back a line the other added after the shared read;
- the body is bounded by the store's file cap while it arrives (413 past it);
- MOVE is one store rename, so a directory moves in one transaction.

Symlinks (which the mount keeps for tools that make them) are not served: WebDAV has no
such thing, and following one is what a gate exists to prevent.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_CONFLICT,
    HTTP_FORBIDDEN,
    HTTP_INSUFFICIENT_STORAGE,
    HTTP_NOT_FOUND,
    HTTP_PRECONDITION_FAILED,
    HTTP_REQUEST_ENTITY_TOO_LARGE,
    HTTP_SERVICE_UNAVAILABLE,
    DAVError,
)
from wsgidav.dav_provider import DAVCollection, DAVNonCollection, DAVProvider

from memfs import paths
from memfs.errors import (
    AlreadyExists,
    CapExceeded,
    Conflict,
    DirectoryNotEmpty,
    InvalidMove,
    IsADirectory,
    MemfsError,
    NotADirectory,
    NotFound,
    PathError,
    ReadOnlyStore,
    TooLarge,
)
from memfs.store.base import Entry, Store
from memfs.store.ranges import SMALL_CONTENT, ReaderFile
from memfs.store.rebase import Shape, land

# Revisions a client read (GET), remembered as the base of its next save of the file.
SEEN_KEPT = 4096
ACTOR_KEY = "memfs.actor"


def dav_error(exc: MemfsError) -> DAVError:
    """The HTTP status a store refusal is to a DAV client."""
    if isinstance(exc, PathError):
        return DAVError(HTTP_FORBIDDEN, str(exc))
    if isinstance(exc, TooLarge):
        return DAVError(HTTP_REQUEST_ENTITY_TOO_LARGE, str(exc))
    if isinstance(exc, CapExceeded):
        return DAVError(HTTP_INSUFFICIENT_STORAGE, str(exc))
    if isinstance(exc, Conflict):
        return DAVError(HTTP_PRECONDITION_FAILED, str(exc))
    if isinstance(exc, NotFound | NotADirectory | AlreadyExists):
        return DAVError(HTTP_CONFLICT, str(exc))
    if isinstance(exc, IsADirectory | DirectoryNotEmpty | InvalidMove | ReadOnlyStore):
        return DAVError(HTTP_FORBIDDEN, str(exc))
    return DAVError(HTTP_CONFLICT, str(exc))


def etag_rev(header: str | None) -> int | None:
    """The revision the first entity tag of an ``If-Match`` header names, if it is one
    of ours (``"r12"``)."""
    if not header:
        return None
    tag = header.split(",", 1)[0].strip()
    tag = tag.removeprefix("W/").strip('"')
    if tag.startswith("r") and tag[1:].isdigit():
        return int(tag[1:])
    return None


class _Body(io.RawIOBase):
    """A PUT body as it arrives, refused past the store's file cap."""

    def __init__(self, cap: int | None) -> None:
        self.buffer = io.BytesIO()
        self.cap = cap

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        size = len(data)
        if self.cap is not None and self.buffer.tell() + size > self.cap:
            raise DAVError(HTTP_REQUEST_ENTITY_TOO_LARGE, f"files are capped at {self.cap} bytes")
        self.buffer.write(data)
        return size


class StoreProvider(DAVProvider):  # type: ignore[misc]
    """The store (below ``prefix``) as a DAV tree."""

    def __init__(self, store: Store, prefix: str = "") -> None:
        super().__init__()
        self.store = store
        self.prefix = prefix.strip("/")
        self._seen: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._seen_lock = threading.Lock()

    def is_readonly(self) -> bool:
        return False

    # --- paths -------------------------------------------------------------------
    def store_path(self, path: str) -> str:
        """The store path of a DAV path; PathError if the gate refuses it."""
        rel = path.strip("/")
        gated = paths.parse(paths.ROOT + ("/" + rel if rel else "")).rel
        if not self.prefix:
            return gated
        return f"{self.prefix}/{gated}" if gated else self.prefix

    def get_resource_inst(self, path: str | None, environ: dict[str, Any]) -> Any:
        self._count_get_resource_inst += 1
        if path is None:  # the parent of the root (WsgiDAV asks on a PUT to "/")
            return None
        try:
            where = self.store_path(path)
            entry = self.store.stat(where)
        except (PathError, NotFound, NotADirectory):
            return None
        if entry.kind == "dir":
            return StoreDir(self, path, environ, entry)
        if entry.kind == "file":
            return StoreFile(self, path, environ, entry)
        return None

    # --- what a client read ----------------------------------------------------------
    def saw(self, actor: str, where: str, rev: int) -> None:
        with self._seen_lock:
            self._seen[(actor, where)] = rev
            self._seen.move_to_end((actor, where))
            while len(self._seen) > SEEN_KEPT:
                self._seen.popitem(last=False)

    def seen(self, actor: str, where: str) -> int | None:
        with self._seen_lock:
            return self._seen.get((actor, where))


def _actor(environ: dict[str, Any]) -> str:
    actor = environ.get(ACTOR_KEY)
    assert isinstance(actor, str), "the door's middleware names every request's actor"
    return actor


def _client(environ: dict[str, Any]) -> str:
    """Who read a file, as far as HTTP tells: the actor and its program."""
    return f"{_actor(environ)}\0{environ.get('HTTP_USER_AGENT', '')}"


def _child(path: str, name: str) -> str:
    return path.rstrip("/") + "/" + name


class StoreDir(DAVCollection):  # type: ignore[misc]
    def __init__(
        self, provider: StoreProvider, path: str, environ: dict[str, Any], entry: Entry
    ) -> None:
        super().__init__(path, environ)
        self.provider = provider
        self.store = provider.store
        self.entry = entry
        self.where = provider.store_path(path)

    def get_creation_date(self) -> float:
        return self.entry.ctime_ns / 1e9

    def get_last_modified(self) -> float:
        return self.entry.mtime_ns / 1e9

    def get_display_name(self) -> str:
        return str(self.name)

    def get_member_names(self) -> list[str]:
        try:
            return [e.name for e in self.store.listdir(self.where) if e.kind != "symlink"]
        except NotFound:
            return []

    def get_member(self, name: str) -> Any:
        return self.provider.get_resource_inst(_child(self.path, name), self.environ)

    def _new(self, name: str) -> str:
        try:
            return self.provider.store_path(_child(self.path, name))
        except PathError as exc:
            raise dav_error(exc) from None

    def create_empty_resource(self, name: str) -> StoreFile:
        where = self._new(name)
        now = self.store.clock()
        if self.environ.get("REQUEST_METHOD") == "PUT":
            # The PUT's body is the file's first revision: no empty one before it.
            fresh = Entry(where, "file", 0, 0o600, now, now, 0)
            return StoreFile(self.provider, _child(self.path, name), self.environ, fresh)
        try:
            entry = self.store.write(where, b"", author=_actor(self.environ), expected_rev=0)
        except MemfsError as exc:
            raise dav_error(exc) from None
        return StoreFile(self.provider, _child(self.path, name), self.environ, entry)

    def create_collection(self, name: str) -> None:
        where = self._new(name)
        try:
            self.store.mkdir(where, author=_actor(self.environ))
        except MemfsError as exc:
            raise dav_error(exc) from None

    def support_recursive_delete(self) -> bool:
        return True

    def delete(self) -> None:
        if not self.where or self.where == self.provider.prefix:
            raise DAVError(HTTP_FORBIDDEN, "the root is not deleted")
        try:
            self.store.delete(self.where, author=_actor(self.environ), recursive=True)
        except NotFound:
            raise DAVError(HTTP_NOT_FOUND) from None
        except MemfsError as exc:
            raise dav_error(exc) from None
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        try:
            dest = self.provider.store_path(dest_path)
            self.store.mkdir(dest, author=_actor(self.environ), exist_ok=True)
        except MemfsError as exc:
            raise dav_error(exc) from None
        _props(self, dest_path, is_move=False, children=False)

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def move_recursive(self, dest_path: str) -> None:
        _move(self, dest_path)


def _move(res: StoreDir | StoreFile, dest_path: str) -> None:
    try:
        dest = res.provider.store_path(dest_path)
        res.store.rename(res.where, dest, author=_actor(res.environ), overwrite=True)
    except MemfsError as exc:
        raise dav_error(exc) from None
    _props(res, dest_path, is_move=True, children=res.is_collection)


def _props(res: StoreDir | StoreFile, dest_path: str, *, is_move: bool, children: bool) -> None:
    """Dead properties follow a copied or moved resource (keyed by its ref URL)."""
    manager = res.provider.prop_manager
    if not manager:
        return
    dest = res.provider.share_path + dest_path
    if res.is_collection and not dest.endswith("/"):
        dest += "/"
    if is_move:
        manager.move_properties(res.get_ref_url(), quote(dest), with_children=children)
    else:
        manager.copy_properties(res.get_ref_url(), quote(dest))


class StoreFile(DAVNonCollection):  # type: ignore[misc]
    def __init__(
        self, provider: StoreProvider, path: str, environ: dict[str, Any], entry: Entry
    ) -> None:
        super().__init__(path, environ)
        self.provider = provider
        self.store = provider.store
        self.entry = entry
        self.where = entry.path
        self._body: _Body | None = None

    def get_content_length(self) -> int:
        return self.entry.size

    def get_content_type(self) -> str:
        mime: str = util.guess_mime_type(self.path)
        return mime

    def get_creation_date(self) -> float:
        return self.entry.ctime_ns / 1e9

    def get_last_modified(self) -> float:
        return self.entry.mtime_ns / 1e9

    def get_display_name(self) -> str:
        return str(self.name)

    def get_etag(self) -> str | None:
        return f"r{self.entry.rev}" if self.entry.rev else None

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return True

    def get_content(self) -> io.RawIOBase | io.BytesIO:
        # The body is the revision this request looked up, never a newer one: its
        # Content-Length and ETag are already sent, and a newer, longer body cut at the
        # older length would lose its tail in the client's next save (merged against the
        # newer revision, as if the client had seen what it never received). A large
        # file is served by range (a GET of its tail fetches only the tail).
        rev = self.entry.rev
        try:
            if self.entry.size > SMALL_CONTENT:
                content: io.RawIOBase | io.BytesIO = ReaderFile(
                    self.store.open_revision(self.where, rev)
                )
            else:
                content = io.BytesIO(self.store.read_revision(self.where, rev))
        except NotFound:
            # Gone since the lookup (50 newer revisions, or a redaction): ask again.
            raise DAVError(HTTP_SERVICE_UNAVAILABLE, "the file changed; read it again") from None
        except MemfsError as exc:
            raise dav_error(exc) from None
        self.provider.saw(_client(self.environ), self.where, rev)
        return content

    def begin_write(self, *, content_type: str | None = None) -> _Body:
        self._body = _Body(self.store.max_file_bytes)
        return self._body

    def end_write(self, *, with_errors: bool) -> None:
        if with_errors or self._body is None:
            return
        data = self._body.buffer.getvalue()
        actor = _actor(self.environ)
        expected = etag_rev(self.environ.get("HTTP_IF_MATCH"))
        try:
            if expected is not None:
                entry = self.store.write(self.where, data, author=actor, expected_rev=expected)
            else:
                base = self.provider.seen(_client(self.environ), self.where)
                if base is None:
                    base = self.entry.rev
                entry = land(
                    self.store,
                    self.where,
                    data,
                    base_rev=base,
                    shape=Shape.WHOLE,
                    author=actor,
                    side="webdav",
                ).entry
        except Conflict:
            raise DAVError(
                HTTP_PRECONDITION_FAILED, "the file changed since that revision"
            ) from None
        except MemfsError as exc:
            raise dav_error(exc) from None
        self.entry = entry
        self.provider.saw(_client(self.environ), self.where, entry.rev)

    def delete(self) -> None:
        try:
            self.store.delete(self.where, author=_actor(self.environ))
        except NotFound:
            raise DAVError(HTTP_NOT_FOUND) from None
        except MemfsError as exc:
            raise dav_error(exc) from None
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        actor = _actor(self.environ)
        try:
            dest = self.provider.store_path(dest_path)
            if is_move:
                self.store.rename(self.where, dest, author=actor, overwrite=True)
            else:
                data, _ = self.store.read(self.where)
                self.store.write(dest, data, author=actor)
        except MemfsError as exc:
            raise dav_error(exc) from None
        _props(self, dest_path, is_move=is_move, children=False)

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def move_recursive(self, dest_path: str) -> None:
        _move(self, dest_path)
