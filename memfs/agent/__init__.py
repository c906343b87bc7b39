"""The memfs agent: Claude with the memory tool on a shared tree, plus change notices.

``run_agent(prompt, root)`` yields :mod:`memfs.agent.events` as the SDK's tool runner
works; :class:`AgentSession` keeps one conversation across prompts (``memfs agent -i``).
"""

from __future__ import annotations

from memfs.agent.context import (
    COMPACTION_BETA,
    CONTEXT_MANAGEMENT_BETA,
    ContextOptions,
)
from memfs.agent.events import (
    AgentEvent,
    Compacted,
    Done,
    MessageDone,
    NoticeAdded,
    TextDelta,
    ToolCall,
)
from memfs.agent.loop import (
    CONTEXT_MANAGEMENT,
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
    "COMPACTION_BETA",
    "CONTEXT_MANAGEMENT",
    "CONTEXT_MANAGEMENT_BETA",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "MISSING_KEY",
    "AgentEvent",
    "AgentSession",
    "Compacted",
    "ContextOptions",
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
