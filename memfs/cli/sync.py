"""Placeholder until this command group lands; it registers nothing."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
