"""Who acts on the memory: the one rule for an actor's name, stated by every door.

An actor is named, never guessed: ``memfs tool --as planner``, ``memfs agent --as
NAME`` (default ``agent``), ``mcp:`` plus an MCP client's whole ``clientInfo.name``,
``MemoryTool(actor=...)``; a person through the mount is their user and program. The
name goes into every change the door makes and is what ``memfs log --actor`` matches,
so it must be one printable line: no control characters, at most 200 UTF-8 bytes.

A coding agent working through the mount (Claude Code, a ``claude`` process) is named
for the agent first and the person it works for second, ``claude-code (alice)``, so
``memfs log --actor claude-code`` finds every session's memory writes, whoever ran it;
anything else through the mount is ``alice (rm)``.

memfs's own commands act as ``memfs COMMAND (user NAME)`` (:mod:`memfs.history.author`)
and record which command they are in the operation itself (``Act.command``, a field of
the store's operation log no door sets). The rebase treats a change by a history
command as one an older pending write must not revert, and asks that field
(:func:`by_history_command`), never the name. The name is reserved all the same, so no
door can pass for memfs in the log: no door may take a name whose first word is
``memfs``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from memfs.errors import ActorError

MAX_ACTOR_BYTES = 200

# The first word of the actors memfs's own commands use; a door may not claim it.
RESERVED_WORD = "memfs"

# The history commands whose changes an older pending write must not revert (the
# operation's typed command, memfs.store.base.Operation.command).
HISTORY_COMMANDS = frozenset({"restore", "undo", "import"})


def reserved(name: str) -> bool:
    """Whether ``name`` reads as memfs's own (its first word is ``memfs``)."""
    return name.strip().split(" ", 1)[0].split(":", 1)[0] == RESERVED_WORD


def by_history_command(command: str) -> bool:
    """Whether an operation whose typed command (``Operation.command``) is ``command``
    was made by ``memfs restore``, ``undo`` or ``import``."""
    return command in HISTORY_COMMANDS


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


# Agents recognised by the process that writes through the mount: the kernel's name of
# the process (comm) -> the agent's actor name. Claude Code's native binary names itself
# ``claude``; its older Node.js form sets the same process title.
AGENT_PROGRAMS = {"claude": "claude-code"}
# A Node.js process running Claude Code's script (without its process title) shows it
# in its command line.
AGENT_SCRIPTS = {"@anthropic-ai/claude-code/": "claude-code"}


def agent_of(program: str, cmdline: Sequence[str] = ()) -> str | None:
    """The agent a process is (``claude-code``), from its name and command line; None
    for any other program."""
    found = AGENT_PROGRAMS.get(program)
    if found is None and program in ("node", "nodejs", "bun"):
        found = next(
            (name for arg in cmdline[1:3] for key, name in AGENT_SCRIPTS.items() if key in arg),
            None,
        )
    return found


def mount_actor(user: str, program: str, agent: str | None = None) -> str:
    """Who a process writing through the mount is: ``claude-code (alice)`` for an
    agent, ``alice (rm)`` for any other program."""
    return f"{agent} ({user})" if agent else f"{user} ({program})"


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
