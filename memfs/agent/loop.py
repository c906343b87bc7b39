"""The agent: Claude with the memory tool on a memfs tree, driven by the SDK's tool runner.

The loop itself is the SDK's (``thread.tool_runner()``, the runner behind
``client.beta.messages.tool_runner()``): it sends each request, runs the memory tool
calls and sends their results back. This module only watches it go by and adds one
thing between turns: a change notice, when someone else changed ``/memories`` while the
model was thinking. The session owns its message thread, so the notice goes in with the
thread's public ``append()`` (the runner places the tool results ahead of it) and an
interactive session continues the same server-side conversation prompt after prompt.

Own changes never show up in a notice: on a memfs mount the notices are the store's
operations (one line each, :mod:`memfs.notices`), and the agent's own are left out by the
feed numbers its handler made (and, for writes through the mount, by this process's id,
which the mount keeps as the operation's detail); on a plain directory the snapshot is
re-taken right after the agent's own tool calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anthropic
from anthropic.lib.streaming import BetaMessageStream
from anthropic.types.beta import (
    BetaMessage,
    BetaTextBlockParam,
    BetaToolResultBlockParam,
    BetaUserMessageParam,
)
from anthropic.types.beta.beta_tool_result_block_param import Content as ToolResultContent

from memfs.agent.context import WARN_AT, ContextOptions, betas_for, compaction_warning
from memfs.agent.events import (
    AgentEvent,
    Compacted,
    Done,
    MessageDone,
    NoticeAdded,
    TextDelta,
    ToolCall,
)
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
# What context_management=True sends: old tool results cleared, memory results too.
CONTEXT_MANAGEMENT: dict[str, Any] = dict(ContextOptions(clear=True).edits() or {})


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
        context: ContextOptions | None = None,
        search_tool: bool = False,
        create_overwrites: bool = False,
        secrets: str = "redact",
        stream: bool = True,
        store_url: str | None = None,
        watcher: Watcher | None = None,
        transcript: Transcript | None = None,
        actor: str = "agent",
    ) -> None:
        from memfs.handler.sdk import MemoryTool

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
        backing = self.backing
        self.tool = MemoryTool(
            self.root,
            overwrite=create_overwrites,
            secrets=secrets,
            store=None if backing is None else backing.commands_store,
            store_prefix="" if backing is None else backing.prefix,
            neighbours=None if backing is None else backing.link,
            actor=actor,
        )
        tools: list[Any] = [self.tool]
        self._close_search = None
        if search_tool:
            from memfs.agent.search_tool import SearchTool, searcher_for

            try:
                search, self._close_search = searcher_for(self.root, store_url)
            except MemfsError as exc:
                raise AgentError(f"cannot search the memory at {self.root}: {exc}") from exc
            tools.append(SearchTool(search))
        self.watcher = watcher if watcher is not None else watcher_for(self.root, store_url)
        if isinstance(self.watcher, ChangeFeed):
            # The handler writes the store itself: its changes are the agent's own.
            self.watcher.own_seqs = lambda: self.tool.handler.own_seqs
        if context is None:
            context = ContextOptions(clear=context_management is True)
        self.context = context
        self._input_tokens = 0  # of the last reply: how full the context is
        self._warned = False  # told Claude that a compaction is near, since the last one
        self._pending: list[BetaUserMessageParam] = []  # new messages of the next request
        self._carried: list[Notice] = []  # seen when no next turn could carry them
        self._asked = False

        params: dict[str, Any] = {}
        if system:
            params["system"] = system
        edits = context_management if isinstance(context_management, dict) else context.edits()
        if edits:
            params["context_management"] = edits
            params["betas"] = betas_for(edits)
        self.thread = self.client.beta.messages.thread(
            model=model,
            max_tokens=max_tokens,
            tools=tools,
            # A server that cannot thread a request gets the full history instead.
            unsupported_request_behavior="continue_unthreaded",
            **params,
        )
        if transcript is not None:
            shown = [tool.to_dict() for tool in tools]
            transcript.write("session", model=model, max_tokens=max_tokens, tools=shown, **params)

    def ask(self, prompt: str) -> Iterator[AgentEvent]:
        """Send ``prompt`` and run the tool loop until the model stops; yields what happens.

        Raises AgentError (one line) when the API fails after the SDK's retries.
        """
        content: list[BetaTextBlockParam] = []
        notices = [*self._carried, *self.watcher.poll()]
        self._carried = []
        if self._asked and notices:
            text = format_notices(notices)
            content.append({"type": "text", "text": text})
            yield NoticeAdded(text, tuple(notices))
        self._asked = True
        content.append({"type": "text", "text": prompt})
        message: BetaUserMessageParam = {"role": "user", "content": content}
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
                if isinstance(item, BetaMessageStream):
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
                yield from self._watch_context(last)
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

    def _watch_context(self, message: BetaMessage) -> Iterator[AgentEvent]:
        usage = message.usage
        self._input_tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        for block in message.content:
            if block.type == "compaction":
                # The usage counted what was summarised; what remains is the summary.
                self._input_tokens = 0
                self._warned = False  # a fresh start: the next approach is warned again
                yield Compacted(len(block.content or ""))

    def _context_note(self) -> str:
        """The compaction warning, once per approach to the trigger; else empty."""
        if not self.context.compaction or self._warned:
            return ""
        trigger = self.context.compaction_trigger
        if self._input_tokens < WARN_AT * trigger:
            return ""
        self._warned = True
        return compaction_warning(self._input_tokens, trigger)

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
        results = _tool_results(response)
        for block in message.content:
            if block.type != "tool_use" or block.id not in results:
                continue
            result = results[block.id]
            body = result.get("content", "")
            content = body if isinstance(body, str) else _text_of(body)
            error = bool(result.get("is_error"))
            yield ToolCall(block.id, dict(block.input), content, error, block.name)
        note = self._context_note() if add_notice else ""
        if not add_notice:
            self._carried.extend(notices)
        if note or (add_notice and notices):
            parts = [format_notices(notices)] if notices and add_notice else []
            text = "\n\n".join([*parts, note] if note else parts)
            notice: BetaUserMessageParam = {
                "role": "user",
                "content": [{"type": "text", "text": text}],
            }
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
        if self._close_search is not None:
            self._close_search()
        if self.backing is not None:
            self.backing.close()
        if self.transcript is not None:
            self.transcript.close()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tool_results(response: BetaUserMessageParam) -> dict[str, BetaToolResultBlockParam]:
    """The tool results of the runner's response, by the id of the call they answer."""
    body = response["content"]
    found: dict[str, BetaToolResultBlockParam] = {}
    for part in () if isinstance(body, str) else body:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            # A dict of type tool_result is one; mypy cannot narrow a TypedDict union by a key.
            result = cast(BetaToolResultBlockParam, part)
            found[result["tool_use_id"]] = result
    return found


def _text_of(parts: Iterable[ToolResultContent]) -> str:
    """The text of a tool result given as blocks (images and the like have none)."""
    return "".join(part["text"] for part in parts if part["type"] == "text")


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
