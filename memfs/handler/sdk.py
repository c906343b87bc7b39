"""The anthropic SDK adapter: memfs's handler behind ``BetaAbstractMemoryTool``.

Pass a :class:`MemoryTool` to ``client.beta.messages.tool_runner(tools=[...])``. Every
command goes to :class:`~memfs.handler.MemoryHandler`, so the model sees exactly the
handler's strings; an error result is raised as the SDK's ``ToolError``, which the tool
runner turns into a ``tool_result`` with ``is_error: true`` and the same content.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import cast

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaFunctionToolResultType, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818Command,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from pydantic import BaseModel

from memfs.handler import MemoryHandler
from memfs.handler.storetree import Neighbours
from memfs.secrets import DEFAULT_POLICY
from memfs.store.base import Store

__all__ = ["MemoryTool"]


def _as_input(command: object) -> object:
    """The command as the model sent it, for the handler to validate.

    ``exclude_unset`` keeps exactly the keys the model sent: an omitted ``new_str`` stays
    omitted (a deletion) rather than becoming ``None`` or a default, and the handler,
    not this adapter, decides what an explicit ``null`` means.
    Serializer warnings are off because a constructed model may hold mistyped values,
    which the handler reports to the model itself.
    """
    if isinstance(command, BaseModel):
        return command.model_dump(exclude_unset=True, warnings=False)
    return command


class MemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool (``memory_20250818``) on a memfs tree at ``root``.

    ``secrets``: the handler's policy for credentials in written text (``"redact"``,
    ``"refuse"`` or ``"allow"``; see :class:`~memfs.handler.MemoryHandler`).
    """

    def __init__(
        self,
        root: str | PathLike[str],
        *,
        overwrite: bool = False,
        max_file_bytes: int = 100 * 1024,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        secrets: str = DEFAULT_POLICY,
        store: Store | None = None,
        store_prefix: str = "",
        neighbours: Neighbours | None = None,
        actor: str = "model",
    ) -> None:
        super().__init__(cache_control=cache_control)
        # With the store ``root`` shows (memfs.backing.store_behind finds a mount's), the
        # commands are transactions on it, the model hears the tree caps with numbers and
        # its file views count as use; ``actor`` names who made every change.
        self.handler = MemoryHandler(
            root,
            overwrite=overwrite,
            max_file_bytes=max_file_bytes,
            secrets=secrets,
            store=store,
            store_prefix=store_prefix,
            neighbours=neighbours,
            actor=actor,
        )

    def _run(self, command: object) -> BetaFunctionToolResultType:
        # The handler checks the input's shape itself and never raises, so a non-object
        # input reaches it as is and comes back as its error string.
        result = self.handler.execute(command)
        # The handler's blocks are image blocks in the API's own shape (commands.py builds
        # them as plain dicts: the handler does not depend on the SDK).
        content = cast(BetaFunctionToolResultType, result.content)
        if result.is_error:
            raise ToolError(content)
        return content

    def call(self, input: object) -> BetaFunctionToolResultType:
        # The base class would first build an SDK model with construct_type_unchecked,
        # which silently coerces ("3" -> 3), loses non-object input and sends an unknown
        # command to NotImplementedError. The raw input goes to the handler instead.
        if isinstance(input, Mapping):
            return self._run(dict(input))
        return self._run(input)

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))

    def str_replace(
        self, command: BetaMemoryTool20250818StrReplaceCommand
    ) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        return self._run(_as_input(command))
