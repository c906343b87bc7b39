"""The README's tool-runner example runs as printed, against the scripted model, with
the SDK configured only from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures.model_server import ModelServer, memory, reply, text

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- example: tool-runner -->"
# README.md once the agent section is merged into it; until then the section's own page.
SOURCES = (REPO / "README.md", REPO / "docs" / "agent.md")


def example_code() -> tuple[Path, str]:
    """The first ```python block after the marker line, from the first file that has it."""
    for source in SOURCES:
        if not source.exists():
            continue
        lines = source.read_text(encoding="utf-8").splitlines()
        if MARKER not in (line.strip() for line in lines):
            continue
        start = [line.strip() for line in lines].index(MARKER)
        rest = lines[start + 1 :]
        opening = next(i for i, line in enumerate(rest) if line.strip() == "```python")
        closing = next(i for i, line in enumerate(rest) if i > opening and line.strip() == "```")
        return source, "\n".join(rest[opening + 1 : closing]) + "\n"
    raise AssertionError(f"no {MARKER} section in {', '.join(str(s) for s in SOURCES)}")


def test_example_is_short() -> None:
    _, code = example_code()
    assert len([line for line in code.splitlines() if line.strip()]) <= 12


def test_example_runs_against_the_scripted_model(model_server: ModelServer, tmp_path: Path) -> None:
    source, code = example_code()
    model_server.script(
        reply(memory("t1", "view", path="/memories")),
        reply(
            memory(
                "t2",
                "create",
                path="/memories/preferences.md",
                file_text="- Coffee: black\n",
            )
        ),
        reply(text("Noted: black coffee.")),
    )
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test",
        "ANTHROPIC_BASE_URL": model_server.url,
        "PYTHONPATH": str(REPO),
    }
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{source}: {done.stderr}"
    assert done.stdout == "Noted: black coffee.\n"
    assert (tmp_path / "memories" / "preferences.md").read_text() == "- Coffee: black\n"
    assert model_server.requests[2].tool_results() == [
        {
            "type": "tool_result",
            "tool_use_id": "t2",
            "content": "File created successfully at: /memories/preferences.md",
        }
    ]
