"""Shared pytest configuration. Fixture families live in tests/fixtures/, one module each."""

import os

import pytest
from hypothesis import settings

# CI runs each property on the same examples every time (derandomize), so a red build is
# reproducible and never a roll of the dice; a developer's run explores new examples.
# HYPOTHESIS_PROFILE=ci picks it locally too.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", parent=settings.get_profile("default"))
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev")
)

pytest_plugins = [
    "tests.fixtures.disks",
    "tests.fixtures.mount",
    "tests.fixtures.ops",
    "tests.fixtures.model_server",
    "tests.fixtures.sync",
    "tests.fixtures.bad_stores",
    "tests.fixtures.postgres",
    "tests.fixtures.clock",
    "tests.fixtures.mcp",
    "tests.fixtures.web",
    "tests.fixtures.webdav",
    "tests.fixtures.claude_code",
    "tests.fixtures.claude_code_model",
]


@pytest.fixture(autouse=True)
def _private_state_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own memfs state directory (mount and mirror records, logs,
    journals), so nothing a test leaves, even a process it killed, reaches the user's."""
    monkeypatch.setenv("MEMFS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
