"""``memfs agent`` through click's CliRunner: what a person sees, the exit statuses, and
the SDK configured from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.program import command
from tests.fixtures.model_server import ModelServer, fail, memory, reply, text

# Every way the SDK could find credentials, cleared so that only the test's key counts.
CREDENTIAL_VARIABLES = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CONFIG_DIR",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_FEDERATION_RULE_ID",
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "memories"
    d.mkdir()
    return d


def _run(server: ModelServer, *args: str, key: str | None = "test", input: str = "") -> Result:
    env: dict[str, str | None] = dict.fromkeys(CREDENTIAL_VARIABLES)
    env.update({"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": server.url})
    return CliRunner().invoke(main, ["agent", *args], env=env, input=input)


def test_missing_key_is_one_line_and_status_1(model_server: ModelServer, root: Path) -> None:
    result = _run(model_server, "--root", str(root), "Hi.", key=None)
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: ANTHROPIC_API_KEY is not set; "
        "export it (export ANTHROPIC_API_KEY=...) and run again\n"
    )
    assert result.stdout == ""
    assert model_server.requests == []


def test_nothing_mounted_says_how_to_mount(
    model_server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mountpoint = tmp_path / "not-mounted"
    monkeypatch.setenv("MEMFS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MEMFS_MOUNTPOINT", str(mountpoint))
    result = _run(model_server, "Hi.")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: nothing is mounted at {mountpoint}; run `{command('mount')}` or pass --root DIR\n"
    )
    assert model_server.requests == []


def test_no_prompt_without_interactive(model_server: ModelServer, root: Path) -> None:
    result = _run(model_server, "--root", str(root))
    assert result.exit_code == 2  # a usage error, as click says them
    assert result.stderr.endswith("\nError: give a PROMPT, or use -i for an interactive session\n")
    assert result.stderr.startswith("Usage: main agent [OPTIONS] [PROMPT]\n")


def test_prints_text_and_operations(model_server: ModelServer, root: Path, tmp_path: Path) -> None:
    model_server.script(
        reply(text("Let me look."), memory("t1", "view", path="/memories")),
        reply(memory("t2", "view", path="/memories/missing.md")),
        reply(text("Nothing there yet.")),
    )
    system = tmp_path / "system.txt"
    system.write_text("Be brief.")
    transcript = tmp_path / "t.jsonl"
    result = _run(
        model_server,
        "--root",
        str(root),
        "--verbose",
        "--model",
        "claude-haiku-5-5",
        "--max-tokens",
        "321",
        "--system",
        str(system),
        "--transcript",
        str(transcript),
        "What do you remember?",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Let me look.\nNothing there yet.\n"
    assert result.stderr == ("memory view /memories ok\nmemory view /memories/missing.md error\n")
    first = model_server.requests[0].body
    assert (first["model"], first["max_tokens"], first["system"]) == (
        "claude-haiku-5-5",
        321,
        "Be brief.",
    )
    assert first["stream"] is True
    kinds = [json.loads(line)["type"] for line in transcript.read_text().splitlines()]
    assert kinds == ["session", "request", "response", "request", "response", "request", "response"]


def test_quiet_when_not_a_terminal(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(memory("t1", "view", path="/memories")), reply(text("ok")))
    result = _run(model_server, "--root", str(root), "--no-stream", "Hi.")
    assert result.exit_code == 0
    assert (result.stdout, result.stderr) == ("ok\n", "")
    assert "stream" not in model_server.requests[0].body


def test_api_failure_after_retries_is_one_line_and_status_1(
    model_server: ModelServer, root: Path
) -> None:
    model_server.script(fail(529, times=3))
    result = _run(model_server, "--root", str(root), "Hi.")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: the API is overloaded (HTTP 529: scripted failure 529) "
        "after retries; try again later\n"
    )
    assert len(model_server.requests) == 3  # the SDK's default max_retries is 2


def test_max_iterations_is_status_3(model_server: ModelServer, root: Path) -> None:
    model_server.script(
        reply(memory("t1", "view", path="/memories")),
        reply(memory("t2", "view", path="/memories")),
    )
    result = _run(model_server, "--root", str(root), "--max-iterations", "1", "Hi.")
    assert result.exit_code == 3
    assert result.stderr == (
        "Stopped after 1 model turn (--max-iterations); the last tool results "
        "were not sent; raise --max-iterations to let it finish\n"
    )
    assert len(model_server.requests) == 1


def test_interactive_chat_on_one_thread(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(text("One.")), reply(text("Two.")))
    result = _run(model_server, "--root", str(root), "-i", input="first\n\nsecond\n/exit\nthird\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "One.\nTwo.\n"
    assert [r.texts() for r in model_server.requests] == [["first"], ["second"]]
    assert model_server.requests[1].body["thread"]["type"] == "continue"


def test_context_management_flag(model_server: ModelServer, root: Path) -> None:
    model_server.script(reply(text("ok")))
    result = _run(model_server, "--root", str(root), "--context-management", "Hi.")
    assert result.exit_code == 0, result.stderr
    request = model_server.requests[0]
    assert request.body["context_management"]["edits"][0]["type"] == "clear_tool_uses_20250919"
    assert "context-management-2025-06-27" in request.betas


def test_create_overwrites_flag(model_server: ModelServer, root: Path) -> None:
    (root / "a.md").write_text("old\n")
    model_server.script(
        reply(memory("t1", "create", path="/memories/a.md", file_text="new\n")),
        reply(text("ok")),
    )
    result = _run(model_server, "--root", str(root), "--create-overwrites", "Hi.")
    assert result.exit_code == 0, result.stderr
    assert model_server.requests[1].tool_results()[0].get("is_error") is None
    assert (root / "a.md").read_text() == "new\n"
