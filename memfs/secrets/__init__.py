"""Credentials in what the model writes: find them, redact them, show them masked.

A layer of its own below the handler: it knows texts, not stores, paths or people.
:func:`scan` finds credentials (:class:`Finding`: a kind slug such as
``aws-access-key``, the span, the line and why it counts), :func:`redact` replaces
each with ``[REDACTED:kind]``, :func:`mask` shows one without giving it away.
Detection is detect-secrets' plugins where they cover a kind, provider formats they
lack, and context and entropy rules for the rest (:mod:`memfs.secrets.patterns`,
:mod:`memfs.secrets.rules`).

:data:`POLICIES` are what a door may do with a finding in a write: ``redact`` (the
default: store the text with markers and say so), ``refuse`` (store nothing) or
``allow`` (no scanning).
"""

from __future__ import annotations

from typing import Literal

from memfs.secrets.scanner import MARKER, Finding, mask, redact, scan

Policy = Literal["redact", "refuse", "allow"]
POLICIES: tuple[Policy, ...] = ("redact", "refuse", "allow")
DEFAULT_POLICY: Policy = "redact"


def check_policy(policy: object) -> Policy:
    """``policy`` if it is one of :data:`POLICIES`; ValueError otherwise."""
    if policy not in POLICIES:
        raise ValueError(f"secrets policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    return policy


__all__ = [
    "DEFAULT_POLICY",
    "MARKER",
    "POLICIES",
    "Finding",
    "Policy",
    "check_policy",
    "mask",
    "redact",
    "scan",
]
