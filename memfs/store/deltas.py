"""Content kept as what it added: a revision that adds to the end of its file.

A log, a journal, a ``MEMORY.md`` that agents append to: each revision is the one
before with a line more. Stored whole, every revision costs the whole file again (its
hash, its packing, its row), so a file's revision grew dearer as the file grew and its
history as the square of its length. Four writers taking turns at one file made a
revision per turn, each about 470 us for a 50 KB file against 155 us for a 64-byte one
(``scripts/bench_revisions.py``).

So a blob row may **continue a base**: its ``base`` column names the SHA-256 of a
content stored whole, and the row holds only the bytes after it (the *tail*). The
content is the base's followed by the tail. Rules, kept by :func:`tail_of` and the
backends:

- a base is always a whole row (one level, no chains): reading a content is at most
  two rows, fetched by the same statement (:attr:`memfs.store.sql.Dialect.stored`);
- a revision continues the base of the content it replaces (that content itself when
  it is whole), only when it starts with every byte of it and adds at most
  :data:`MAX_TAIL` bytes (kept as they are); otherwise it is stored whole and becomes
  the next base. So a growing file stores a whole copy about every :data:`MAX_TAIL`
  bytes it grows;
- only content of :data:`MIN_BASE` to :data:`MAX_CONTENT` bytes: smaller content
  costs little whole, larger is read by range from its own row
  (:mod:`memfs.store.ranges`);
- a base is kept while a row continues it, as while a revision holds it (SQLite
  counts the row among the base's users in ``blob_refs``; PostgreSQL's triggers look
  for it), and goes with the last of them;
- before a base is removed for good (redaction), every row continuing it is stored
  whole (:meth:`memfs.store.sql.Dialect.make_whole`);
- every read checks the content, base and tail together, against the revision's
  SHA-256: damage to a base shows as damage to each content continuing it.

The write path keeps the bases it used lately, checked, in a :class:`Bases` cache, so
an appender's revision neither reads nor unpacks its base again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

from memfs.store.ranges import SMALL_CONTENT

__all__ = ["MAX_CONTENT", "MAX_TAIL", "MIN_BASE", "STORED", "Bases", "content_of", "tail_of"]

# A base smaller than this is not worth continuing: its whole copy, packed, is small.
MIN_BASE = 4096
# The most a row continuing a base holds: past it the content is stored whole again
# (and packed). Tails are stored as they are: below the size where packing starts to
# pay (memfs.store.sqlite), and packing a tail of every revision cost the writer more
# than the bytes it saved.
MAX_TAIL = 4 << 10
# Larger content is read by range from its own row (memfs.store.ranges), never
# continued.
MAX_CONTENT = SMALL_CONTENT
# The columns of a stored row as the content joins expose them: codec, content, base
# SHA-256, the base's codec, the base's content.
STORED = 5
# The bases the cache keeps: their bytes at most, and how many.
CACHE_BYTES = 16 << 20
CACHE_BASES = 256


class Unpack(Protocol):
    def __call__(self, codec: int | None, stored: bytes | None, /) -> bytes: ...


class Bases:
    """Whole contents lately used as bases, each checked against its SHA-256 when it
    came in, so one may be used as it is (content never changes under its hash);
    least recently used out first. Shared by a store's threads."""

    def __init__(self, max_bytes: int = CACHE_BYTES, max_bases: int = CACHE_BASES) -> None:
        self._max_bytes = max_bytes
        self._max_bases = max_bases
        self._held: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, sha256: str) -> bytes | None:
        with self._lock:
            data = self._held.get(sha256)
            if data is not None:
                self._held.move_to_end(sha256)
            return data

    def put(self, sha256: str, data: bytes) -> None:
        """Keep ``data``, whose SHA-256 the caller checked is ``sha256``."""
        if len(data) > self._max_bytes // 4:
            return
        with self._lock:
            if sha256 in self._held:
                self._held.move_to_end(sha256)
                return
            self._held[sha256] = data
            self._bytes += len(data)
            while self._bytes > self._max_bytes or len(self._held) > self._max_bases:
                _, gone = self._held.popitem(last=False)
                self._bytes -= len(gone)


def content_of(unpack: Unpack, row: Sequence[Any], at: int, bases: Bases) -> bytes | None:
    """The content stored in the :data:`STORED` columns of ``row`` from ``at``: the
    row's own bytes after its base's, if it continues one. None when they cannot be
    had (a base gone, damaged, or bytes that do not unpack); the caller's check of the
    whole content's SHA-256 reports the damage."""
    codec, stored, base, base_codec, base_stored = row[at : at + STORED]
    try:
        own = unpack(codec, stored)
        if base is None:
            return own
        head = bases.get(str(base))
        if head is None:
            if base_stored is None:
                return None
            head = unpack(base_codec, base_stored)
            if hashlib.sha256(head).hexdigest() != base:
                return None
            bases.put(str(base), head)
        return head + own
    except ValueError:
        return None


def tail_of(data: bytes | bytearray, base: bytes, end: int | None = None) -> bytes | None:
    """What ``data`` (up to ``end``) adds after ``base``, if it may be stored as
    ``base`` continued."""
    size = len(data) if end is None else end
    if not (MIN_BASE <= len(base) < size <= MAX_CONTENT):
        return None
    if size - len(base) > MAX_TAIL:
        return None
    if not data.startswith(base):  # (a memoryview's != compares byte by byte, slowly)
        return None
    return bytes(data[len(base) : size])
