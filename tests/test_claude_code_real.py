"""The real Claude Code CLI on a shared memory: two machines, one store.

Each machine is a private HOME, memfs state directory and mountpoint, with its own clone
of one repository (one cloned over HTTPS, one over SSH: one repository to memfs) where
``memfs claude-code enable`` ran. Claude Code (``@anthropic-ai/claude-code``, pinned,
installed by npm) runs in print mode against a scripted Messages API server on loopback;
the scripted model does what Claude Code's memory instructions ask: it saves one memory
file, then Reads ``MEMORY.md`` and Edits its one-line pointer into it (Reading again when
Edit says the file changed since its Read).

The memory directory the model writes to is the one Claude Code names in its system
prompt, so the test also proves that the setting took effect. First the sessions run one
after another: each sees everything the earlier ones wrote. Then both machines' sessions
run at the same time, several rounds: every memory file and every index line must end
up on both sides. Over SQLite (one machine's file, two mounts) and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memfs.store import open_store
from tests.fixtures.claude_code import Machine, git, make_repo
from tests.fixtures.claude_code_model import (
    Block,
    agent_server,
    claude_env,
    first_user_text,
    numbered_lines,
    result_text,
    turns,
)
from tests.fixtures.mount import wait_for
from tests.fixtures.postgres import PgCluster

pytestmark = pytest.mark.fuse

SESSION_TIMEOUT_S = 180
# What Claude Code's system prompt says of the memory directory.
_MEMORY_AT = re.compile(r"persistent file-based memory at `([^`]+)`")
_NOTE = re.compile(r"Remember note ([a-z0-9_-]+)")
INDEX_HEAD = "# Memory\n"
# Read and Edit again at most this often when another session changed the index.
MAX_RETRIES = 8


def index_line(name: str) -> str:
    return f"- [{name}]({name}.md) - what {name} learned"


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system", "")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))


def _use(n: int, name: str, **tool_input: str) -> list[Block]:
    return [{"type": "tool_use", "id": f"toolu_{n:02d}", "name": name, "input": tool_input}]


def memory_brain(body: dict[str, Any]) -> list[Block]:
    """The scripted model: save the note, then add its line to the index (stateless:
    the next step follows from the conversation so far)."""
    found = _MEMORY_AT.search(_system_text(body))
    wanted = _NOTE.search(first_user_text(body))
    if found is None or wanted is None:
        return [{"type": "text", "text": "no memory directory or note in the request"}]
    memdir, name = Path(found.group(1)), wanted.group(1)
    index, line = str(memdir / "MEMORY.md"), index_line(name)
    done = turns(body)
    n = len(done) + 1
    if not done:
        content = (
            f"---\nname: {name}\ndescription: what {name} learned\nmetadata:\n"
            f"  type: project\n---\n\n{name} learned something worth keeping.\n"
        )
        return _use(n, "Write", file_path=str(memdir / f"{name}.md"), content=content)
    last_use, last_result = done[-1]
    failed = bool(last_result.get("is_error"))
    if len(done) > 2 * MAX_RETRIES + 2:
        return [{"type": "text", "text": f"gave up: {result_text(last_result)[:200]}"}]
    if last_use["name"] == "Read" and not failed:
        lines = numbered_lines(result_text(last_result))
        if line in lines:
            return [{"type": "text", "text": "saved"}]
        anchor = next((x for x in reversed(lines) if x.strip()), None)
        if anchor is None:
            return _use(n, "Write", file_path=index, content=f"{INDEX_HEAD}{line}\n")
        return _use(n, "Edit", file_path=index, old_string=anchor, new_string=f"{anchor}\n{line}")
    if last_use["name"] == "Read" and "does not exist" in result_text(last_result):
        # No index yet: the first memory makes it (a new file needs no Read).
        return _use(n, "Write", file_path=index, content=f"{INDEX_HEAD}{line}\n")
    if last_use["name"] == "Write" and last_use["input"]["file_path"] != index and failed:
        return [{"type": "text", "text": f"could not save: {result_text(last_result)[:200]}"}]
    edited = last_use["name"] in ("Edit", "Write") and last_use["input"]["file_path"] == index
    if edited and not failed:
        return [{"type": "text", "text": "saved"}]
    # After the note, or after an Edit refused (the file changed since the Read): Read.
    return _use(n, "Read", file_path=index)


@dataclass
class Team:
    """Two machines with their clones, enabled on one store."""

    machines: list[Machine]
    clones: list[Path]
    memdirs: list[Path]
    claude: Path
    url: str = ""


def _enabled(machines: list[Machine], store_url: str, claude: Path, base: Path) -> Team:
    for m in machines:
        m.store_url = store_url
    upstream = make_repo(base / "upstream", commits=2)
    clones, memdirs = [], []
    for m, origin in zip(
        machines,
        ("https://github.com/acme/widgets.git", "git@github.com:acme/widgets.git"),
        strict=True,
    ):
        clone = m.base / "src" / "widgets"
        git(base, "clone", "-q", str(upstream), str(clone))
        git(clone, "remote", "set-url", "origin", origin)
        out = m.memfs(clone, "claude-code", "enable").stdout
        if store_url.startswith("postgresql://"):
            assert "Share it with other machines and teammates" in out
        settings = json.loads((clone / ".claude" / "settings.local.json").read_text())
        clones.append(clone)
        memdirs.append(Path(settings["autoMemoryDirectory"]))
    # One directory of the store for both clones.
    assert memdirs[0].relative_to(machines[0].mountpoint) == memdirs[1].relative_to(
        machines[1].mountpoint
    )
    (memdirs[0] / "MEMORY.md").write_text(INDEX_HEAD)
    wait_for(lambda: (memdirs[1] / "MEMORY.md").exists(), what="the index on both machines")
    return Team(machines, clones, memdirs, claude)


def _session(team: Team, i: int, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            str(team.claude),
            "-p",
            f"Remember note {name}: save it in your memory and add it to MEMORY.md.",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Write,Read,Edit",
        ],
        cwd=team.clones[i],
        env=claude_env(team.machines[i].home, team.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> str:
    try:
        out, err = proc.communicate(timeout=SESSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"Claude Code did not finish in {SESSION_TIMEOUT_S} s: {err}"
        ) from None
    assert proc.returncode == 0, f"Claude Code failed ({proc.returncode}): {out}{err}"
    return out.strip()


def _sees_all(team: Team, names: list[str]) -> bool:
    for memdir in team.memdirs:
        try:
            index = (memdir / "MEMORY.md").read_text()
        except OSError:
            return False
        if not all((memdir / f"{n}.md").is_file() for n in names):
            return False
        if not all(index_line(n) in index.splitlines() for n in names):
            return False
    return True


def _missing(team: Team, names: list[str]) -> str:
    report = []
    for m, memdir in zip(team.machines, team.memdirs, strict=True):
        index = (memdir / "MEMORY.md").read_text().splitlines()
        files = [n for n in names if not (memdir / f"{n}.md").is_file()]
        lines = [n for n in names if index_line(n) not in index]
        report.append(f"{m.base.name}: files missing {files}, index lines missing {lines}")
    return "; ".join(report)


def _one_after_another(team: Team) -> list[str]:
    names: list[str] = []
    for round_ in range(2):
        for i, m in enumerate(team.machines):
            name = f"{m.base.name}-seq{round_}"
            assert _finish(_session(team, i, name)) == "saved"
            names.append(name)
            # The next session, on either machine, starts once this one's writes show
            # on both: each reads everything the earlier ones wrote.
            wait_for(lambda: _sees_all(team, names), timeout=15, what="both sides")
    return names


def _at_once(team: Team, names: list[str], rounds: int = 3) -> None:
    for round_ in range(rounds):
        procs = [
            _session(team, i, f"{m.base.name}-par{round_}") for i, m in enumerate(team.machines)
        ]
        names.extend(f"{m.base.name}-par{round_}" for m in team.machines)
        # Each session saved its note and its own edit of the index went through.
        assert [_finish(proc) for proc in procs] == ["saved"] * len(procs)
        # Both sides follow the store's feed: wait for what both sessions wrote, then
        # say exactly what is missing where.
        with contextlib.suppress(AssertionError):
            wait_for(lambda: _sees_all(team, names), timeout=15, what="both sides")
        assert _sees_all(team, names), _missing(team, names)


@pytest.fixture
def sqlite_team(machines: list[Machine], claude_code_cli: Path, tmp_path: Path) -> Iterator[Team]:
    with agent_server(memory_brain) as server:
        team = _enabled(machines, f"sqlite://{tmp_path / 'shared.db'}", claude_code_cli, tmp_path)
        team.url = server.url
        yield team
        assert server.failures == []


@pytest.fixture
def pg_team(
    machines: list[Machine], claude_code_cli: Path, tmp_path: Path, pg_cluster: PgCluster
) -> Iterator[Team]:
    with agent_server(memory_brain) as server:
        team = _enabled(machines, pg_cluster.url(), claude_code_cli, tmp_path)
        team.url = server.url
        yield team
        assert server.failures == []


def _logged_as_claude_code(store_url: str, memdir_rel: str, sessions: int) -> None:
    """Each session's writes are one operation in the log, by ``claude-code (USER)``."""
    user = getpass.getuser()
    with open_store(store_url) as store:
        ops = store.operations(path=memdir_rel, limit=None)
    by_claude = [o for o in ops if o.actor.startswith("claude-code (")]
    assert {o.actor for o in by_claude} == {f"claude-code ({user})"}
    assert len(by_claude) == sessions, [(o.actor, o.detail, o.changes) for o in ops]
    assert all(o.changes >= 2 and o.label == "claude-code" for o in by_claude)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sessions_one_after_another_see_everything(
    backend: str, request: pytest.FixtureRequest
) -> None:
    team: Team = request.getfixturevalue(f"{'pg' if backend == 'postgresql' else 'sqlite'}_team")
    names = _one_after_another(team)
    assert len(names) == 4
    rel = team.memdirs[0].relative_to(team.machines[0].mountpoint).as_posix()
    _logged_as_claude_code(team.machines[0].store_url, rel, len(names))


