"""The one gate for model paths: pure functions, no I/O.

Every path the model sends goes through :func:`parse`, which returns a canonical
:class:`MemPath` or raises :class:`~memfs.errors.PathError` with one sentence saying what
is wrong. Names that people create (through the mount or in a mirrored directory) go
through :func:`name_problem`, the same rule for one segment, so every file in a memfs
tree can be addressed by the model and copied to a managed memory store.

The rule is at least as strict as the managed stores' one: ``/memories`` or
``/memories/...`` on a segment boundary; 1 to 20 segments below the root; no empty, ``.``
or ``..`` segment (one trailing ``/`` is tolerated); no backslash; no control, format or
line/paragraph separator characters; NFC only; a segment at most 255 UTF-8 bytes and
the whole path at most 1,024. On top of that, a segment that *would become* a dot
segment or a separator in a later layer is refused too: after percent-decoding (any
depth) or NFKC folding, so no URL decoder, normalising file system or sync target can
turn a stored name into traversal; nor may a segment that reads as one, a slash
lookalike (division slash U+2215, fraction slash U+2044 and their kin) next to dots
(``..\u2215x``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

from memfs.errors import PathError, PathTooLong

ROOT = "/memories"
MAX_PATH_BYTES = 1024
MAX_SEGMENT_BYTES = 255
MAX_DEPTH = 20
# memfs's own temporary and state files use this prefix inside the tree; the model and
# people may not create names that could collide with them.
RESERVED_PREFIX = ".memfs"

# Characters that render as a dot but that NFKC leaves alone (NFKC already folds
# fullwidth, small and leader dots). A segment made only of dots and these could be read
# as "." or ".." by a person or by a tool that folds confusables.
_DOT_LOOKALIKES = frozenset("\u3002\uff61\u0701\u0702\u2e3c\ua4f8\u06d4\u0589\u00b7\u2027")
# Characters that render as a slash or a backslash but that NFKC leaves alone (it folds
# the fullwidth and small ones to '/' and '\\' already). Inside a name they are text
# ("1\u22152 cup"), but next to dots ("..\u2215x") the name reads as a path that climbs out
# of its directory, to a person and to a tool that folds confusables.
_SLASH_LOOKALIKES = re.compile(
    "[\u2215\u2044\u29f8\u2571\u1735\u27cb\u2cc6\u2216\u29f5\u29f9\u2572\u27cd]"
)
# Device names Windows reserves in any directory with any extension: a tree holding one
# cannot be checked out or synced there.
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE)
# Percent-encodings are peeled until stable; a deeper nesting than this is itself hostile.
_MAX_DECODE_ROUNDS = 8


@dataclass(frozen=True, slots=True)
class MemPath:
    """A canonical path inside the memory tree; ``parts == ()`` is the root."""

    parts: tuple[str, ...]

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def rel(self) -> str:
        """Relative form used by stores and on disk: ``"a/b.md"``, ``""`` for the root."""
        return "/".join(self.parts)

    @property
    def model(self) -> str:
        """The canonical form the model would write: ``/memories/a/b.md``."""
        return ROOT + "".join("/" + p for p in self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""

    @property
    def parent(self) -> MemPath:
        return MemPath(self.parts[:-1])

    def child(self, name: str) -> MemPath:
        return MemPath((*self.parts, name))

    def is_within(self, other: MemPath) -> bool:
        """True if this path is ``other`` or below it."""
        return self.parts[: len(other.parts)] == other.parts

    def __str__(self) -> str:
        return self.model


ROOT_PATH = MemPath(())


def shown(text: str) -> str:
    """``text`` with invisible and control characters escaped, for error messages."""
    out = []
    for ch in text:
        if ch == "\\" or (ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Zl", "Zp")):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def _bad_char(text: str) -> str | None:
    # Cn (unassigned) is refused too: a code point the gate cannot classify is not trusted.
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Cn"):
            return ch
    return None


def _peel(segment: str) -> str:
    """Percent-decode until stable, so double and triple encodings are seen through.

    Raises ValueError for an encoding that is not UTF-8 or nests deeper than any real
    name would.
    """
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(segment, errors="strict") if "%" in segment else segment
        if decoded == segment:
            return segment
        segment = decoded
    raise ValueError("percent-encoding nested too deep")


def _dot_like(segment: str) -> bool:
    # Trailing spaces go first: Windows drops them from names, so ".. " (or "..\u00a0",
    # which NFKC folds to it) would end up as "..".
    folded = unicodedata.normalize("NFKC", segment).rstrip(" ")
    return bool(folded) and all(ch == "." or ch in _DOT_LOOKALIKES for ch in folded)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be one segment of a memfs path, or ``None`` if it can."""
    if not isinstance(name, str):
        return "a name must be text"
    return _segment_problem(name)


