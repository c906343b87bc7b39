"""What the agent loop reports while it runs; the CLI decides how each one is shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memfs.notices import Notice


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the assistant's text, as it arrives (a whole block when not streaming)."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageDone:
    """One model turn finished."""

    message_id: str
    stop_reason: str | None
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One memory command the model asked for, and the result it gets back."""

    tool_use_id: str
    input: dict[str, Any]
    content: str
    is_error: bool
    tool: str = "memory"

    @property
    def command(self) -> str:
        value = self.input.get("command")
        return value if isinstance(value, str) else "?"

    @property
    def path(self) -> str:
        for key in ("path", "old_path"):
            value = self.input.get(key)
            if isinstance(value, str):
                return value
        return ""

    @property
    def summary(self) -> str:
        """``memory view /memories ok``: one compact line for a person."""
        if self.tool != "memory":
            query = self.input.get("query")
            shown = repr(query) if isinstance(query, str) else ""
            where = self.path
            parts = [
                self.tool,
                shown,
                f"in {where}" if where else "",
                "error" if self.is_error else "ok",
            ]
            return " ".join(part for part in parts if part)
        target = self.path
        if self.command == "rename" and isinstance(self.input.get("new_path"), str):
            target = f"{target} -> {self.input['new_path']}"
        parts = ["memory", self.command, target, "error" if self.is_error else "ok"]
        return " ".join(part for part in parts if part)


@dataclass(frozen=True, slots=True)
class NoticeAdded:
    """A change notice was added to the conversation before the next model turn."""

    text: str
    notices: tuple[Notice, ...]


@dataclass(frozen=True, slots=True)
class Done:
    """The tool runner finished this prompt."""

    stop_reason: str | None
    turns: int
    max_iterations_reached: bool = False


@dataclass(frozen=True, slots=True)
class Compacted:
    """The API summarised the conversation (a ``compaction`` block opened the reply)."""

    summary_chars: int


AgentEvent = TextDelta | MessageDone | ToolCall | NoticeAdded | Compacted | Done
