"""``memfs.MemoryTool``: the SDK's memory tool for your own program, on a mount's store.

:class:`memfs.handler.sdk.MemoryTool` runs the commands on whatever it is given: a
directory, or a store. This one finds out by itself: on a memfs mount (or a directory
inside one) it opens the mount's store and runs every command on it as a transaction,
so two programs on two mounts never lose one another's edits; on a plain directory it
works on the files. ``actor`` names who made the changes in the store's history.
"""

from __future__ import annotations

from os import PathLike

from anthropic.types.beta import BetaCacheControlEphemeralParam

from memfs.backing import Backing, store_behind
from memfs.handler import sdk
from memfs.secrets import DEFAULT_POLICY


class MemoryTool(sdk.MemoryTool):
    """Claude's memory tool (``memory_20250818``) on the memfs tree at ``root``.

    ``store_url``: the store ``root`` shows, when it is not found from a mount's record
    (a plain directory given a store only takes its caps from it). Close the tool (or use
    it as a context manager) to close the store it opened; the process ending does too.
    """

    def __init__(
        self,
        root: str | PathLike[str],
        *,
        overwrite: bool = False,
        max_file_bytes: int = 100 * 1024,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        secrets: str = DEFAULT_POLICY,
        actor: str = "model",
        store_url: str | None = None,
    ) -> None:
        self.backing: Backing | None = store_behind(root, store_url)
        backing = self.backing
        try:
            super().__init__(
                root,
                overwrite=overwrite,
                max_file_bytes=max_file_bytes,
                cache_control=cache_control,
                secrets=secrets,
                store=None if backing is None else backing.commands_store,
                store_prefix="" if backing is None else backing.prefix,
                neighbours=None if backing is None else backing.link,
                actor=actor,
            )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the store this tool opened (it works no more on a mount after this)."""
        backing, self.backing = self.backing, None
        if backing is not None:
            backing.close()

    def __enter__(self) -> MemoryTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
