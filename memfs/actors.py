"""Who acts on the memory: the one rule for an actor's name, stated by every door.

An actor is named, never guessed: ``memfs tool --as planner``, ``memfs agent --as
NAME`` (default ``agent``), ``mcp:`` plus an MCP client's whole ``clientInfo.name``,
``MemoryTool(actor=...)``; a person through the mount is their user and program. The
name goes into every change the door makes and is what ``memfs log --actor`` matches,
so it must be one printable line: no control characters, at most 200 UTF-8 bytes.

memfs's own commands act as ``memfs COMMAND (user NAME)`` (:mod:`memfs.history.author`)
and the rebase treats a change by a history command as one an older pending write must
not revert. So that name is reserved: no door may take a name whose first word is
``memfs``, and :func:`by_history_command` is the one place that decides.
"""

from __future__ import annotations

import re
import unicodedata

from memfs.errors import ActorError

MAX_ACTOR_BYTES = 200

# The first word of the actors memfs's own commands use; a door may not claim it.
RESERVED_WORD = "memfs"

# The history commands whose changes an older pending write must not revert, as
# memfs.history.author.author_for names them: "memfs restore (user alice)".
_HISTORY_COMMAND = re.compile(r"memfs (restore|undo|import) \(user [^()]*\)")


def reserved(name: str) -> bool:
    """Whether ``name`` reads as memfs's own (its first word is ``memfs``)."""
    return name.strip().split(" ", 1)[0].split(":", 1)[0] == RESERVED_WORD


def by_history_command(author: str) -> bool:
    """Whether a change by ``author`` was made by ``memfs restore``, ``undo`` or
    ``import``. Sound because no door can give an actor that name (:func:`check_actor`)."""
    return _HISTORY_COMMAND.fullmatch(author) is not None


def check_actor(name: object) -> str:
    """``name`` if it is a usable actor name, else ActorError saying why in one line."""
    if not isinstance(name, str) or not name.strip():
        raise ActorError("an actor name must be non-empty text")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_ACTOR_BYTES:
        raise ActorError(f"the actor name is longer than {MAX_ACTOR_BYTES} bytes: shorten it")
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise ActorError(
            f"the actor name holds the control character U+{ord(bad):04X}: use printable text"
        )
    if reserved(name):
        raise ActorError(
            f"the actor name {name!r} is reserved for memfs's own commands (their names"
            f" start with {RESERVED_WORD!r}); choose another"
        )
    return name


def clean_actor(name: str, fallback: str, *, prefix: str = "") -> str:
    """``prefix`` and a usable actor name made from text someone else chose (an MCP
    client's name): control characters become spaces and the whole is cut to the limit;
    ``fallback`` stands in if nothing printable is left."""
    text = "".join(
        " " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") else c for c in name
    ).strip()
    room = MAX_ACTOR_BYTES - len(prefix.encode("utf-8"))
    text = text.encode("utf-8")[:room].decode("utf-8", "ignore").strip()
    return prefix + (text or fallback)
