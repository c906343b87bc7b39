"""Secrets at every door (#17.3): whole tokens (Stripe's 107-character keys), names
screened on create and rename, ``memory_history`` masking old revisions and screening
its restore like a write, and ``memfs secrets`` skipping binary files and escaping
control bytes. Real handler on a real directory, real MCP server over stdio on a real
FUSE mount, the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.handler import MemoryHandler
from memfs.store import open_store
from tests.fixtures.mcp import stdio_client, text_of
from tests.fixtures.mount import MountHandle, wait_for
from tests.secrets_corpus import STRIPE_LONG

GHP = "ghp_rKSHcxWxqTDlXSkk0bX7vxSla9BOFbWFrGW9"


def test_a_long_stripe_key_is_redacted_to_its_last_character(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "mem")
    result = handler.create("/memories/billing.md", f"live key {STRIPE_LONG} rotated\n")
    assert not result.is_error
    stored = (tmp_path / "mem" / "billing.md").read_text()
    assert stored == "live key [REDACTED:stripe-key] rotated\n"
    assert STRIPE_LONG[-60:] not in stored


@pytest.mark.parametrize("command", ["create", "rename"])
def test_a_name_holding_a_secret_is_redacted(tmp_path: Path, command: str) -> None:
    root = tmp_path / "mem"
    handler = MemoryHandler(root)
    named = f"/memories/tokens/{GHP}.md"
    if command == "create":
        result = handler.create(named, "where the CI token lives: the vault\n")
    else:
        assert not handler.create("/memories/tokens/ci.md", "the vault\n").is_error
        result = handler.rename("/memories/tokens/ci.md", named)
    assert not result.is_error
    assert isinstance(result.content, str)  # text, not image blocks
    first = result.content.split("\n")[0]
    assert first in (
        "File created successfully at: /memories/tokens/[REDACTED:github-token].md",
        "Successfully renamed /memories/tokens/ci.md to"
        " /memories/tokens/[REDACTED:github-token].md",
    )
    assert result.content.split("\n", 2)[2] == (
        "Note: memfs replaced 1 likely credential in the name with [REDACTED:kind] markers,"
        " because credentials must not be stored in memory; the entry is"
        " /memories/tokens/[REDACTED:github-token].md:\n"
        "- [REDACTED:github-token], a GitHub token (ghp_, gho_, ...)"
    )
    assert os.listdir(root / "tokens") == ["[REDACTED:github-token].md"]


@pytest.mark.parametrize("command", ["create", "rename"])
def test_a_name_holding_a_secret_is_refused_under_refuse(tmp_path: Path, command: str) -> None:
    root = tmp_path / "mem"
    handler = MemoryHandler(root, secrets="refuse")
    assert not handler.create("/memories/ci.md", "the vault\n").is_error
    named = f"/memories/{STRIPE_LONG}.md"
    if command == "create":
        result = handler.create(named, "x\n")
    else:
        result = handler.rename("/memories/ci.md", named)
    assert (result.is_error, result.content) == (
        True,
        "Error: The path /memories/[REDACTED:stripe-key].md contains 1 likely credential"
        " (stripe-key) in its name; credentials must not be stored in memory, in names"
        " either. Nothing was written. Name the file after what it holds instead.",
    )
    assert os.listdir(root) == ["ci.md"]


def test_allow_keeps_the_name(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "mem", secrets="allow")
    assert not handler.create(f"/memories/{GHP}.md", "x\n").is_error
    assert os.listdir(tmp_path / "mem") == [f"{GHP}.md"]


@pytest.mark.fuse
@pytest.mark.parametrize("policy", ["redact", "refuse"])
def test_memory_history_masks_old_revisions_and_screens_its_restore(
    memfs_mount: MountHandle, policy: str
) -> None:
    mnt = memfs_mount.mountpoint
    # A person wrote the token through the mount (unscanned), then took it out.
    (mnt / "ci.md").write_text(f"token {GHP}\n")
    store = memfs_mount.store()
    wait_for(lambda: store.history("ci.md"), what="the person's write")
    (mnt / "ci.md").write_text("token: in the vault\n")
    wait_for(lambda: len(store.history("ci.md")) == 2, what="the person's fix")
    old = store.history("ci.md")[-1].rev

    async def run() -> tuple[str, bool, str]:
        async with stdio_client(["--root", str(mnt), "--secrets", policy], "eve") as (client, _):
            shown = await client.call_tool(
                "memory_history", {"path": "/memories/ci.md", "rev": old}
            )
            restored = await client.call_tool(
                "memory_history", {"path": "/memories/ci.md", "rev": old, "restore": True}
            )
            return text_of(shown), bool(restored.is_error), text_of(restored)

    shown, refused, restored = anyio.run(run)
    assert GHP not in shown
    assert shown.split("\n", 1)[1] == (
        "token [REDACTED:github-token]\n\n"
        "(memfs shows 1 likely credential of this revision as [REDACTED:kind]:"
        " github-token on line 1)"
    )
    if policy == "refuse":
        assert refused
        assert restored.startswith(
            f"Error: The revision {old} for /memories/ci.md contains 1 likely credential"
            " (github-token on line 1); credentials must not be stored in memory."
            " Nothing was written."
        )
        assert len(store.history("ci.md")) == 2
        return
    assert not refused and restored.startswith(f"Restored /memories/ci.md to revision {old};")
    assert "[REDACTED:github-token], a GitHub token" in restored
    wait_for(
        lambda: (mnt / "ci.md").read_text() == "token [REDACTED:github-token]\n",
        what="the restore, redacted, through the mount",
    )
    assert GHP.encode() not in store.read("ci.md")[0]


def test_memfs_secrets_skips_binary_files_and_escapes_control_bytes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(db) as store:
        binary = b"\x89PNG\x00\x07\x1b[2J " + GHP.encode() + b"\x00"
        store.write("logo.png", binary, author="alice")
        store.write("term.md", f"\x07\x1b[31mred {GHP}\x1b[0m\n".encode(), author="alice")
    result = CliRunner().invoke(main, ["secrets", "--history", "--store", str(db)])
    assert result.exit_code == 1  # it found one
    assert result.output.splitlines()[0] == (
        "term.md  rev 2 (current)  line 1  github-token  \\x07\\x1b[31mred ghp_… (40 chars)\\x1b[0m"
    )
    assert "logo.png" not in result.output
    assert not any(ch in result.output for ch in "\x00\x07\x1b")
