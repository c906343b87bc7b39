"""Smoke test of scripts/bench_handler.py, so the benchmark keeps running as the handler
changes. It checks the script's own invariants (both handlers error-free, same final
tree), never the timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_handler.py"


def test_bench_runs_a_tiny_workload_and_both_handlers_agree(tmp_path: Path) -> None:
    args = ["--ops", "60", "--files", "20", "--dirs", "4", "--repeat", "2"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["same_final_tree"] is True
    for name in ("memfs", "sdk"):
        handler = result["handlers"][name]
        assert handler["errors"] == 0
        assert len(handler["runs_s"]) == 2
        assert handler["fsyncs_per_op"]["view_file"] == 0
    assert set(result["ratio_memfs_over_sdk"]) == {"setup", "mixed", "total"}
    assert list(tmp_path.iterdir()) == []  # every temporary tree removed


def test_bench_refuses_bad_options(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--ops", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "must be at least 1" in done.stderr
