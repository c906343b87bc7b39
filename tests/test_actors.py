"""Actors are stated, not guessed: one rule for a name, refused with one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from memfs.actors import MAX_ACTOR_BYTES, check_actor, clean_actor
from memfs.errors import ActorError
from memfs.handler import MemoryHandler

MEMFS = str(Path(sys.executable).with_name("memfs"))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "non-empty"),
        ("   ", "non-empty"),
        ("agent\nplanner", "U+000A"),
        ("bell\x07", "U+0007"),
        ("bidi\u202e", "U+202E"),
        ("é" * 101, f"longer than {MAX_ACTOR_BYTES} bytes"),
    ],
)
def test_a_name_no_change_may_carry_is_refused_with_why(name: str, why: str) -> None:
    with pytest.raises(ActorError, match=re.escape(why)):
        check_actor(name)
    with pytest.raises(ActorError):
        MemoryHandler("/tmp", actor=name)


def test_printable_names_pass_as_they_are() -> None:
    for name in ("agent", "agent:planner", "mcp:Claude Code 🤖", "x" * MAX_ACTOR_BYTES):
        assert check_actor(name) == name


def test_a_client_chosen_name_is_made_usable() -> None:
    assert clean_actor("a\tb\x00c", "client", prefix="mcp:") == "mcp:a b c"
    assert clean_actor("\x01\x02", "client", prefix="mcp:") == "mcp:client"
    long = clean_actor("é" * 300, "client", prefix="mcp:")
    assert len(long.encode()) <= MAX_ACTOR_BYTES and check_actor(long) == long


@pytest.mark.parametrize("bad", ["bad\x01name", "x" * 201])
def test_tool_refuses_a_bad_actor_with_one_line(tmp_path: Path, bad: str) -> None:
    done = subprocess.run(
        [
            MEMFS,
            "tool",
            "--root",
            str(tmp_path),
            "--actor",
            bad,
            '{"command": "view", "path": "/memories"}',
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("Error: --as: the actor name "), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "claimed", ["memfs restore (user x)", "memfs", "memfs undo (user root)", "memfs:web"]
)
def test_no_door_may_claim_to_be_memfs(tmp_path: Path, claimed: str) -> None:
    with pytest.raises(ActorError, match="reserved for memfs's own commands"):
        MemoryHandler(tmp_path, actor=claimed)
    for option in ("--as", "--actor"):  # the old name of the option is still refused
        done = subprocess.run(
            [MEMFS, "tool", "--root", str(tmp_path), option, claimed],
            input='{"command": "view", "path": "/memories"}\n',
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (done.returncode, done.stdout, done.stderr) == (
            2,
            "",
            f"Error: --as: the actor name {claimed!r} is reserved for memfs's own commands"
            " (their names start with 'memfs'); choose another\n",
        )


def test_names_that_only_look_alike_are_anyones() -> None:
    for name in ("memfs-bot", "memfsd", "agent:memfs restore", "alice (memfs)"):
        assert check_actor(name) == name


def test_only_memfs_history_commands_are_protected_from_an_older_write() -> None:
    from memfs.actors import by_history_command
    from memfs.history.author import act_for, author_for

    for command in ("restore", "undo", "import"):
        assert by_history_command(act_for(command, "alice").command)
    # The field decides, never the text: an author that reads like memfs is not it.
    for other in ("expire", "redact", "claude-code", "", author_for("restore", "alice")):
        assert not by_history_command(other)
