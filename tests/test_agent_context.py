"""The agent's context options and search tool against the scripted Messages API server:
the exact context edits and beta headers on every request, memory results cleared like
others, compaction blocks kept, Claude warned before a compaction, and long sessions
that stay under a context budget where the same session without the options does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memfs.agent import (
    COMPACTION_BETA,
    CONTEXT_MANAGEMENT_BETA,
    AgentSession,
    Compacted,
    ContextOptions,
    ToolCall,
)
from memfs.agent.context import COMPACTION_INSTRUCTIONS
from memfs.agent.search_tool import DESCRIPTION, INPUT_SCHEMA
from memfs.cli import main
from tests.fixtures.model_server import CLEARED, ModelServer, memory, reply, text, tool_use

# A file whose view is about 2,500 of the scripted server's tokens.
BIG = "".join(f"line {i:04d}: the quick brown fox jumps over the lazy dog\n" for i in range(150))
TURNS = 40


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "memories"
    d.mkdir()
    (d / "big.md").write_text(BIG)
    return d


def _reading_session(server: ModelServer, turns: int = TURNS) -> None:
    """A model that views the big file over and over, then answers."""
    for i in range(turns):
        server.script(reply(memory(f"t{i}", "view", path="/memories/big.md")))
    server.script(reply(text("Done reading.")))


def _run(server: ModelServer, root: Path, **options: Any) -> list[object]:
    with AgentSession(root, client=server.client(), stream=False, **options) as session:
        return list(session.ask("Read the file many times."))


def test_clearing_sends_its_edit_and_beta_on_every_request(
    model_server: ModelServer, root: Path
) -> None:
    _reading_session(model_server, turns=2)
    _run(model_server, root, context=ContextOptions(clear=True, clear_at=5000, keep=2))
    assert len(model_server.requests) == 3
    for request in model_server.requests:
        assert request.body["context_management"] == {
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 5000},
                    "keep": {"type": "tool_uses", "value": 2},
                }
            ]
        }
        assert CONTEXT_MANAGEMENT_BETA in request.betas
        assert COMPACTION_BETA not in request.betas


def test_compaction_sends_its_edit_and_beta(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(text("ok")))
    _run(model_server, root, context=ContextOptions(compaction=True, compact_at=60_000))
    (request,) = model_server.requests
    assert request.body["context_management"] == {
        "edits": [
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 60_000},
                "instructions": COMPACTION_INSTRUCTIONS,
            }
        ]
    }
    assert COMPACTION_BETA in request.betas
    assert CONTEXT_MANAGEMENT_BETA not in request.betas


def test_without_options_nothing_is_sent(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(text("ok")))
    _run(model_server, root)
    (request,) = model_server.requests
    assert "context_management" not in request.body
    assert not {COMPACTION_BETA, CONTEXT_MANAGEMENT_BETA} & set(request.betas)
    assert [tool["name"] for tool in request.body["tools"]] == ["memory"]


def test_the_cli_options_reach_the_request(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(text("ok")))
    env = {"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": model_server.url}
    args = ["agent", "--root", str(root), "--no-stream", "--context-management"]
    args += ["--clear-at", "7000", "--keep", "1", "--compaction", "--compact-at", "90000"]
    result = CliRunner().invoke(main, [*args, "--search-tool", "Hi."], env=env)
    assert (result.exit_code, result.output) == (0, "ok\n")
    (request,) = model_server.requests
    edits = request.body["context_management"]["edits"]
    assert [e["type"] for e in edits] == ["clear_tool_uses_20250919", "compact_20260112"]
    assert edits[0]["trigger"]["value"] == 7000 and edits[0]["keep"]["value"] == 1
    assert edits[1]["trigger"]["value"] == 90000
    assert {CONTEXT_MANAGEMENT_BETA, COMPACTION_BETA} <= set(request.betas)
    assert request.body["tools"][1] == {
        "name": "memory_search",
        "description": DESCRIPTION,
        "input_schema": INPUT_SCHEMA,
    }


def test_clear_options_need_their_flag(model_server: ModelServer, root: Path) -> None:
    env = {"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": model_server.url}
    result = CliRunner().invoke(main, ["agent", "--root", str(root), "--keep", "2", "Hi"], env=env)
    assert result.exit_code == 2
    assert result.output.endswith("\nError: --clear-at and --keep need --context-management\n")
    assert model_server.requests == []


# --- long sessions against a budget ------------------------------------------------------


def test_clearing_keeps_a_long_session_under_budget(model_server: ModelServer, root: Path) -> None:
    model_server.simulate_context = True
    _reading_session(model_server)
    _run(model_server, root)
    unmanaged = max(model_server.context_tokens)

    model_server.context_tokens.clear()
    _reading_session(model_server)
    _run(model_server, root, context=ContextOptions(clear=True, clear_at=10_000, keep=2))
    managed = model_server.context_tokens
    budget = 10_000 + 3 * 2_600  # the trigger, plus what the kept results hold
    assert unmanaged > 4 * budget  # the session is long enough to need it
    assert max(managed) < budget
    # Memory results were what got cleared: the last request carries placeholders.
    last = model_server.requests[-1]
    assert last.body["context_management"]["edits"][0]["type"] == "clear_tool_uses_20250919"


def test_compaction_warns_first_keeps_its_block_and_stays_under_budget(
    model_server: ModelServer, root: Path
) -> None:
    model_server.simulate_context = True
    trigger = 20_000
    _reading_session(model_server)
    with AgentSession(
        root,
        client=model_server.client(),
        stream=False,
        context=ContextOptions(compaction=True, compact_at=trigger),
    ) as session:
        events = list(session.ask("Read the file many times."))
        thread_messages = list(session.thread.messages)
    assert model_server.compactions >= 2
    assert sum(isinstance(e, Compacted) for e in events) == model_server.compactions
    assert max(model_server.context_tokens) < trigger + 2 * 2_600
    # Claude was told before each compaction, with the tool results of the turn before.
    warned = [
        i
        for i, r in enumerate(model_server.requests)
        if any("Context note" in t for t in r.texts())
    ]
    compacted = model_server.compacted_at
    # One warning before each compaction, none between a compaction and the next one.
    assert len(warned) == len(compacted)
    assert all(w < c for w, c in zip(warned, compacted, strict=True))
    assert all(c < w for c, w in zip(compacted, warned[1:], strict=False))
    note = next(t for t in model_server.requests[warned[0]].texts() if "Context note" in t)
    assert "save in /memories whatever you will need afterwards" in note
    # The compaction blocks stay in the thread, as the API requires them sent back.
    blocks = [
        b
        for m in thread_messages
        if m["role"] == "assistant"
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if (b.get("type") if isinstance(b, dict) else b.type) == "compaction"
    ]
    assert len(blocks) == model_server.compactions


def test_streamed_compaction_blocks_are_kept(model_server: ModelServer, root: Path) -> None:
    model_server.simulate_context = True
    _reading_session(model_server, turns=12)
    with AgentSession(
        root,
        client=model_server.client(),
        context=ContextOptions(compaction=True, compact_at=15_000),
    ) as session:
        events = list(session.ask("Read."))
    assert model_server.compactions >= 1
    assert any(isinstance(e, Compacted) for e in events)


# --- the search tool -----------------------------------------------------------------------


def test_the_search_tool_answers_from_the_directory(model_server: ModelServer, root: Path) -> None:
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("# Notes\nCall Alice about parse_rel\n")
    model_server.script(
        reply(tool_use("s1", "memory_search", {"query": "parse_rel", "path": "/memories/notes"})),
        reply(tool_use("s2", "memory_search", {"query": "(", "regex": True})),
        reply(tool_use("s3", "memory_search", {"query": "x", "path": "/memories/../etc"})),
        reply(text("Found it.")),
    )
    events = _run(model_server, root, search_tool=True)
    results = [r for request in model_server.requests for r in request.tool_results()]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "s1",
        "content": "1 file in /memories/notes match 'parse_rel', best first:\n"
        "/memories/notes/a.md\n     2\tCall Alice about parse_rel",
    }
    assert results[1]["is_error"] is True
    assert results[1]["content"].startswith("Error: not a valid regular expression")
    assert results[2]["is_error"] is True
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert calls[0].summary == "memory_search 'parse_rel' in /memories/notes ok"
    assert model_server.requests[1].tool_results()[0]["content"] != CLEARED
