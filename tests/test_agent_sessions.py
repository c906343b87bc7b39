"""``memfs agent --sessions NAME``: the multi-session pattern, with the scripted model
server and the real SDK. On a real FUSE mount of a SQLite store: the first session sets
up the progress log, feature checklist and start-up notes from templates, as store
changes by the agent; a later session keeps a person's files, is told to read them
first, starts at a checkpoint that ``memfs diff --since`` reads its work from, and a
session that leaves the progress log as it was gets a one-line warning. On a plain
directory (no history) the same protocol, without a checkpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.agent.sessions import (
    FILES,
    INSTRUCTION,
    ProjectSessions,
    SessionStart,
    instruction,
    template,
)
from memfs.cli import main
from memfs.program import command
from memfs.store.base import Store
from tests.fixtures.model_server import ModelServer, memory, reply, text
from tests.fixtures.mount import MountHandle, wait_for
from tests.test_agent_cli import CREDENTIAL_VARIABLES

PROJECT = "webshop"
DIRECTORY = f"/memories/sessions/{PROJECT}"
PROGRESS = f"{DIRECTORY}/progress.md"
FIRST_SETUP = "- Done: this log, features.md and startup.md were made from memfs's templates."


def _run(server: ModelServer, *args: str) -> Result:
    env: dict[str, str | None] = dict.fromkeys(CREDENTIAL_VARIABLES)
    env.update({"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": server.url})
    return CliRunner().invoke(main, ["agent", *args], env=env)


def _warning() -> str:
    return (
        f"memfs agent: warning: this session ended without updating {PROGRESS}; the next"
        " session will not know what it did: update it (or ask the model to)\n"
    )


def _update_progress(id: str, entry: str) -> dict[str, object]:
    """The model adding its entry at the top of the progress log, under the preamble."""
    return memory(
        id,
        "str_replace",
        path=PROGRESS,
        old_str="## Setup",
        new_str=f"{entry}\n\n## Setup",
    )


def _content(store: Store, path: str) -> bytes:
    return store.read(path)[0]


# --- on a real mount of a SQLite store ---------------------------------------------------


@pytest.mark.fuse
def test_sessions_on_a_mount(model_server: ModelServer, memfs_mount: MountHandle) -> None:
    mountpoint = memfs_mount.mountpoint
    store = memfs_mount.store()

    # Session 1: the model only looks; the templates are written, the log is not updated.
    model_server.script(reply(memory("t1", "view", path=DIRECTORY)), reply(text("Set up.")))
    first = _run(model_server, "--root", str(mountpoint), "--sessions", PROJECT, "Build a shop.")
    assert first.exit_code == 0, first.stderr
    checkpoint_1 = f"session-{PROJECT}-1"
    see_1 = command("diff", "--since", checkpoint_1, mountpoint)
    assert first.stderr == (
        f"memfs agent: wrote progress.md, features.md, startup.md in {DIRECTORY}/ from"
        " templates\n"
        f"memfs agent: session checkpoint {checkpoint_1}; its work: {see_1}\n" + _warning()
    )
    for name in FILES:
        path = f"sessions/{PROJECT}/{name}"
        assert _content(store, path) == template(name, PROJECT).encode()
        assert {c.author for c in store.changes(0) if c.path == path} == {"agent"}
        assert (mountpoint / path).read_text() == template(name, PROJECT)
    system = model_server.requests[0].body["system"]
    assert system == INSTRUCTION.format(
        project=PROJECT,
        directory=DIRECTORY,
        session=f"this session began at checkpoint {checkpoint_1}",
        progress="progress.md",
        features="features.md",
        startup="startup.md",
    )
    assert f"Before anything else, read {PROGRESS} (what was done" in system
    # The set-up is no news to the model: it came before the session's change feed.
    assert not [t for r in model_server.requests for t in r.texts() if "people changed" in t]
    # The checkpoint comes after the setup: the session's own work starts from it.
    marks = {c.name: c for c in store.checkpoints()}
    assert marks[checkpoint_1].seq == store.last_seq()
    assert marks[checkpoint_1].author == "agent"

    # Between the sessions a person fills in the checklist, through the mount.
    features = f"# Feature checklist: {PROJECT}\n\n- [ ] cart\n- [ ] checkout\n"
    (mountpoint / "sessions" / PROJECT / "features.md").write_text(features)
    wait_for(
        lambda: _content(store, f"sessions/{PROJECT}/features.md") == features.encode(),
        timeout=10,
        what="the person's checklist in the store",
    )

    # Session 2: the model reads, works, and updates the progress log.
    model_server.script(
        reply(memory("t1", "view", path=PROGRESS)),
        reply(
            memory("t2", "create", path="/memories/cart.md", file_text="cart: done\n"),
            _update_progress("t3", "## Session 2\n- Done: cart\n- Next: checkout"),
        ),
        reply(text("Cart done.")),
    )
    second = _run(model_server, "--root", str(mountpoint), "--sessions", PROJECT, "Go on.")
    assert second.exit_code == 0, second.stderr
    checkpoint_2 = f"session-{PROJECT}-2"
    see_2 = command("diff", "--since", checkpoint_2, mountpoint)
    # Nothing was written from the templates, and no warning.
    assert second.stderr == f"memfs agent: session checkpoint {checkpoint_2}; its work: {see_2}\n"
    assert _content(store, f"sessions/{PROJECT}/features.md") == features.encode()
    assert [r.tool_results()[0].get("is_error") for r in model_server.requests[3:5]] == [
        None,
        None,
    ]
    assert checkpoint_2 in model_server.requests[2].body["system"]
    assert "Read" not in model_server.requests[2].texts()[0]  # the prompt itself is as given
    progress = _content(store, f"sessions/{PROJECT}/progress.md").decode()
    assert progress.index("## Session 2") < progress.index("## Setup")

    # memfs diff --since the session's checkpoint: the session's work, and only it.
    diff = CliRunner().invoke(main, ["diff", "--since", checkpoint_2, str(mountpoint)])
    assert diff.exit_code == 0, diff.stderr
    # The person's edit of the checklist came before the session's checkpoint.
    assert _changed(diff.stdout) == ["cart.md", f"sessions/{PROJECT}/progress.md"]
    assert "+cart: done\n" in diff.stdout
    assert "+## Session 2\n+- Done: cart\n+- Next: checkout\n" in diff.stdout
    # Since the first session's checkpoint: the checklist too, but not the setup, which
    # came before that checkpoint.
    since_first = CliRunner().invoke(main, ["diff", "--since", checkpoint_1, str(mountpoint)])
    assert since_first.exit_code == 0, since_first.stderr
    assert _changed(since_first.stdout) == [
        "cart.md",
        f"sessions/{PROJECT}/features.md",
        f"sessions/{PROJECT}/progress.md",
    ]


def _changed(diff: str) -> list[str]:
    """The files a unified diff of the tree shows changed, by their new names."""
    return sorted(line[6:] for line in diff.splitlines() if line.startswith("+++ b/"))


@pytest.mark.fuse
def test_session_end_check_sees_a_save_through_the_mount(
    memfs_mount: MountHandle,
) -> None:
    """Another host's agent (Claude Code editing files on the mount) updates the log as
    a plain file save; the check commits what the mount still holds before it looks."""
    mountpoint = memfs_mount.mountpoint
    sessions = ProjectSessions(mountpoint, PROJECT, actor="claude-code")
    started = sessions.start()
    assert started.first and started.checkpoint is not None
    assert not sessions.progress_updated(started)
    log = mountpoint / "sessions" / PROJECT / "progress.md"
    log.write_text(log.read_text() + "\n## Session 1\n- Done: nothing yet\n")
    assert sessions.progress_updated(started)
    again = sessions.start()
    assert again.created == ()
    assert again.checkpoint is not None and again.checkpoint.name == f"session-{PROJECT}-2"
    assert sessions.latest() == again.checkpoint


# --- on a plain directory (no history) ---------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "memories"
    d.mkdir()
    return d


def test_plain_directory_keeps_a_persons_files(model_server: ModelServer, root: Path) -> None:
    mine = "# My own progress log\n"
    (root / "sessions" / PROJECT).mkdir(parents=True)
    (root / "sessions" / PROJECT / "progress.md").write_text(mine)
    model_server.script(reply(text("Read it.")))
    result = _run(model_server, "--root", str(root), "--sessions", PROJECT, "Go on.")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"memfs agent: wrote features.md, startup.md in {DIRECTORY}/ from templates\n"
        f"memfs agent: {root} keeps no history (not a memfs mount): no session checkpoint\n"
        + _warning()
    )
    assert (root / "sessions" / PROJECT / "progress.md").read_text() == mine
    assert (root / "sessions" / PROJECT / "startup.md").read_text() == template(
        "startup.md", PROJECT
    )
    assert "no checkpoint marks this session" in model_server.requests[0].body["system"]


def test_no_warning_when_the_progress_log_is_updated(model_server: ModelServer, root: Path) -> None:
    model_server.script(
        reply(_update_progress("t1", "## Session 1\n- Done: the plan")),
        reply(text("Logged.")),
    )
    result = _run(model_server, "--root", str(root), "--sessions", PROJECT, "Plan it.")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"memfs agent: wrote progress.md, features.md, startup.md in {DIRECTORY}/ from"
        " templates\n"
        f"memfs agent: {root} keeps no history (not a memfs mount): no session checkpoint\n"
    )
    assert model_server.requests[1].tool_results()[0].get("is_error") is None
    assert "## Session 1" in (root / "sessions" / PROJECT / "progress.md").read_text()


def test_the_system_file_comes_first(model_server: ModelServer, root: Path, tmp_path: Path) -> None:
    system = tmp_path / "system.txt"
    system.write_text("Be brief.")
    model_server.script(reply(text("ok")))
    result = _run(
        model_server, "--root", str(root), "--system", str(system), "--sessions", PROJECT, "Hi."
    )
    assert result.exit_code == 0, result.stderr
    started = SessionStart(PROJECT, DIRECTORY, (), None)
    assert model_server.requests[0].body["system"] == f"Be brief.\n\n{instruction(started)}"


@pytest.mark.parametrize("name", ["../up", "a/b", "", "-x", "x" * 65])
def test_a_bad_project_name_is_one_line(model_server: ModelServer, root: Path, name: str) -> None:
    result = _run(model_server, "--root", str(root), "--sessions", name, "Hi.")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '--sessions': {name!r} cannot name a project's sessions:"
        " use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        " (e.g. webshop)"
    )
    assert model_server.requests == []
    assert list(root.iterdir()) == []


# --- memfs session start|end: any agent on the mount (e.g. Claude Code's hooks) ------------


def _memfs(*args: str, input: str = "") -> subprocess.CompletedProcess[str]:
    """memfs as its own process, as a host's hook runs it."""
    memfs = Path(sys.executable).with_name("memfs")
    return subprocess.run(
        [str(memfs), *args],
        input=input,
        env=os.environ.copy(),  # MEMFS_STATE_DIR: the test's mounts
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.fuse
def test_session_commands_for_a_host_on_the_mount(memfs_mount: MountHandle) -> None:
    mountpoint = memfs_mount.mountpoint
    store = memfs_mount.store()
    files = mountpoint / "sessions" / PROJECT

    started = _memfs("session", "start", PROJECT, "--root", str(mountpoint), "--files")
    assert started.returncode == 0, started.stderr
    checkpoint = f"session-{PROJECT}-1"
    see = command("diff", "--since", checkpoint, mountpoint)
    assert started.stderr == (
        f"memfs session: wrote progress.md, features.md, startup.md in {DIRECTORY}/ from"
        " templates\n"
        f"memfs session: session checkpoint {checkpoint}; its work: {see}\n"
    )
    # The protocol names the files where the host edits them: on the mount.
    shown = SessionStart(PROJECT, DIRECTORY, (), store.checkpoints()[-1])
    assert started.stdout == instruction(shown, str(files)) + "\n"
    assert f"read {files}/progress.md (what was done" in started.stdout
    assert {c.author for c in store.changes(0)} == {"agent"}

    # The host ends a turn without touching the log: a warning; --block makes it exit 2,
    # unless the host says it already continued once for this stop.
    warning = (
        f"memfs session: warning: this session ended without updating {PROGRESS}; the next"
        " session will not know what it did: update it (or ask the model to)\n"
    )
    ended = _memfs("session", "end", PROJECT, "--root", str(mountpoint))
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "", warning)
    blocked = _memfs("session", "end", PROJECT, "--root", str(mountpoint), "--block")
    assert (blocked.returncode, blocked.stderr) == (2, warning)
    again = _memfs(
        "session",
        "end",
        PROJECT,
        "--root",
        str(mountpoint),
        "--block",
        input=json.dumps({"hook_event_name": "Stop", "stop_hook_active": True}),
    )
    assert (again.returncode, again.stderr) == (0, warning)

    # The host saves the log as a file on the mount: no warning, even with --block.
    log = files / "progress.md"
    log.write_text(log.read_text() + "\n## Session 1\n- Done: the checklist\n")
    updated = _memfs("session", "end", PROJECT, "--root", str(mountpoint), "--block")
    assert (updated.returncode, updated.stdout, updated.stderr) == (0, "", "")

    # The next session keeps the files and counts on.
    second = _memfs("session", "start", PROJECT, "--root", str(mountpoint))
    assert second.returncode == 0, second.stderr
    assert second.stderr == (
        f"memfs session: session checkpoint session-{PROJECT}-2; its work:"
        f" {command('diff', '--since', f'session-{PROJECT}-2', mountpoint)}\n"
    )
    assert f"read {PROGRESS} (what was done" in second.stdout
    assert "## Session 1" in log.read_text()


def test_session_end_without_history_or_start_is_one_line(root: Path) -> None:
    plain = CliRunner().invoke(main, ["session", "end", PROJECT, "--root", str(root)])
    assert plain.exit_code == 1
    assert plain.stderr == (
        f"Error: {root} keeps no history (it is not a memfs mount), so memfs cannot tell"
        " what a session changed\n"
    )


def test_the_documented_instruction_is_the_one_sent() -> None:
    """docs/sessions.md quotes the instruction word for word; it must not drift."""
    from memfs.store.base import Checkpoint

    docs = Path(__file__).resolve().parent.parent / "docs" / "sessions.md"
    page = docs.read_text(encoding="utf-8")
    marker = "<!-- sessions-instruction: webshop session-webshop-3 -->\n```text\n"
    quoted = page[page.index(marker) + len(marker) :].split("\n```", 1)[0]
    checkpoint = Checkpoint("session-webshop-3", 7, 0, "agent")
    assert quoted == instruction(SessionStart("webshop", DIRECTORY, (), checkpoint))
