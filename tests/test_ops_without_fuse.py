"""The kernel-free tests of the mount's operations need no FUSE at all, so they run (and
are never skipped) on machines without it: here they run in a child as on such a machine
(mfusepy cannot be imported, and the suite's own check says FUSE is missing), with
``CI=true``, so that a test asking for FUSE fails rather than skips. (The PostgreSQL
cases are left to the run itself: they would start a second cluster here, and need no
FUSE either.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "tests/test_ops_writes.py",
    "tests/test_ops_namespace.py",
    "tests/test_ops_errno.py",
    "tests/test_ops_recovery.py",
]
RUN = """
import sys
sys.modules["mfusepy"] = None  # "import mfusepy" now raises ImportError, as without libfuse
from memfs import host
host.fuse_problem = lambda *_: "no FUSE on this machine"  # what the suite's check then says
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def test_the_operations_tests_pass_where_mfusepy_cannot_be_imported() -> None:
    args = [*MODULES, "-q", "-rs", "-p", "no:cacheprovider", "-k", "not postgresql"]
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        cwd=ROOT,
        env={**os.environ, "CI": "true"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert " passed" in out and "FUSE" not in out, out[-4000:]
