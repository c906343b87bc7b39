"""Unified diffs between revisions of a file, and of a tree since a point of its feed.

Text is decoded as UTF-8 with undecodable bytes kept visible (``surrogateescape``,
printed as replacement characters); content with NUL bytes is binary and gets one line
saying it differs, as ``diff`` says it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from memfs.errors import NotFound
from memfs.history.follow import lineage
from memfs.history.timeline import Node, then_and_now
from memfs.store.base import Store

NULL = "/dev/null"


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def unified(old: bytes | None, new: bytes | None, old_name: str, new_name: str) -> list[str]:
    """The unified diff of two contents (None: absent), each line ending in a newline."""
    a, b = old or b"", new or b""
    if a == b:
        return []
    if b"\0" in a or b"\0" in b:
        return [f"Binary files {old_name} and {new_name} differ\n"]
    out = []
    for line in difflib.unified_diff(
        _lines(a),
        _lines(b),
        old_name if old is not None else NULL,
        new_name if new is not None else NULL,
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return out


def file_diff(
    store: Store, path: str, old_rev: int | None = None, new_rev: int | None = None
) -> list[str]:
    """The file at ``path``'s revision ``old_rev`` against ``new_rev``, its revisions
    followed across the renames that brought it there (default: the revision before
    its last change of content against its current content; the current content
    against nothing for a deleted path). A revision that only moved the content (a
    rename's arrival) is not a change of content."""
    revisions = lineage(store, path)
    by_rev = {r.rev: r for r in revisions}
    for asked in (old_rev, new_rev):
        if asked is not None and asked not in by_rev:
            raise NotFound(f"revision {asked} of '{path}' is not retained", path=path)
    if new_rev is not None:
        newest = by_rev[new_rev]
        new: bytes | None = store.read_revision(newest.path, new_rev)
        new_name = f"b/{newest.path}@{new_rev}"
        new_sha: str | None = newest.sha256
    else:
        try:
            new = store.read(path)[0]
        except NotFound:
            new = None
        new_name = f"b/{path}"
        new_sha = revisions[0].sha256 if new is not None and revisions else None
    if old_rev is None:
        below = new_rev if new_rev is not None else revisions[0].rev + 1 if revisions else 0
        older = [r for r in revisions if r.rev < below and r.sha256 != new_sha]
        old_rev = older[0].rev if older else None
    if old_rev is None:
        return unified(None, new, NULL, new_name)
    oldest = by_rev[old_rev]
    old = store.read_revision(oldest.path, old_rev)
    return unified(old, new, f"a/{oldest.path}@{old_rev}", new_name)


def _content(store: Store, node: Node | None) -> bytes | None:
    if node is None or node.kind != "file":
        return None
    if node.sha256 is None:
        raise NotFound("content no longer retained")
    return store.read_blob(node.sha256)


def tree_diff(store: Store, seq: int, top: str = "") -> Iterator[str]:
    """The changes of the files at and below ``top`` since change ``seq``: one unified
    diff per file that differs, by path; a file whose earlier content is no longer
    retained gets a line saying so."""
    then, now = then_and_now(store, seq, top)
    for path in sorted(set(then) | set(now)):
        old, new = then.get(path), now.get(path)
        if (old is None or old.kind != "file") and (new is None or new.kind != "file"):
            continue
        if old is not None and new is not None and old.sha256 == new.sha256:
            continue
        try:
            before = _content(store, old)
        except NotFound:
            yield f"memfs: the earlier content of {path} is no longer retained\n"
            continue
        yield from unified(before, _content(store, new), f"a/{path}", f"b/{path}")
