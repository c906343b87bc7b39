"""The ``--transcript`` file: the whole exchange as JSON lines.

Line types: ``session`` (the request fields, once), ``request`` (the messages a request
added to the conversation: the prompt, or tool results and a change notice), ``response``
(the model's message as received) and ``error`` (why the run stopped). Requests carry
only their new messages, as message threads send them; the session line plus every
request and response rebuild the whole conversation.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel


def jsonable(value: object) -> Any:
    """``value`` with SDK models dumped as the API sends them, for ``json.dumps``."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)  # e.g. a tool object: what it is matters, not its state


class Transcript:
    """Appends one JSON object per line and flushes, so a crash loses nothing written."""

    def __init__(self, target: str | Path | TextIO) -> None:
        if isinstance(target, (str, Path)):
            self._file: TextIO = open(target, "w", encoding="utf-8")  # noqa: SIM115
            self._owned = True
        else:
            self._file = target
            self._owned = False

    def write(self, kind: str, **fields: object) -> None:
        line = {"type": kind, "time": round(time.time(), 3), **jsonable(fields)}
        self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._owned:
            self._file.close()
