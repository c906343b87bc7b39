"""Change notices in a real agent session: a person edits a file while the model thinks,
and the next request carries exactly one notice naming it; the agent's own edits never
appear. Once on a plain directory (snapshot fallback), once on a real FUSE mount (the
store's change feed, one line per operation with the person's user and program: an
``rm -rf`` of 5,000 files is one line)."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memfs.agent import AgentSession, NoticeAdded, run_agent
from memfs.errors import NotFound
from memfs.store.base import Store
from tests.fixtures.model_server import ModelServer, Request, memory, reply, text
from tests.fixtures.mount import wait_for

NOTICE_START = "Since your last turn, people changed /memories: "
ME = pwd.getpwuid(os.getuid()).pw_name  # the person: this test's user


def _notice_blocks(request: Request) -> list[str]:
    return [t for t in request.texts() if t.startswith(NOTICE_START)]


def _script(server: ModelServer, person: Any) -> None:
    server.script(
        reply(memory("t1", "create", path="/memories/agent.md", file_text="mine\n")),
        # While the model "thinks" about turn 2, the person edits a file.
        reply(
            memory("t2", "str_replace", path="/memories/agent.md", old_str="mine", new_str="ours"),
            before=person,
        ),
        reply(memory("t3", "view", path="/memories")),
        reply(text("Seen it.")),
    )


def test_notice_on_a_plain_directory(model_server: ModelServer, tmp_path: Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    (root / "todo.md").write_text("- milk\n")

    def person(_: Request) -> None:
        with open(root / "todo.md", "a") as f:
            f.write("- eggs\n")

    _script(model_server, person)
    events = list(run_agent("Keep notes.", root, client=model_server.client()))

    requests = model_server.requests
    assert len(requests) == 4
    assert [len(_notice_blocks(r)) for r in requests] == [0, 0, 1, 0]
    assert _notice_blocks(requests[2]) == [f"{NOTICE_START}edited /memories/todo.md."]
    # The notice follows the tool results of the same turn.
    blocks = [b["type"] for m in requests[2].messages for b in m["content"]]
    assert blocks == ["tool_result", "text"]
    notices = [e for e in events if isinstance(e, NoticeAdded)]
    assert [n.text for n in notices] == [f"{NOTICE_START}edited /memories/todo.md."]


def test_changes_between_prompts_lead_the_next_prompt(
    model_server: ModelServer, tmp_path: Path
) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    model_server.script(reply(text("One.")), reply(text("Two.")), reply(text("Three.")))
    with AgentSession(root, client=model_server.client()) as session:
        list(session.ask("first"))
        (root / "ideas.md").write_text("1\n")
        list(session.ask("second"))
        list(session.ask("third"))
    second, third = model_server.requests[1], model_server.requests[2]
    assert second.messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{NOTICE_START}created /memories/ideas.md."},
                {"type": "text", "text": "second"},
            ],
        }
    ]
    assert third.messages == [{"role": "user", "content": [{"type": "text", "text": "third"}]}]


@pytest.mark.fuse
def test_notice_on_a_real_mount_names_the_person(
    model_server: ModelServer, memfs_mount: Any
) -> None:
    mountpoint = Path(memfs_mount.mountpoint)
    store = memfs_mount.store()
    (mountpoint / "todo.md").write_text("- milk\n")
    # The mount commits a file when its last handle is released, which close() does not
    # wait for: without this, the person's append could join our write as one "create".
    wait_for(lambda: _content(store, "todo.md") == b"- milk\n", timeout=10, what="todo.md")

    def person(_: Request) -> None:
        # Another process, so that its operation is not the agent's own.
        target = mountpoint / "todo.md"
        subprocess.run(
            ["sh", "-c", 'printf -- "- eggs\\n" >> "$1"', "sh", str(target)],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        )
        edited = b"- milk\n- eggs\n"
        wait_for(lambda: _content(store, "todo.md") == edited, timeout=10, what="the edit")

    _script(model_server, person)
    events = list(run_agent("Keep notes.", mountpoint, client=model_server.client()))

    requests = model_server.requests
    assert len(requests) == 4
    assert [len(_notice_blocks(r)) for r in requests] == [0, 0, 1, 0]
    assert _notice_blocks(requests[2]) == [f"{NOTICE_START}{ME} (sh) edited /memories/todo.md."]
    assert sum(isinstance(e, NoticeAdded) for e in events) == 1
    # The agent's own writes went to the mount's store, by its actor, and show there.
    assert (mountpoint / "agent.md").read_text() == "ours\n"
    authors = {c.author for c in store.changes(0) if c.path == "agent.md"}
    assert authors == {"agent"}


def _content(store: Store, path: str) -> bytes | None:
    try:
        return store.read(path)[0]
    except NotFound:
        return None


def test_explicit_store_gives_authors_on_a_plain_directory(
    model_server: ModelServer, tmp_path: Path
) -> None:
    from memfs.store import open_store

    root = tmp_path / "memories"
    root.mkdir()
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    store = open_store(url)
    try:
        store.write("todo.md", b"- milk\n", author="vim")

        def person(_: Request) -> None:
            store.write("todo.md", b"- milk\n- eggs\n", author="vim")

        _script(model_server, person)
        list(run_agent("Keep notes.", root, client=model_server.client(), store_url=url))
    finally:
        store.close()
    notices = [_notice_blocks(r) for r in model_server.requests]
    assert notices == [[], [], [f"{NOTICE_START}vim edited /memories/todo.md."], []]


@pytest.mark.fuse
def test_cli_agent_on_the_default_mount(
    model_server: ModelServer, memfs_mount: Any, tmp_path: Path
) -> None:
    """`memfs agent` as its own process finds the mount by itself; the person is this
    test process, writing through the mounted path with plain open().write()."""
    import json
    import sys

    mountpoint = Path(memfs_mount.mountpoint)
    store = memfs_mount.store()
    me = Path("/proc/self/comm").read_text().strip()

    def person(_: Request) -> None:
        with open(mountpoint / "ideas.md", "w") as f:
            f.write("- a shared memory\n")
        wait_for(lambda: _content(store, "ideas.md") is not None, timeout=10, what="ideas.md")

    _script(model_server, person)
    transcript = tmp_path / "t.jsonl"
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test",
        "ANTHROPIC_BASE_URL": model_server.url,
        "MEMFS_MOUNTPOINT": str(mountpoint),  # the default root; MEMFS_STATE_DIR is set
    }
    memfs = Path(sys.executable).with_name("memfs")
    done = subprocess.run(
        [str(memfs), "agent", "--verbose", "--transcript", str(transcript), "Keep notes."],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Seen it.\n"
    expected = f"{NOTICE_START}{ME} ({me}) created /memories/ideas.md."
    assert [_notice_blocks(r) for r in model_server.requests] == [[], [], [expected], []]
    assert f"notice: {expected}\n" in done.stderr
    assert "memory create /memories/agent.md ok\n" in done.stderr
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    requests = [line["messages"] for line in lines if line["type"] == "request"]
    assert requests[2] == model_server.requests[2].messages
    assert (mountpoint / "agent.md").read_text() == "ours\n"


@pytest.mark.fuse
def test_a_vim_save_on_the_mount_is_one_edit(model_server: ModelServer, memfs_mount: Any) -> None:
    """vim's save (a swap file made and removed around the write) is one edit by vim.
    The rename-style saves of other editors are folded in tests/test_notices.py."""
    import re
    import shutil

    vim = shutil.which("vim") or shutil.which("vi")
    if vim is None:
        pytest.skip("vim is not installed (make test installs vim-tiny)")
    mountpoint = Path(memfs_mount.mountpoint)
    store = memfs_mount.store()
    (mountpoint / "todo.md").write_text("- milk\n")
    wait_for(lambda: _content(store, "todo.md") == b"- milk\n", timeout=10, what="todo.md")

    def person(_: Request) -> None:
        edit = ["-c", "%s/milk/oat milk/", "-c", "wq"]
        proc = subprocess.Popen(
            [vim, "-u", "NONE", "-i", "NONE", "-es", *edit, str(mountpoint / "todo.md")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
        edited = b"- oat milk\n"
        wait_for(lambda: _content(store, "todo.md") == edited, timeout=10, what="vim's save")

    _script(model_server, person)
    list(run_agent("Keep notes.", mountpoint, client=model_server.client()))
    notices = [_notice_blocks(r) for r in model_server.requests]
    assert [len(n) for n in notices] == [0, 0, 1, 0]
    pattern = rf"{re.escape(NOTICE_START)}{ME} \(vim[\w.]*\) edited /memories/todo\.md\."
    assert re.fullmatch(pattern, notices[2][0]), notices[2][0]


@pytest.mark.fuse
def test_rm_rf_of_5000_files_is_one_line_of_the_notice(
    model_server: ModelServer, memfs_mount: Any
) -> None:
    mountpoint = Path(memfs_mount.mountpoint)
    store = memfs_mount.store()
    with store.batch():
        for i in range(5000):
            store.write(f"many/{i}.md", b"x\n", author="seed", parents=True)
    wait_for(lambda: len(os.listdir(mountpoint / "many")) == 5000, what="the files")

    def person(_: Request) -> None:
        subprocess.run(["rm", "-rf", str(mountpoint / "many")], check=True, timeout=120)
        wait_for(lambda: not _exists(store, "many"), timeout=30, what="rm -rf committed")

    _script(model_server, person)
    # The person's rm runs while the model "thinks": the request waits for it.
    client = model_server.client(timeout=180.0)
    list(run_agent("Keep notes.", mountpoint, client=client))
    notices = [_notice_blocks(r) for r in model_server.requests]
    assert notices == [
        [],
        [],
        [f"{NOTICE_START}{ME} (rm) deleted 5,000 files, removed 1 directory in /memories/many/."],
        [],
    ]


def _exists(store: Any, path: str) -> bool:
    try:
        store.stat(path)
    except NotFound:
        return False
    return True
