"""The tool-runner example of the documentation (docs/memory-tool.md, moved there from
the README) runs as printed, against the scripted model, with
the SDK configured only from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures.model_server import ModelServer, memory, reply, text

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- example: tool-runner -->"
PAGE = REPO / "docs" / "memory-tool.md"


def example_code() -> tuple[Path, str]:
    """The first ```python block after the marker line on the page."""
    lines = [line.strip() for line in PAGE.read_text(encoding="utf-8").splitlines()]
    assert MARKER in lines, f"{PAGE.name} has no {MARKER} line before the example"
    rest = lines[lines.index(MARKER) + 1 :]
    raw = PAGE.read_text(encoding="utf-8").splitlines()[lines.index(MARKER) + 1 :]
    opening = rest.index("```python")
    closing = next(i for i, line in enumerate(rest) if i > opening and line == "```")
    return PAGE, "\n".join(raw[opening + 1 : closing]) + "\n"


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