def test_enable_takes_in_what_claude_code_remembered_before(
    machines: list[Machine], claude_code_cli: Path, tmp_path: Path
) -> None:
    """A session before enable saves to Claude Code's own directory; enable brings it
    into the shared one, where the other machine's sessions find it."""
    with agent_server(memory_brain) as server:
        alice, bob = machines
        clone = make_repo(alice.base / "src" / "widgets", "https://github.com/acme/widgets")
        team = Team(machines, [clone], [], claude_code_cli, server.url)
        assert _finish(_session(team, 0, "before-enable")) == "saved"
        own = alice.default_memory(clone)
        assert index_line("before-enable") in (own / "MEMORY.md").read_text()
        alice.memfs(clone, "claude-code", "enable")
        other = make_repo(bob.base / "src" / "widgets", "git@github.com:acme/widgets.git")
        bob.memfs(other, "claude-code", "enable")
        team.clones.append(other)
        for clone_, m in zip(team.clones, machines, strict=True):
            settings = json.loads((clone_ / ".claude" / "settings.local.json").read_text())
            team.memdirs.append(Path(settings["autoMemoryDirectory"]))
            assert team.memdirs[-1].is_relative_to(m.mountpoint)
        wait_for(lambda: _sees_all(team, ["before-enable"]), what="the import on both sides")
        assert _finish(_session(team, 1, "bob-after")) == "saved"
        wait_for(lambda: _sees_all(team, ["before-enable", "bob-after"]), what="both sides")
        assert server.failures == []


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sessions_at_once_keep_every_file_and_line(
    backend: str, request: pytest.FixtureRequest
) -> None:
    team: Team = request.getfixturevalue(f"{'pg' if backend == 'postgresql' else 'sqlite'}_team")
    _at_once(team, [])
