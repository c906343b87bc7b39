"""The agent loop against the scripted model: the real SDK client and tool runner, a real
memory directory, and assertions on exactly what the SDK sent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memfs.agent import (
    CONTEXT_MANAGEMENT,
    CONTEXT_MANAGEMENT_BETA,
    MISSING_KEY,
    AgentSession,
    Done,
    MessageDone,
    NoticeAdded,
    TextDelta,
    ToolCall,
    Transcript,
    run_agent,
)
from memfs.errors import AgentError
from memfs.program import command
from tests.fixtures.model_server import ModelServer, fail, memory, reply, text

VIEW_EMPTY = (
    "Here're the files and directories up to 2 levels deep in /memories, "
    "excluding hidden items and node_modules:\n4.0K\t/memories"
)
EDITED = (
    "The memory file has been edited. Here is the snippet showing the change "
    "(with line numbers):\n     1\t# Notes\n     2\t- oat milk"
)
NOT_FOUND = (
    "No replacement was performed, old_str `- eggs` did not appear verbatim in /memories/notes.md."
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "memories"
    d.mkdir()
    return d


def _session_script(server: ModelServer) -> None:
    server.script(
        reply(text("Let me look at my memory."), memory("t1", "view", path="/memories")),
        reply(memory("t2", "create", path="/memories/notes.md", file_text="# Notes\n- milk\n")),
        reply(
            memory(
                "t3",
                "str_replace",
                path="/memories/notes.md",
                old_str="- milk",
                new_str="- oat milk",
            ),
            memory(
                "t4", "str_replace", path="/memories/notes.md", old_str="- eggs", new_str="- bread"
            ),
        ),
        reply(text("Noted: oat milk.")),
    )


def _result(tool_use_id: str, content: str, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_session_sends_exact_tool_results(
    model_server: ModelServer, root: Path, stream: bool
) -> None:
    _session_script(model_server)
    events = list(
        run_agent("Remember oat milk.", root, client=model_server.client(), stream=stream)
    )

    requests = model_server.requests
    assert len(requests) == 4
    first = requests[0].body
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Remember oat milk."}]}
    ]
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert first["model"] == "claude-sonnet-5-5"
    assert first.get("stream", False) is stream
    assert requests[1].tool_results() == [_result("t1", VIEW_EMPTY)]
    assert requests[2].tool_results() == [
        _result("t2", "File created successfully at: /memories/notes.md")
    ]
    assert requests[3].tool_results() == [
        _result("t3", EDITED),
        _result("t4", NOT_FOUND, is_error=True),
    ]
    # Each later request continues the thread with only its new messages, and the
    # agent's own edits never come back as a change notice.
    for i, request in enumerate(requests[1:], start=1):
        assert request.body["thread"] == {
            "type": "continue",
            "previous_message_id": f"msg_scripted_{i:03d}",
        }
        assert request.texts() == []
        assert [m["role"] for m in request.messages] == ["user"]
    assert (root / "notes.md").read_text() == "# Notes\n- oat milk\n"

    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.summary for c in calls] == [
        "memory view /memories ok",
        "memory create /memories/notes.md ok",
        "memory str_replace /memories/notes.md ok",
        "memory str_replace /memories/notes.md error",
    ]
    assert calls[3].content == NOT_FOUND
    said = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert said == "Let me look at my memory.Noted: oat milk."
    assert sum(isinstance(e, MessageDone) for e in events) == 4
    assert not any(isinstance(e, NoticeAdded) for e in events)
    assert events[-1] == Done("end_turn", 4, False)


def test_transcript_holds_every_request_and_response(
    model_server: ModelServer, root: Path, tmp_path: Path
) -> None:
    _session_script(model_server)
    path = tmp_path / "transcript.jsonl"
    list(
        run_agent(
            "Remember oat milk.",
            root,
            client=model_server.client(),
            system="Be brief.",
            transcript=Transcript(path),
        )
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["session"] + ["request", "response"] * 4
    session = lines[0]
    assert session["model"] == "claude-sonnet-5-5"
    assert session["system"] == "Be brief."
    assert session["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    # Each request line is what that request added; it matches what the server got.
    for i, request in enumerate(model_server.requests):
        assert lines[1 + 2 * i]["messages"] == request.messages
        response = lines[2 + 2 * i]["message"]
        assert response["id"] == f"msg_scripted_{i + 1:03d}"
        assert response["role"] == "assistant"
    assert lines[-1]["message"]["content"] == [{"type": "text", "text": "Noted: oat milk."}]
    assert lines[-1]["message"]["stop_reason"] == "end_turn"


def test_max_iterations_stops_and_says_so(model_server: ModelServer, root: Path) -> None:
    model_server.script(
        reply(memory("t1", "view", path="/memories")),
        reply(memory("t2", "create", path="/memories/a.md", file_text="a\n")),
        reply(memory("t3", "view", path="/memories")),
    )
    events = list(run_agent("Go.", root, client=model_server.client(), max_iterations=2))
    assert len(model_server.requests) == 2
    assert model_server.remaining == 1
    assert events[-1] == Done("tool_use", 2, True)
    # The last turn's calls ran (the runner runs them) even though no turn reads them.
    assert (root / "a.md").read_text() == "a\n"


def test_overloaded_is_retried_then_succeeds(model_server: ModelServer, root: Path) -> None:
    model_server.script(
        fail(529),
        fail(429, retry_after="0.01", retry_after_ms=None),
        fail(500),
        reply(text("Hello.")),
    )
    events = list(run_agent("Hi.", root, client=model_server.client(max_retries=3)))
    assert [r.body["messages"] for r in model_server.requests] == [
        [{"role": "user", "content": [{"type": "text", "text": "Hi."}]}]
    ] * 4
    assert events[-1] == Done("end_turn", 1, False)


def test_always_overloaded_is_one_agent_error(model_server: ModelServer, root: Path) -> None:
    model_server.script(fail(529, times=3))
    with pytest.raises(AgentError) as caught:
        list(run_agent("Hi.", root, client=model_server.client(max_retries=2)))
    assert str(caught.value) == (
        "the API is overloaded (HTTP 529: scripted failure 529) after retries; try again later"
    )
    assert len(model_server.requests) == 3


def test_context_management_is_sent_with_its_beta(model_server: ModelServer, root: Path) -> None:
    model_server.script(
        reply(memory("t1", "view", path="/memories")),
        reply(text("ok")),
    )
    list(run_agent("Hi.", root, client=model_server.client(), context_management=True))
    first, second = model_server.requests
    assert first.body["context_management"] == CONTEXT_MANAGEMENT
    # Memory results are cleared like any other: the model can read the files again.
    assert first.body["context_management"] == {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 100_000},
                "keep": {"type": "tool_uses", "value": 3},
            }
        ]
    }
    for request in (first, second):
        assert CONTEXT_MANAGEMENT_BETA in request.betas
        assert "context_management" in request.body
    # Without the flag, neither goes out.
    model_server.script(reply(text("ok")))
    list(run_agent("Hi.", root, client=model_server.client()))
    assert "context_management" not in model_server.requests[-1].body
    assert CONTEXT_MANAGEMENT_BETA not in model_server.requests[-1].betas


def test_one_session_keeps_one_thread_across_prompts(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(text("One.")), reply(text("Two.")))
    with AgentSession(root, client=model_server.client(), stream=False) as session:
        list(session.ask("first"))
        list(session.ask("second"))
    second = model_server.requests[1].body
    assert second["thread"] == {"type": "continue", "previous_message_id": "msg_scripted_001"}
    assert second["messages"] == [{"role": "user", "content": [{"type": "text", "text": "second"}]}]


def test_a_root_that_is_not_a_directory_is_refused(
    model_server: ModelServer, tmp_path: Path
) -> None:
    expected = f"is not a directory; run `{command('mount')}` or pass --root"
    with pytest.raises(AgentError, match=re.escape(expected)):
        AgentSession(tmp_path / "missing", client=model_server.client())
    assert model_server.requests == []


def test_no_key_is_an_agent_error_before_any_request(
    model_server: ModelServer, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    with pytest.raises(AgentError) as caught:
        AgentSession(root)
    assert str(caught.value) == MISSING_KEY
    assert model_server.requests == []
