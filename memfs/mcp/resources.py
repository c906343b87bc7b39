"""Every file of the tree as an MCP resource, ``memory:///memories/...``.

The URI is the model path behind ``memory://`` with each segment percent-encoded, so a
client can turn a resource back into the path the ``memory`` tool takes. A URI goes
through the path gate like any path a model sends; listing and reading use the
handler's symlink-proof tree (nothing outside the root is ever read), and list the files
``view`` would show: no hidden names (the handler's temp files among them), no
``node_modules``, no names the gate refuses.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from memfs.errors import PathError
from memfs.handler.backend import Backend
from memfs.mcp import MEMORY_URI_PREFIX
from memfs.paths import MAX_DEPTH, ROOT_PATH, MemPath, name_problem, parse

_MIME = {
    "md": "text/markdown",
    "markdown": "text/markdown",
    "json": "application/json",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
}


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: MemPath
    size: int


@dataclass(frozen=True, slots=True)
class Content:
    """A file's content as a resource: ``text`` when it is UTF-8, else base64 ``blob``."""

    mime_type: str
    text: str | None = None
    blob: str | None = None


def uri_of(path: MemPath) -> str:
    return MEMORY_URI_PREFIX + quote(path.model, safe="/")


def path_of(uri: str) -> MemPath:
    """The model path a resource URI names; PathError when it names none."""
    if not uri.startswith(MEMORY_URI_PREFIX + "/"):
        raise PathError(
            f"Error: The resource {uri!r} is not a memfs resource; "
            f"its URI must start with {MEMORY_URI_PREFIX}/memories."
        )
    # errors="strict": a URI whose escapes are not UTF-8 names no path.
    try:
        model = unquote(uri[len(MEMORY_URI_PREFIX) :], errors="strict")
    except UnicodeDecodeError:
        raise PathError(f"Error: The resource {uri!r} is not valid UTF-8 once decoded.") from None
    return parse(model)


def mime_type(path: MemPath) -> str:
    _, dot, ext = path.name.rpartition(".")
    return _MIME.get(ext.lower(), "text/plain") if dot else "text/plain"


def walk(tree: Backend[Any], top: MemPath = ROOT_PATH) -> Iterator[FileInfo]:
    """Every file below ``top`` a client can address, in sorted order."""
    with tree.directory(top) as fd:
        yield from _walk(tree, fd, top)


def _walk(tree: Backend[Any], fd: object, here: MemPath) -> Iterator[FileInfo]:
    try:
        children = sorted(tree.listdir(fd), key=lambda item: item[0])
    except PermissionError:
        return
    for name, st in children:
        if name.startswith(".") or name == "node_modules" or name_problem(name) is not None:
            continue
        path = here.child(name)
        if st.kind == "file":
            yield FileInfo(path, st.size)
        elif st.kind == "dir" and len(path.parts) < MAX_DEPTH:
            with tree.subdir(fd, name) as sub:
                if sub is not None:
                    yield from _walk(tree, sub, path)


def read(tree: Backend[Any], path: MemPath) -> Content:
    """The file's content; raises the tree's errors (NotFound, SymlinkRefused, ...)."""
    with tree.directory(path.parent) as fd:
        data = tree.read(fd, path)
    kind = mime_type(path)
    if not kind.startswith("image/"):
        try:
            return Content(kind, text=data.decode("utf-8"))
        except UnicodeDecodeError:
            kind = "application/octet-stream"
    return Content(kind, blob=base64.b64encode(data).decode("ascii"))
