"""Shared pytest configuration. Fixture families live in their own plugin modules."""

pytest_plugins: list[str] = []
