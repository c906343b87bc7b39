"""memfs: Claude's memory tool as a real, shared file tree.

The SDK adapter :class:`MemoryTool` (:mod:`memfs.agent.tool`: on a mount it runs the
commands on the mount's store) is imported lazily so that ``import memfs`` (and the
FUSE daemon) does not pay for the anthropic SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["MemoryHandler", "MemoryTool", "__version__"]

if TYPE_CHECKING:
    from memfs.agent.tool import MemoryTool
    from memfs.handler import MemoryHandler


def __getattr__(name: str) -> Any:
    if name == "MemoryTool":
        from memfs.agent.tool import MemoryTool

        return MemoryTool
    if name == "MemoryHandler":
        from memfs.handler import MemoryHandler

        return MemoryHandler
    raise AttributeError(f"module 'memfs' has no attribute {name!r}")
