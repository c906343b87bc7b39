"""The agent: Claude with the memory tool on a memfs tree, driven by the SDK's tool runner.

The loop itself is the SDK's (``thread.tool_runner()``, the runner behind
``client.beta.messages.tool_runner()``): it sends each request, runs the memory tool
calls and sends their results back. This module only watches it go by and adds one
thing between turns: a change notice, when someone else changed ``/memories`` while the
model was thinking. The session owns its message thread, so the notice goes in with the
thread's public ``append()`` (the runner places the tool results ahead of it) and an
interactive session continues the same server-side conversation prompt after prompt.

Own changes never show up in a notice: on a memfs mount the change feed names each
author ``"{comm} (pid {tgid})"`` and this process's pid is filtered out; on a plain
directory the snapshot is re-taken right after the agent's own tool calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
from anthropic.types.beta import BetaMessage

from memfs.agent.events import AgentEvent, Done, MessageDone, NoticeAdded, TextDelta, ToolCall
from memfs.agent.transcript import Transcript
from memfs.errors import AgentError, MemfsError
from memfs.notices import ChangeFeed, Notice, SnapshotWatcher, Watcher, format_notices
from memfs.program import command

if TYPE_CHECKING:
    from anthropic.lib.tools import BetaStreamingToolRunner, BetaToolRunner

    from memfs.backing import Backing

    Runner = BetaToolRunner[Any] | BetaStreamingToolRunner[Any]

# Claude Sonnet 5.5: the SDK's newest Sonnet (claude-sonnet-4-5 reaches end of life on
# 30 November 2026, per the SDK's deprecation table).
DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS = 4096
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
# Clears old tool results client-side as the context grows; memory results are kept,
# since they are what the model consults to stay on track.
CONTEXT_MANAGEMENT: dict[str, Any] = {
    "edits": [{"type": "clear_tool_uses_20250919", "exclude_tools": ["memory"]}]
}


def watcher_for(root: Path, store_url: str | None = None) -> Watcher:
    """The change feed of the store behind ``root`` (explicit, or from the mount's state
    record), else a snapshot watcher on the directory."""
    from memfs.mount import state
    from memfs.store import open_store

    subdir = ""
    if store_url is None:
        record = state.lookup(root)
        if record is None:
            return SnapshotWatcher(root)
        store_url = record.store_url
        rel = os.path.relpath(state.normalize(root), record.mountpoint)
        subdir = "" if rel == "." else rel
        try:
            store = open_store(store_url)
        except MemfsError:
            # Notices are a help, not the job: without the store the tree can still be watched.
            return SnapshotWatcher(root)
    else:
        try:
            store = open_store(store_url)
        except MemfsError as exc:
            raise AgentError(
                f"cannot open the store {store_url} for change notices: {exc}"
            ) from exc
    return ChangeFeed(store, root=subdir, exclude=os.getpid(), close_store=True)


def _backing(root: Path, store_url: str | None) -> Backing | None:
    """The store behind ``root``, for the tool's caps and use records (None: a plain
    directory, or a mount whose store cannot be opened: the tool works without)."""
    from memfs.backing import store_behind

    try:
        return store_behind(root, store_url)
    except MemfsError as exc:
        if store_url is not None:
            raise AgentError(f"cannot open the store {store_url}: {exc}") from exc
        return None


MISSING_KEY = "ANTHROPIC_API_KEY is not set; export it (export ANTHROPIC_API_KEY=...) and run again"


def has_credentials(client: anthropic.Anthropic) -> bool:
    """Whether the client found a way to authenticate: a key or token from the
    environment, or a credentials profile the SDK discovered."""
    return any(
        getattr(client, name, None) is not None for name in ("api_key", "auth_token", "credentials")
    )


def describe_api_error(exc: anthropic.AnthropicError) -> str:
    """One line for a person: what failed and what to do."""
    if isinstance(exc, anthropic.AuthenticationError):
        return "the API refused the key (HTTP 401); check ANTHROPIC_API_KEY"
    if isinstance(exc, anthropic.APIStatusError):
        reason = exc.api_message or exc.message
        status = exc.status_code
        if status == 529 or isinstance(exc, anthropic.RateLimitError) or status >= 500:
            what = {429: "rate limited", 529: "overloaded"}.get(status, "failing")
            return f"the API is {what} (HTTP {status}: {reason}) after retries; try again later"
        return f"the API rejected the request (HTTP {status}: {reason})"
    if isinstance(exc, anthropic.APITimeoutError):
        return "the API did not answer in time; check the network and try again"
    if isinstance(exc, anthropic.APIConnectionError):
        return "cannot reach the API; check the network or ANTHROPIC_BASE_URL"
    return f"the anthropic SDK failed: {exc}"


class AgentSession:
    """One conversation with Claude over the memory tree at ``root``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        client: anthropic.Anthropic | None = None,
        model: str = DEFAULT_MODEL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        system: str | None = None,
        max_iterations: int | None = None,
        context_management: bool | dict[str, Any] = False,
        create_overwrites: bool = False,
        secrets: str = "redact",
        stream: bool = True,
        store_url: str | None = None,
        watcher: Watcher | None = None,
        transcript: Transcript | None = None,
    ) -> None:
        from memfs import MemoryTool

        self.root = Path(root)
        if not self.root.is_dir():
            raise AgentError(
                f"the memory root {self.root} is not a directory; "
                f"run `{command('mount')}` or pass --root"
            )
        if max_iterations is not None and max_iterations < 1:
            raise AgentError(f"max_iterations must be at least 1, not {max_iterations}")
        if client is None:
            client = anthropic.Anthropic()
            if not has_credentials(client):
                # The SDK would only fail at the first request, with a TypeError.
                raise AgentError(MISSING_KEY)
        self.client = client
        self.stream = stream
        self.max_iterations = max_iterations
        self.transcript = transcript
        self.backing = _backing(self.root, store_url)
        self.tool = MemoryTool(
            self.root,
            overwrite=create_overwrites,
            secrets=secrets,
            store=None if self.backing is None else self.backing.store,
            store_prefix="" if self.backing is None else self.backing.prefix,
        )
        self.watcher = watcher if watcher is not None else watcher_for(self.root, store_url)
        self._pending: list[dict[str, Any]] = []  # new messages of the next request
        self._carried: list[Notice] = []  # seen when no next turn could carry them
        self._asked = False

        params: dict[str, Any] = {}
        if system:
            params["system"] = system
        if context_management:
            edits = CONTEXT_MANAGEMENT if context_management is True else context_management
            params["context_management"] = edits
            params["betas"] = [CONTEXT_MANAGEMENT_BETA]
        self.thread = self.client.beta.messages.thread(
            model=model,
            max_tokens=max_tokens,
            tools=[self.tool],
            # A server that cannot thread a request gets the full history instead.
            unsupported_request_behavior="continue_unthreaded",
            **params,
        )
        if transcript is not None:
            tools = [self.tool.to_dict()]
            transcript.write("session", model=model, max_tokens=max_tokens, tools=tools, **params)

    def ask(self, prompt: str) -> Iterator[AgentEvent]:
        """Send ``prompt`` and run the tool loop until the model stops; yields what happens.

        Raises AgentError (one line) when the API fails after the SDK's retries.
        """
        content: list[dict[str, Any]] = []
        notices = [*self._carried, *self.watcher.poll()]
        self._carried = []
        if self._asked and notices:
            text = format_notices(notices)
            content.append({"type": "text", "text": text})
            yield NoticeAdded(text, tuple(notices))
        self._asked = True
        content.append({"type": "text", "text": prompt})
        message = {"role": "user", "content": content}
        self.thread.append(message)
        self._pending.append(message)
        try:
            yield from self._run()
        except anthropic.AnthropicError as exc:
            line = describe_api_error(exc)
            if self.transcript is not None:
                self.transcript.write("error", error=line)
            raise AgentError(line) from exc

    def _run(self) -> Iterator[AgentEvent]:
        runner: Runner
        if self.max_iterations is None:
            runner = self.thread.tool_runner(stream=self.stream)
        else:
            runner = self.thread.tool_runner(stream=self.stream, max_iterations=self.max_iterations)
        turns = 0
        last: BetaMessage | None = None
        try:
            for item in runner:
                if self.stream:
                    for event in item:
                        if event.type == "text":
                            yield TextDelta(event.text)
                    last = item.get_final_message()
                else:
                    last = item
                    for block in last.content:
                        if block.type == "text":
                            yield TextDelta(block.text)
                turns += 1
                self._log_turn(last)
                text = "".join(b.text for b in last.content if b.type == "text")
                yield MessageDone(last.id, last.stop_reason, text)
                if last.stop_reason == "tool_use":
                    final = self.max_iterations is not None and turns >= self.max_iterations
                    yield from self._tools_and_notice(runner, last, add_notice=not final)
        finally:
            runner.close()
        reached = (
            self.max_iterations is not None
            and turns >= self.max_iterations
            and last is not None
            and last.stop_reason == "tool_use"
        )
        yield Done(last.stop_reason if last else None, turns, reached)

    def _tools_and_notice(
        self, runner: Runner, message: BetaMessage, *, add_notice: bool
    ) -> Iterator[AgentEvent]:
        # What others changed while the model thought, read before our own calls run.
        notices: list[Notice] = self.watcher.poll()
        # Runs the calls now; the runner reuses this cached response for the next request.
        response = runner.generate_tool_call_response()
        self.watcher.own_changes_done()
        if response is None:
            return
        self._pending.append(response)
        results = {r["tool_use_id"]: r for r in response["content"] if r["type"] == "tool_result"}
        for block in message.content:
            if block.type != "tool_use" or block.id not in results:
                continue
            result = results[block.id]
            content = result.get("content", "")
            if not isinstance(content, str):
                content = "".join(part.get("text", "") for part in content)
            yield ToolCall(block.id, dict(block.input), content, bool(result.get("is_error")))
        if not add_notice:
            self._carried.extend(notices)
        elif notices:
            text = format_notices(notices)
            notice = {"role": "user", "content": [{"type": "text", "text": text}]}
            # Staged on the thread; the runner puts the tool results right before it.
            self.thread.append(notice)
            self._pending.append(notice)
            yield NoticeAdded(text, tuple(notices))

    def _log_turn(self, message: BetaMessage) -> None:
        if self.transcript is not None:
            self.transcript.write("request", messages=self._pending)
            self.transcript.write("response", message=message)
        self._pending = []

    def close(self) -> None:
        self.watcher.close()
        if self.backing is not None:
            self.backing.close()
        if self.transcript is not None:
            self.transcript.close()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_agent(
    prompt: str,
    root: str | os.PathLike[str],
    *,
    client: anthropic.Anthropic | None = None,
    **options: Any,
) -> Iterator[AgentEvent]:
    """Run one prompt to completion over the memory tree at ``root``; see AgentSession
    for ``options``. A generator: nothing happens until it is iterated."""
    with AgentSession(root, client=client, **options) as session:
        yield from session.ask(prompt)
