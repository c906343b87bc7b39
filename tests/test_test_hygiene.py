"""The suite's own rules: CI's Hypothesis profile is deterministic, and there is one
wait_for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ci_runs_hypothesis_derandomized() -> None:
    probe = (
        "import tests.conftest\n"
        "from hypothesis import settings\n"
        "print(settings.default.derandomize)\n"
    )
    for ci, expected in (("true", "True"), (None, "False")):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("HYPOTHESIS_PROFILE", None)
        env.pop("CI", None)
        if ci is not None:
            env["CI"] = ci
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected, (ci, done.stdout)


def test_there_is_one_wait_for() -> None:
    defined = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tests").rglob("*.py"))
        if "\ndef wait_for(" in path.read_text(encoding="utf-8")
    ]
    # test_mount_ops.py's adapter calls the shared one and also says how long it took.
    assert defined == ["tests/fixtures/waiting.py", "tests/test_mount_ops.py"]


def test_make_test_names_the_slowest_tests() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "$(BIN)/pytest --durations=25" in makefile
