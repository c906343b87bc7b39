"""The memfs agent: Claude with the memory tool on a shared tree, plus change notices.

``run_agent(prompt, root)`` yields :mod:`memfs.agent.events` as the SDK's tool runner
works; :class:`AgentSession` keeps one conversation across prompts (``memfs agent -i``).
"""

from __future__ import annotations

from memfs.agent.events import AgentEvent, Done, MessageDone, NoticeAdded, TextDelta, ToolCall
from memfs.agent.loop import (
    CONTEXT_MANAGEMENT,
    CONTEXT_MANAGEMENT_BETA,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    MISSING_KEY,
    AgentSession,
    describe_api_error,
    has_credentials,
    run_agent,
    watcher_for,
)
from memfs.agent.transcript import Transcript

__all__ = [
    "CONTEXT_MANAGEMENT",
    "CONTEXT_MANAGEMENT_BETA",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "MISSING_KEY",
    "AgentEvent",
    "AgentSession",
    "Done",
    "MessageDone",
    "NoticeAdded",
    "TextDelta",
    "ToolCall",
    "Transcript",
    "describe_api_error",
    "has_credentials",
    "run_agent",
    "watcher_for",
]
