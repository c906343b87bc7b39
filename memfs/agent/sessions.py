"""The multi-session pattern of the memory tool's documentation, on a memfs tree.

Long work runs over many sessions, each starting with an empty context. The memory
keeps their thread: the first session sets up a progress log, a feature checklist and
a pointer to the start-up script; every later session reads them first and updates the
progress log before it ends. For a project NAME the three files live in
``/memories/sessions/NAME/`` (:data:`FILES`), on the shared memory, so every session,
whoever runs it and from whichever host, finds the same ones.

:class:`ProjectSessions` does memfs's part, for ``memfs agent --sessions NAME`` and for
``memfs session start|end`` (any other host, e.g. a Claude Code hook):

- ``start()`` writes the files from the templates (``memfs/agent/templates/``) that are
  absent, with the memory tool's own ``create`` (so on a mount they are store changes by
  the session's actor, and a person's file is never replaced), then takes the checkpoint
  ``session-NAME-N`` (N counts up), after the templates: ``memfs diff --since`` that
  checkpoint shows what the session itself did.
- :func:`instruction` is the text that tells the model the protocol (the system prompt
  of ``memfs agent``; what a host's start-up hook prints).
- ``progress_updated()`` tells whether the progress log changed since the session's
  checkpoint (on a plain directory, which has no history: since ``start()`` read it).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memfs.backing import Backing, store_behind
from memfs.errors import AgentError, AlreadyExists, MemfsError
from memfs.handler import MemoryHandler, strings
from memfs.store.base import Checkpoint, Store

SESSIONS_DIR = "sessions"
PROGRESS = "progress.md"
FEATURES = "features.md"
STARTUP = "startup.md"
# The order the model is told to read them in, and the templates' names.
FILES = (PROGRESS, FEATURES, STARTUP)
CHECKPOINT_PREFIX = "session-"
# A project name is one path segment that reads the same in a checkpoint name, a shell
# and a URL.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Two sessions of one project starting at the same moment both want the next number.
_NUMBER_TRIES = 5
# A progress log changes by these (a rename: a new log saved over it).
_UPDATES = frozenset({"create", "modify", "rename"})

INSTRUCTION = """\
MULTI-SESSION PROTOCOL: this work spans many sessions, and each session starts with an \
empty context. The state of the project "{project}" is kept in your memory directory, \
in {directory}/ ({session}).
1. Before anything else, read {directory}/{progress} (what was done and what is next), \
{directory}/{features} (the feature checklist: the scope of the work) and \
{directory}/{startup} (how to start the project: the start-up script). Do not explore \
or decide again what they already record.
2. If they still hold their templates, this is the first session: before any \
substantial work, fill in {features} with the task's features and point {startup} at \
the project's start-up script.
3. Work on one feature at a time. Mark a feature done ([x]) only after an end-to-end \
check shows that it works, not when its code is written.
4. Before this session ends, update {directory}/{progress}: add an entry at the top \
saying what this session completed, what is left, and what the next session should do \
first."""


def check_project(name: str) -> str:
    """``name`` if it can name a project's sessions, else AgentError saying what can."""
    if _NAME.fullmatch(name) is None:
        raise AgentError(
            f"{name!r} cannot name a project's sessions: use up to 64 letters, digits,"
            " '.', '_' or '-', starting with a letter or digit (e.g. webshop)"
        )
    return name


def template(name: str, project: str) -> str:
    """The template file ``name`` (one of :data:`FILES`) for ``project``."""
    text = resources.files("memfs.agent").joinpath("templates", name).read_text("utf-8")
    return text.replace("{project}", project)


@dataclass(frozen=True, slots=True)
class SessionStart:
    """What ``start()`` did: the files it wrote (memory paths), the checkpoint it took
    (None on a directory without history), and for such a directory the progress
    log's digest then."""

    project: str
    directory: str  # /memories/sessions/NAME
    created: tuple[str, ...]
    checkpoint: Checkpoint | None
    progress_digest: str | None = None

    @property
    def first(self) -> bool:
        """Whether this session set the project up (wrote the progress log)."""
        return f"{self.directory}/{PROGRESS}" in self.created

    @property
    def progress(self) -> str:
        return f"{self.directory}/{PROGRESS}"


def instruction(start: SessionStart, directory: str | None = None) -> str:
    """What the model is told at the start of every session of ``start.project``;
    ``directory``: where the model finds the files, for a host that reads them on the
    mount rather than through the memory tool (default: their /memories path)."""
    if start.checkpoint is not None:
        session = f"this session began at checkpoint {start.checkpoint.name}"
    else:
        session = "this directory keeps no history, so no checkpoint marks this session"
    return INSTRUCTION.format(
        project=start.project,
        directory=directory or start.directory,
        session=session,
        progress=PROGRESS,
        features=FEATURES,
        startup=STARTUP,
    )


