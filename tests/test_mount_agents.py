"""A coding agent through the mount is named for itself and the person it works for,
and its session is one operation that ``memfs undo`` takes back whole.

The agent here is a real process the kernel names ``claude`` (a shell script of that
name: the kernel takes a script's name as the process's), which writes through a real
FUSE mount itself and through a shell it starts, with a pause longer than a person's
burst between its writes, as a model's turns have.
"""

from __future__ import annotations

import getpass
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.actors import agent_of, mount_actor
from memfs.cli import main
from memfs.errors import NotFound
from memfs.mount.bursts import BURST_GAP_S
from tests.fixtures.mount import MountHandle, wait_for

pytestmark = pytest.mark.fuse


def test_agent_names() -> None:
    assert agent_of("claude") == "claude-code"
    assert agent_of("node", ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"]) == (
        "claude-code"
    )
    assert agent_of("node", ["node", "server.js"]) is None
    assert agent_of("rm") is None
    assert mount_actor("alice", "claude", "claude-code") == "claude-code (alice)"
    assert mount_actor("alice", "rm") == "alice (rm)"


def test_a_claude_session_is_one_operation_undone_whole(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    m = mount_factory()
    mp = m.mountpoint
    (mp / "MEMORY.md").write_text("- [old](old.md)\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "claude"
    # A pause past a person's burst gap between two writes, and a write by a child
    # process (its Bash tool), all within one session.
    agent.write_text(
        "#!/bin/sh\n"
        'printf "a memory\\n" > "$1/user_role.md"\n'
        f"sleep {BURST_GAP_S + 0.5}\n"
        "sh -c \"printf '%s\\n' '- [role](user_role.md)' >> \\\"$1/MEMORY.md\\\"\"\n"
        "sync\n"
    )
    agent.chmod(0o755)
    subprocess.run([str(agent), str(mp)], check=True, timeout=30)
    store = m.store()
    user = getpass.getuser()
    # The append reaches the store after the mount's quiet period.
    wait_for(lambda: store.read("MEMORY.md")[0].count(b"\n") == 2, what="the append saved")
    ops = store.operations(actor="claude-code", limit=None)
    assert [(o.actor, o.label) for o in ops] == [(f"claude-code ({user})", "claude-code")]
    assert ops[0].changes >= 2
    assert store.read("MEMORY.md")[0] == b"- [old](old.md)\n- [role](user_role.md)\n"

    runner = CliRunner()
    log = runner.invoke(main, ["log", "--store", m.store_url, "--actor", "claude-code"])
    assert log.exit_code == 0, log.output
    assert f"claude-code ({user})" in log.output
    undone = runner.invoke(main, ["undo", str(ops[0].id), "--store", m.store_url])
    assert undone.exit_code == 0, undone.output
    with pytest.raises(NotFound):
        store.stat("user_role.md")
    assert store.read("MEMORY.md")[0] == b"- [old](old.md)\n"
    wait_for(lambda: not (mp / "user_role.md").exists(), what="the undo through the mount")
    assert (mp / "MEMORY.md").read_text() == "- [old](old.md)\n"
