"""Who the history commands say made their changes: ``memfs <command> (user NAME)``."""

from __future__ import annotations

import getpass

from memfs.store.base import Act


def user_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (a bare container)
        import os

        return str(os.getuid())


def author_for(command: str, user: str | None = None) -> str:
    """The author of a change made by ``memfs <command>`` on behalf of ``user``."""
    return f"memfs {command} (user {user or user_name()})"


def act_for(command: str, user: str | None = None, detail: str = "") -> Act:
    """The operation a ``memfs <command>`` run is: one, by its author, named for it."""
    return Act(author_for(command, user), detail=detail, label=f"memfs {command}", command=command)
