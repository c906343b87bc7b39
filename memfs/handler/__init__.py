"""The memory tool's six commands, executed on a real directory.

:class:`MemoryHandler` is the one interface: ``execute(command)`` takes the ``input``
of a ``memory`` tool_use block and returns a :class:`Result` (the tool_result content
and its ``is_error`` flag). It never raises: bad input becomes an error the model can
act on, and anything unexpected is logged and reported as an internal error.

The directory can be a plain one or a memfs FUSE mount; the handler needs nothing but
POSIX semantics from it. It writes atomically, never loses a concurrent write, and never
follows a symbolic link (see :mod:`memfs.handler.tree`): listings leave links out, and a
path that meets one is refused with a message naming the link, rather than reported
missing, so whoever planted it can tell why the model cannot use it.

What the model writes (create's ``file_text``, str_replace's ``new_str``, insert's
``insert_text``; never ``old_str``, which is text already stored) is scanned for
credentials by :mod:`memfs.secrets` before the command runs, under the ``secrets``
policy: ``redact`` (default) stores each finding as ``[REDACTED:kind]`` and adds a note
after the contract's success string; ``refuse`` writes nothing and says which kinds were
found; ``allow`` does not scan.

Given the store the directory shows (``store=``, a memfs mount's), the commands run on
the store itself, each edit a compare-and-set on the revision it read
(:mod:`memfs.handler.storetree`): two agents on two mounts or hosts never lose an edit,
and every change is authored by the handler's ``actor``. It also refuses writes past
the store's tree caps with the numbers, and records the model's reads of files as use
for ``memfs expire`` (see :mod:`memfs.handler.keeping`).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from memfs.actors import check_actor
from memfs.errors import Damaged, NotADirectory, PathError, StoreUnavailable
from memfs.handler import strings
from memfs.handler.backend import DIR_MODE, Backend
from memfs.handler.commands import Commands, Refused, Result
from memfs.handler.keeping import Keeping
from memfs.handler.storetree import Neighbours, StoreTree
from memfs.handler.tree import DirTree
from memfs.paths import MemPath, parse
from memfs.secrets import DEFAULT_POLICY, Finding, check_policy, redact, scan
from memfs.store.base import Store

__all__ = ["MemoryHandler", "Result"]

log = logging.getLogger(__name__)

_STRING = "a string"
_INTEGER = "an integer"
# The fields each command reads: name, expected type as told to the model, required.
# insert_line and view_range are checked by the command itself, which can say what
# range would have been valid.
_FIELDS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "view": (("path", _STRING, True), ("view_range", "", False)),
    "create": (("path", _STRING, True), ("file_text", _STRING, True)),
    "str_replace": (
        ("path", _STRING, True),
        ("old_str", _STRING, True),
        ("new_str", _STRING, False),
    ),
    "insert": (
        ("path", _STRING, True),
        ("insert_line", _INTEGER, True),
        ("insert_text", _STRING, True),
    ),
    "delete": (("path", _STRING, True),),
    "rename": (("old_path", _STRING, True), ("new_path", _STRING, True)),
}
# Text that becomes file content must be encodable; paths are checked by the gate.
_CONTENT_FIELDS = ("file_text", "old_str", "new_str", "insert_text")
# The fields the gate reads, in the order their refusals are reported.
_PATH_FIELDS = ("path", "old_path", "new_path")
# The field of each writing command that brings new text, scanned for credentials.
_WRITTEN_FIELD = {"create": "file_text", "str_replace": "new_str", "insert": "insert_text"}
# The path field of each command that makes a new name, screened for credentials too:
# a token in a file name is stored, listed and shown like content.
_NAMING_FIELD = {"create": "path", "rename": "new_path"}


def _fields(command: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, expected, required in _FIELDS[command]:
        value = raw.get(field)
        if value is None:
            if required:
                raise Refused(strings.missing_field(command, field, expected))
            out[field] = None
            continue
        if expected == _STRING and not isinstance(value, str):
            raise Refused(strings.mistyped_field(command, field, expected, value))
        if field in _CONTENT_FIELDS:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise Refused(strings.surrogate_in_field(command, field, exc.start)) from None
        out[field] = value
    return out


def _os_reason(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    reason = exc.strerror or str(exc)
    return f"{reason} ({name})" if name else reason


def _make_private_dirs(path: str) -> None:
    """Create ``path`` and its missing parents, each 0700 whatever the umask.

    The parents hold the memory too (a path like ~/.local/share/app/memories): made by
    os.makedirs they would get 0777 minus the umask, readable by everyone under umask 0.
    Directories that already exist are left as they are.
    """
    missing: list[str] = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs to set
        os.chmod(directory, DIR_MODE)  # mkdir's mode is cut by the umask


class MemoryHandler:
    """Executes memory tool commands on the directory ``root`` (made 0700 if missing).

    ``overwrite``: whether ``create`` may replace an existing file (the contract's
    reference behaviour refuses). ``max_file_bytes``: the largest file, in UTF-8 bytes,
    that create, str_replace and insert will write. ``durable``: also fsync directories
    after each change, so the change survives a power loss (content is always fsynced
    before it replaces a file, so a crash never leaves a torn one). ``secrets``: what
    to do with credentials in written text, ``"redact"``, ``"refuse"`` or ``"allow"``
    (see the module docstring; ValueError for anything else). ``store``: the store
    ``root`` shows (a memfs mount's), with ``store_prefix`` the root's place in it; the
    commands then read and write the store (``neighbours``: what the mount showing it
    must do around each command), check the store's tree caps and record file views as
    use. The caller keeps ownership of the store (the handler never closes it).
    ``actor``: who the changes are by (:func:`memfs.actors.check_actor`; ActorError for
    a name no change may carry). On a plain directory no change records an actor.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        max_file_bytes: int = 100 * 1024,
        durable: bool = False,
        secrets: str = DEFAULT_POLICY,
        store: Store | None = None,
        store_prefix: str = "",
        actor: str = "model",
        neighbours: Neighbours | None = None,
    ) -> None:
        self.secrets = check_policy(secrets)
        self.actor = check_actor(actor)
        if type(max_file_bytes) is not int or max_file_bytes < 0:
            raise ValueError(
                f"max_file_bytes must be a non-negative integer, got {max_file_bytes!r}"
            )
        self.root = os.path.abspath(os.fspath(root))
        if not os.path.lexists(self.root):
            _make_private_dirs(self.root)
        if not os.path.isdir(self.root):
            raise NotADirectory(
                f"The memory root {self.root} exists but is not a directory; "
                "give the path of a directory (or of one to create).",
                path=self.root,
            )
        self.overwrite = overwrite
        self.max_file_bytes = max_file_bytes
        self._tree: Backend[Any]
        if store is None:
            self._tree = DirTree(self.root, durable=durable)
        else:
            self._tree = StoreTree(store, store_prefix, actor=actor, neighbours=neighbours)
        self.store = store
        self._keeping = Keeping(store, store_prefix)
        self._commands = Commands(
            self._tree, overwrite=overwrite, max_file_bytes=max_file_bytes, keeping=self._keeping
        )
        # Each command gets its fields and the gate's reading of its paths (``_gate``).
        commands = self._commands
        self._dispatch: dict[str, Callable[[dict[str, Any], dict[str, MemPath]], Result]] = {
            "view": lambda f, g: commands.view(f["path"], g["path"], f["view_range"]),
            "create": lambda f, g: commands.create(f["path"], g["path"], f["file_text"]),
            "str_replace": lambda f, g: commands.str_replace(
                f["path"], g["path"], f["old_str"], f["new_str"] or ""
            ),
            "insert": lambda f, g: commands.insert(
                f["path"], g["path"], f["insert_line"], f["insert_text"]
            ),
            "delete": lambda f, g: commands.delete(f["path"], g["path"]),
            "rename": lambda f, g: commands.rename(
                f["old_path"], g["old_path"], f["new_path"], g["new_path"]
            ),
        }

    def execute(self, command: object) -> Result:
        """Run one memory tool command (any value: a non-object is answered with the
        contract's error); never raises."""
        name = "?"
        try:
            if not isinstance(command, Mapping):
                return Result(strings.NOT_AN_OBJECT, True)
            name_value = command.get("command")
            if name_value is None:
                return Result(strings.NO_COMMAND, True)
            if not isinstance(name_value, str) or name_value not in _FIELDS:
                return Result(strings.unknown_command(name_value), True)
            name = name_value
            fields = _fields(name, command)
            # The gate reads every path once, first: a path it refuses gets its message,
            # whatever else is wrong with the command.
            gated = {key: parse(fields[key]) for key in _PATH_FIELDS if key in fields}
            note = self._screen_name(name, fields, gated) + self._screen(name, fields)
            if isinstance(self._tree, StoreTree):
                self._tree.settle(*gated.values())
                with self._tree.command(name):
                    result = self._dispatch[name](fields, gated)
            else:
                result = self._dispatch[name](fields, gated)
            if note and not result.is_error:
                return Result(f"{result.content}{note}", False)
            return result
        except Refused as exc:
            return Result(exc.message, True)
        except PathError as exc:
            return Result(str(exc), True)
        except OSError as exc:
            if exc.errno == errno.EDQUOT and isinstance(command, Mapping):
                raw = command.get("path", command.get("new_path", "/memories"))
                return Result(self._keeping.full(name, str(raw)), True)
            # Expected (a read-only or full disk): the result tells the model, and a door
            # such as `memfs tool` must not print a traceback beside it.
            log.info("memory command %s failed on %s: %s", name, self.root, exc)
            return Result(strings.os_error(name, _os_reason(exc)), True)
        except (StoreUnavailable, Damaged) as exc:
            # The store named the cause (its disk is full, a revision is damaged): the
            # model and the person behind it get that, not "internal error".
            log.info("memory command %s failed on %s: %s", name, self.root, exc)
            return Result(strings.store_failed(name, str(exc)), True)
        except Exception:
            log.exception("internal error in memory command %s on %s", name, self.root)
            return Result(strings.internal_error(name), True)

    @property
    def own_seqs(self) -> frozenset[int]:
        """Feed sequence numbers of the changes this handler made (on a store)."""
        tree = self._tree
        return frozenset(tree.own_seqs) if isinstance(tree, StoreTree) else frozenset()

    def _screen(self, name: str, fields: dict[str, Any]) -> str:
        """Apply the secrets policy to the text ``name`` writes, in ``fields``: redact
        it there (returning the note for the result) or refuse the command."""
        field = _WRITTEN_FIELD.get(name)
        if field is None or self.secrets == "allow" or not fields[field]:
            return ""
        findings: list[Finding] = scan(fields[field])
        if not findings:
            return ""
        found = [(f.line, f.kind, f.why) for f in findings]
        if self.secrets == "refuse":
            raise Refused(strings.secrets_refused(fields["path"], field, found))
        fields[field] = redact(fields[field], findings)
        return strings.secrets_redacted(field, found)

    def _screen_name(self, name: str, fields: dict[str, Any], gated: dict[str, MemPath]) -> str:
        """The secrets policy for the name ``name`` makes: refuse the command, or give
        the entry the name with each credential replaced by its marker (returning the
        note), the new name passing the gate again."""
        field = _NAMING_FIELD.get(name)
        if field is None or self.secrets == "allow":
            return ""
        path: str = fields[field]
        findings: list[Finding] = scan(path)
        if not findings:
            return ""
        found = [(f.kind, f.why) for f in findings]
        shown = redact(path, findings)
        if self.secrets == "refuse":
            raise Refused(strings.secret_name_refused(shown, found))
        fields[field] = shown
        gated[field] = parse(shown)
        if name == "create" and fields.get("path") is not None:
            fields["path"] = shown
        return strings.secret_name_redacted(shown, found)

    # One method per command, for callers that have the arguments at hand.

    def view(self, path: str, view_range: list[int] | None = None) -> Result:
        cmd: dict[str, Any] = {"command": "view", "path": path}
        if view_range is not None:
            cmd["view_range"] = view_range
        return self.execute(cmd)

    def create(self, path: str, file_text: str) -> Result:
        return self.execute({"command": "create", "path": path, "file_text": file_text})

    def str_replace(self, path: str, old_str: str, new_str: str | None = None) -> Result:
        cmd: dict[str, Any] = {"command": "str_replace", "path": path, "old_str": old_str}
        if new_str is not None:
            cmd["new_str"] = new_str
        return self.execute(cmd)

    def insert(self, path: str, insert_line: int, insert_text: str) -> Result:
        return self.execute(
            {
                "command": "insert",
                "path": path,
                "insert_line": insert_line,
                "insert_text": insert_text,
            }
        )

    def delete(self, path: str) -> Result:
        return self.execute({"command": "delete", "path": path})

    def rename(self, old_path: str, new_path: str) -> Result:
        return self.execute({"command": "rename", "old_path": old_path, "new_path": new_path})
