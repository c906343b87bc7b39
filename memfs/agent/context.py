"""The agent's context options: which context edits the API applies, and their betas.

- Clearing (``--context-management``): the ``clear_tool_uses_20250919`` edit replaces
  old tool results with a placeholder once the prompt passes ``clear_at`` input tokens,
  keeping the newest ``keep`` tool uses. Memory results are cleared too: the files are
  still there, and the model reads again what it needs (the memory tool's purpose).
- Compaction (``--compaction``): the ``compact_20260112`` edit has the server summarise
  the conversation once the prompt passes ``compact_at`` tokens; the reply then starts
  with a ``compaction`` block, which the thread keeps and sends back (the server drops
  what it summarises). Before that happens the loop tells Claude, once, to save in
  memory what it needs (:func:`compaction_warning`), and the summary instructions
  point at the memory too.

Both are sent on every request of the session, with their beta headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from anthropic.types.beta import (
    BetaClearToolUses20250919EditParam,
    BetaCompact20260112EditParam,
    BetaContextManagementConfigParam,
)

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACTION_BETA = "compact-2026-01-12"
DEFAULT_CLEAR_AT = 100_000
DEFAULT_KEEP = 3
DEFAULT_COMPACT_AT = 150_000  # the API's own default trigger
# Warn when a prompt is this share of the way to the compaction trigger: one more turn
# with a few large tool results can cross it.
WARN_AT = 0.8

COMPACTION_INSTRUCTIONS = (
    "Summarize the conversation so far so that you can continue the task from the summary"
    " alone: the goal, what is done, what is left, decisions made and why. Your memory"
    " directory /memories is not part of the conversation and survives this summary: name"
    " the memory files that hold the task's state instead of repeating their content."
)


@dataclass(frozen=True, slots=True)
class ContextOptions:
    """What ``memfs agent`` was asked for; ``None`` fields take the defaults above."""

    clear: bool = False
    clear_at: int | None = None
    keep: int | None = None
    compaction: bool = False
    compact_at: int | None = None

    @property
    def compaction_trigger(self) -> int:
        return self.compact_at or DEFAULT_COMPACT_AT

    def edits(self) -> BetaContextManagementConfigParam | None:
        """The request's ``context_management``, or None when nothing is on."""
        edits: list[BetaClearToolUses20250919EditParam | BetaCompact20260112EditParam] = []
        if self.clear:
            edits.append(
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": self.clear_at or DEFAULT_CLEAR_AT},
                    "keep": {
                        "type": "tool_uses",
                        "value": DEFAULT_KEEP if self.keep is None else self.keep,
                    },
                }
            )
        if self.compaction:
            edits.append(
                {
                    "type": "compact_20260112",
                    "trigger": {"type": "input_tokens", "value": self.compaction_trigger},
                    "instructions": COMPACTION_INSTRUCTIONS,
                }
            )
        return {"edits": edits} if edits else None


def betas_for(config: Mapping[str, Any]) -> list[str]:
    """The beta headers a ``context_management`` value needs: compaction's own for the
    ``compact_*`` edits, context management's for the clearing ones."""
    kinds = [str(edit.get("type", "")) for edit in config.get("edits", [])]
    betas = []
    if any(not kind.startswith("compact_") for kind in kinds):
        betas.append(CONTEXT_MANAGEMENT_BETA)
    if any(kind.startswith("compact_") for kind in kinds):
        betas.append(COMPACTION_BETA)
    return betas


def compaction_warning(input_tokens: int, trigger: int) -> str:
    """The note that goes to Claude with the next tool results when ``input_tokens``
    came near the compaction ``trigger``."""
    return (
        f"Context note: this conversation is at about {input_tokens:,} of the {trigger:,}"
        " input tokens at which it will be summarized and its older turns dropped. Before"
        " you go on, save in /memories whatever you will need afterwards: progress, open"
        " tasks, decisions, and where things are."
    )