class ProjectSessions:
    """The sessions of project ``project`` on the memory directory ``root`` (a mount, a
    directory in one, or a plain directory); ``store_url`` as for ``memfs agent``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        project: str,
        *,
        actor: str = "agent",
        store_url: str | None = None,
    ) -> None:
        self.root = Path(root)
        self.project = check_project(project)
        self.actor = actor
        self.store_url = store_url
        self.directory = f"/memories/{SESSIONS_DIR}/{project}"

    def _open(self) -> Backing | None:
        """The store behind the directory, if the directory shows one (a mount); a plain
        directory given ``store_url`` keeps its files outside that store, so it has no
        history of them either."""
        try:
            backing = store_behind(self.root, self.store_url)
        except MemfsError as exc:
            raise AgentError(f"cannot open the store behind {self.root}: {exc}") from exc
        if backing is not None and not backing.mounted:
            backing.close()
            return None
        return backing

    def _history(self) -> Backing:
        backing = self._open()
        if backing is None:
            raise AgentError(
                f"{self.root} keeps no history (it is not a memfs mount), so memfs cannot"
                " tell what a session changed"
            )
        return backing

    def _store_path(self, backing: Backing, name: str) -> str:
        return "/".join(p for p in (backing.prefix, SESSIONS_DIR, self.project, name) if p)

    def start(self) -> SessionStart:
        """Write the absent files from the templates, then take the session's
        checkpoint. Raises AgentError when a file cannot be written (the tree's caps,
        a directory in its place) or the store cannot be used."""
        if not self.root.is_dir():
            raise AgentError(f"the memory root {self.root} is not a directory")
        backing = self._open()
        try:
            handler = MemoryHandler(
                self.root,
                overwrite=False,  # a person's (or an earlier session's) file stays as it is
                secrets="allow",  # the templates are ours
                store=None if backing is None else backing.commands_store,
                store_prefix="" if backing is None else backing.prefix,
                neighbours=None if backing is None else backing.link,
                actor=self.actor,
            )
            created = []
            for name in FILES:
                path = f"{self.directory}/{name}"
                result = handler.execute(
                    {"command": "create", "path": path, "file_text": template(name, self.project)}
                )
                if not result.is_error:
                    created.append(path)
                elif result.content != strings.file_exists(path):
                    raise AgentError(f"cannot write {path} from its template: {result.content}")
            if backing is None:
                return SessionStart(
                    self.project,
                    self.directory,
                    tuple(created),
                    None,
                    self._digest(),
                )
            if backing.link is not None:
                # What people wrote through the mount before the session belongs before it.
                backing.link.settle([backing.prefix])
            checkpoint = self._checkpoint(backing.store)
            return SessionStart(self.project, self.directory, tuple(created), checkpoint)
        finally:
            if backing is not None:
                backing.close()

    def _checkpoint(self, store: Store) -> Checkpoint:
        for _ in range(_NUMBER_TRIES):
            name = f"{CHECKPOINT_PREFIX}{self.project}-{self._next_number(store)}"
            try:
                return store.set_checkpoint(name, author=self.actor)
            except AlreadyExists:
                continue  # another session took that number first
        raise AgentError(
            f"could not take a session checkpoint for {self.project}: other sessions kept"
            " taking the next number; try again"
        )

    def _next_number(self, store: Store) -> int:
        pattern = re.compile(re.escape(f"{CHECKPOINT_PREFIX}{self.project}-") + r"([0-9]+)")
        numbers = [0]
        for checkpoint in store.checkpoints():
            match = pattern.fullmatch(checkpoint.name)
            if match is not None:
                numbers.append(int(match.group(1)))
        return max(numbers) + 1

    def latest(self) -> Checkpoint | None:
        """The newest session checkpoint of the project (None: none yet); AgentError
        without history (a plain directory)."""
        backing = self._history()
        try:
            pattern = re.compile(re.escape(f"{CHECKPOINT_PREFIX}{self.project}-") + r"[0-9]+")
            found = [c for c in backing.store.checkpoints() if pattern.fullmatch(c.name)]
            return max(found, key=lambda c: c.seq, default=None)
        finally:
            backing.close()

    def _digest(self) -> str | None:
        path = self.root / SESSIONS_DIR / self.project / PROGRESS
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None

    def progress_updated(self, start: SessionStart) -> bool:
        """Whether the progress log changed since the session started: a change at its
        path after the session's checkpoint, or (no history) other content now."""
        if start.checkpoint is None:
            return self._digest() != start.progress_digest
        return self.progress_updated_since(start.checkpoint)

    def progress_updated_since(self, checkpoint: Checkpoint) -> bool:
        """Whether the progress log changed after ``checkpoint`` (AgentError without
        history: a plain directory cannot tell)."""
        backing = self._history()
        try:
            path = self._store_path(backing, PROGRESS)
            if backing.link is not None:
                # A save through the mount may still wait in its quiet period.
                backing.link.settle([path])
            return any(
                change.path == path and change.kind in _UPDATES
                for change in backing.store.changes(checkpoint.seq)
            )
        finally:
            backing.close()
