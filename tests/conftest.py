"""Shared pytest configuration. Fixture families live in tests/fixtures/, one module each."""

import pytest

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
