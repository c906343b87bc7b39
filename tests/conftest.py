"""Shared pytest configuration. Fixture families live in tests/fixtures/, one module each."""

pytest_plugins = [
    "tests.fixtures.disks",
    "tests.fixtures.mount",
    "tests.fixtures.model_server",
    "tests.fixtures.sync",
    "tests.fixtures.bad_stores",
]
