"""Smoke test of scripts/bench_mcp.py, so the benchmark keeps running as the server
changes: every door answers every command without an error. Never the timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_mcp.py"


def test_bench_runs_a_tiny_round_through_every_door(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--ops",
            "20",
            "--rounds",
            "1",
            "--dir",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result["median_us"]) == {"tool", "mcp_stdio", "mcp_http"}
    for door in result["median_us"].values():
        assert set(door) == {"view", "str_replace"} and all(v > 0 for v in door.values())
    assert set(result["ratio_to_tool"]) == {"mcp_stdio", "mcp_http"}
