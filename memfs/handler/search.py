"""Search in a plain directory, for the doors that have no store (``--root DIR``).

It reads every file: a plain directory keeps no index. The query means the same as a
store's search (:mod:`memfs.store.matching`) and the results are the same
:class:`~memfs.store.base.SearchHit` values. The walk follows the handler's rules: no
symlink is followed (links are left out, as in listings), hard-linked files are left
out (they may be files outside the root), and so are names the path gate refuses and
the handler's own temporary files, which the model could not address.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from memfs.errors import IsADirectory, NotFound
from memfs.handler.backend import READ_LIMIT
from memfs.handler.posix import DIR_FLAGS, read_all
from memfs.handler.tree import TEMP_PREFIX, DirTree
from memfs.paths import ROOT, name_problem, parse_rel
from memfs.store.base import SearchHit
from memfs.store.matching import DEFAULT_LIMIT, average, decode_text, parse_query

__all__ = ["format_hits", "search_directory"]

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def search_directory(
    root: str | os.PathLike[str],
    query: str,
    path: str = "",
    *,
    regex: bool = False,
    limit: int = DEFAULT_LIMIT,
) -> list[SearchHit]:
    """:meth:`memfs.store.base.Store.search` over the directory ``root``; ``path`` is
    relative to it (``""``: all of it), paths in the hits too."""
    parsed = parse_query(query, regex=regex)
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    where = parse_rel(path)
    tree = DirTree(root)
    found: list[tuple[str, str, list[tuple[int, str]]]] = []
    files = _files_in_root(tree) if where.is_root else _files_at(tree, where.rel)
    for rel, data in files:
        text = decode_text(data)
        lines = None if text is None else parsed.matching_lines(text)
        if text is not None and lines:
            found.append((rel, text, lines))
    mean = average([len(text) for _, text, _ in found])
    hits = [SearchHit(p, parsed.score(text, mean), lines) for p, text, lines in found]
    hits.sort(key=lambda h: (-h.score, h.path))
    return hits[:limit]


def _files_in_root(tree: DirTree) -> Iterator[tuple[str, bytes]]:
    fd = os.open(tree.root, DIR_FLAGS)
    try:
        yield from _walk(fd, "")
    finally:
        os.close(fd)


def _files_at(tree: DirTree, rel: str) -> Iterator[tuple[str, bytes]]:
    where = parse_rel(rel)
    with tree.directory(where.parent) as parent_fd:
        st = tree.entry(parent_fd, where)
        if st is None:
            raise NotFound(where.model, path=where.model)
        if st.kind == "file":
            data = _read(parent_fd, where.name)
            if data is not None:
                yield rel, data
            return
        if st.kind != "dir":
            raise IsADirectory(where.model, path=where.model)
        fd = os.open(where.name, DIR_FLAGS, dir_fd=parent_fd)
    try:
        yield from _walk(fd, rel)
    finally:
        os.close(fd)


def _walk(dir_fd: int, prefix: str) -> Iterator[tuple[str, bytes]]:
    """Every readable regular file below ``dir_fd``, by sorted name, depth first."""
    with os.scandir(dir_fd) as it:
        items = sorted(it, key=lambda item: item.name)
    for item in items:
        name = item.name
        if name.startswith(TEMP_PREFIX) or name_problem(name) is not None:
            continue
        rel = f"{prefix}/{name}" if prefix else name
        try:
            st = item.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed while walking
        if stat.S_ISDIR(st.st_mode):
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue  # replaced by a link or removed meanwhile: not ours to enter
            try:
                yield from _walk(child, rel)
            finally:
                os.close(child)
        elif stat.S_ISREG(st.st_mode) and st.st_nlink <= 1:
            data = _read(dir_fd, name)
            if data is not None:
                yield rel, data


def _read(dir_fd: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None  # gone, a link swapped in, or unreadable: the model could not read it
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_size > READ_LIMIT:
            return None
        return read_all(fd, READ_LIMIT)
    finally:
        os.close(fd)


def format_hits(hits: list[SearchHit], query: str, where: str = "/memories") -> str:
    """The tool result a model reads for ``hits``: model paths, best first, each with its
    matching lines numbered as ``view`` numbers them, so a follow-up ``view`` with a
    ``view_range`` lands on them."""
    if not hits:
        return f"No file in {where} matches {query!r}."
    count = f"{len(hits)} file{'s' if len(hits) != 1 else ''}"
    out = [f"{count} in {where} match {query!r}, best first:"]
    for hit in hits:
        out.append(f"{ROOT}/{hit.path}")
        out.extend(f"{number:6d}\t{text}" for number, text in hit.lines)
    return "\n".join(out)