# The full check (decoding, two normalisations) dominated the FUSE daemon's and the
# handler's per-operation cost; names recur endlessly, and the answer is a pure function
# of the string.
@functools.lru_cache(maxsize=65536)
def _segment_problem(name: str) -> str | None:
    if name == "":
        return "it contains an empty segment ('//')"
    if name in (".", ".."):
        return f"it contains a '{name}' segment"
    if "/" in name:
        return "a name cannot contain '/'"
    if "\\" in name:
        return "it contains a backslash"
    bad = _bad_char(name)
    if bad is not None:
        return f"it contains the control or invisible character U+{ord(bad):04X}"
    if not unicodedata.is_normalized("NFC", name):
        return "it is not in Unicode NFC form"
    if len(name.encode("utf-8")) > MAX_SEGMENT_BYTES:
        return f"the segment '{shown(name[:40])}...' is longer than {MAX_SEGMENT_BYTES} bytes"
    if _dot_like(name):
        return f"the segment '{shown(name)}' reads as a dot segment"
    if _SLASH_LOOKALIKES.search(name) and any(
        _dot_like(piece) for piece in _SLASH_LOOKALIKES.split(unicodedata.normalize("NFKC", name))
    ):
        return f"the segment '{shown(name)}' reads as a path with a dot segment"
    try:
        decoded = _peel(name)
        folded = _peel(unicodedata.normalize("NFKC", decoded))
    except ValueError:
        return f"the segment '{shown(name)}' has a percent-encoding that does not decode to UTF-8"
    for layer, text in (("percent-decoded", decoded), ("NFKC-folded", folded)):
        if text == name:
            continue
        if "/" in text or "\\" in text:
            return f"the segment '{shown(name)}' becomes a path separator when {layer}"
        if _dot_like(text):
            return f"the segment '{shown(name)}' becomes a dot segment when {layer}"
        if _bad_char(text) is not None:
            return f"the segment '{shown(name)}' hides a control character when {layer}"
    if name.startswith(RESERVED_PREFIX):
        return f"names starting with '{RESERVED_PREFIX}' are reserved for memfs"
    if name.endswith((" ", ".")):
        return "a name cannot end with a space or a dot"
    if _WINDOWS_RESERVED.match(name):
        return f"'{name}' is a reserved device name"
    return None


def parse(path: object) -> MemPath:
    """Turn a path the model sent into a canonical :class:`MemPath`, or raise PathError."""
    if not isinstance(path, str):
        raise PathError(f"Error: The path must be a string, got {type(path).__name__}.")

    def refuse(reason: str, kind: type[PathError] = PathError) -> PathError:
        display = shown(path) if len(path) <= 200 else shown(path[:200]) + "..."
        return kind(f"Error: The path {display} is not allowed: {reason}.", path=path)

    if len(path.encode("utf-8", errors="surrogatepass")) > MAX_PATH_BYTES:
        raise refuse(f"it is longer than {MAX_PATH_BYTES} bytes", PathTooLong)
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise refuse("it must be /memories or start with /memories/")
    rest = path[len(ROOT) + 1 :]
    if rest.endswith("/"):
        rest = rest[:-1]
    if path in (ROOT, ROOT + "/"):
        return ROOT_PATH
    # "/memories//" falls through to here with rest == "": one empty segment, refused.
    parts = tuple(rest.split("/"))
    if len(parts) > MAX_DEPTH:
        raise refuse(f"it is more than {MAX_DEPTH} levels deep", PathTooLong)
    for part in parts:
        if isinstance(part, str) and len(part.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            raise refuse(name_problem(part) or "a segment is too long", PathTooLong)
        problem = name_problem(part)
        if problem is not None:
            raise refuse(problem)
    return MemPath(parts)


def parse_rel(rel: str) -> MemPath:
    """Parse a store-relative path (``"a/b"``, ``""`` for the root) with the same rule."""
    return parse(ROOT + "/" + rel if rel else ROOT)


def parent_of(rel: str) -> str:
    """The store-relative path of ``rel``'s directory: ``"a/b"`` -> ``"a"``, ``"a"`` -> ``""``
    (the root). Pure string work, for paths already through the gate."""
    return rel.rpartition("/")[0]


def fits(depth: int, nbytes: int) -> bool:
    """Whether a store-relative path of ``depth`` segments and ``nbytes`` UTF-8 bytes is
    within the gate's limits (a rename checks every path it would create this way)."""
    return depth <= MAX_DEPTH and len(ROOT) + 1 + nbytes <= MAX_PATH_BYTES
