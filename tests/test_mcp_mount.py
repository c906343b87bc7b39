"""``memfs mcp`` on a real memfs mount: attribution, notices, history, search, --store.

Every client here is the ``mcp`` SDK's own, talking to ``memfs mcp`` processes over
stdio or streamable HTTP; the mount is a real FUSE mount of a real SQLite store, and
people are this test process reading and writing the mountpoint.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from memfs.mount import state
from memfs.store import open_store
from tests.fixtures.mcp import (
    McpProcess,
    Notices,
    http_client,
    resource_text,
    stdio_client,
    text_of,
)
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for

pytestmark = [pytest.mark.fuse, pytest.mark.filterwarnings("ignore:resources/subscribe is removed")]

ROUNDS = 10


def test_two_clients_edit_at_once_each_attributed_and_seen_at_once(
    mount_factory: Callable[..., MountHandle], mcp_http: Callable[..., McpProcess]
) -> None:
    mount = mount_factory()
    server = mcp_http("--root", str(mount.mountpoint))
    (mount.mountpoint / "shared.md").write_text("start\n")

    async def edit(name: str) -> str:
        async with http_client(server.url, name) as (client, _):
            created = await client.call_tool(
                "memory",
                {"command": "create", "path": f"/memories/{name}.md", "file_text": f"{name}\n"},
            )
            assert not created.is_error, text_of(created)
            for i in range(ROUNDS):
                result = await client.call_tool(
                    "memory",
                    {
                        "command": "insert",
                        "path": "/memories/shared.md",
                        "insert_line": 1,
                        "insert_text": f"{name} {i}\n",
                    },
                )
                assert not result.is_error, text_of(result)
            other = "bob" if name == "alice" else "alice"
            # The other client's file, once it has made it: visible through the mount at once.
            with anyio.fail_after(30):
                while True:
                    seen = await client.call_tool(
                        "memory", {"command": "view", "path": f"/memories/{other}.md"}
                    )
                    if not seen.is_error:
                        return text_of(seen)
                    await anyio.sleep(0.02)

    async def both() -> list[str]:
        views: list[str] = ["", ""]

        async def one(index: int, name: str) -> None:
            views[index] = await edit(name)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one, 0, "alice")
            tasks.start_soon(one, 1, "bob")
        return views

    alice_saw, bob_saw = anyio.run(both)
    assert alice_saw.endswith("     1\tbob")
    assert bob_saw.endswith("     1\talice")
    # A person sees every edit of both, none lost.
    lines = (mount.mountpoint / "shared.md").read_text().splitlines()
    assert lines[0] == "start"
    assert sorted(lines[1:]) == sorted(f"{n} {i}" for n in ("alice", "bob") for i in range(ROUNDS))
    store = mount.store()
    # Each client is its actor, by its whole name; the pid is no part of it.
    alice, bob = "mcp:alice", "mcp:bob"
    assert [r.author for r in store.history("alice.md")] == [alice]
    assert [r.author for r in store.history("bob.md")] == [bob]
    authors = [r.author for r in store.history("shared.md")]
    assert authors.count(alice) + authors.count(bob) >= min(len(authors) - 1, 2 * ROUNDS)
    assert alice in authors and bob in authors


def test_a_persons_edit_through_the_mount_notifies_a_subscribed_client(
    memfs_mount: MountHandle,
) -> None:
    mnt = memfs_mount.mountpoint
    (mnt / "notes").mkdir()
    (mnt / "notes" / "todo.md").write_text("- one\n")
    uri = "memory:///memories/notes/todo.md"

    async def run() -> tuple[str, list[str]]:
        async with stdio_client(["--root", str(mnt)], "watcher") as (client, notices):
            await client.session.subscribe_resource(uri)
            await client.session.subscribe_resource("memory:///memories/notes")
            before = len(notices.updated())
            with open(mnt / "notes" / "todo.md", "a") as f:  # a person's editor
                f.write("- two\n")
            await notices.wait_updated(uri)
            return resource_text(await client.read_resource(uri)), notices.updated()[before:]

    text, updated = anyio.run(run)
    assert text == "- one\n- two\n"
    assert uri in updated and "memory:///memories/notes" in updated


def test_rm_rf_of_5000_files_is_one_update_of_their_directory_with_its_summary(
    memfs_mount: MountHandle,
) -> None:
    """One operation, one notification per subscribed URI: the directory that holds the
    files (and the root above it) once each, with the operation's summary; a file's own
    subscriber still hears of its file, and a one-file operation notifies that file."""
    mnt = memfs_mount.mountpoint
    store = memfs_mount.store()
    with store.batch():
        for i in range(5000):
            store.write(f"many/d{i % 10}/{i}.md", b"x\n", author="seed", parents=True)
    (mnt / "keep.md").write_text("keep\n")
    wait_for(lambda: len(os.listdir(mnt / "many" / "d9")) == 500, what="the files on the mount")
    many, root, one = (
        "memory:///memories/many",
        "memory:///memories",
        "memory:///memories/many/d3/13.md",
    )
    keep = "memory:///memories/keep.md"
    me = pwd.getpwuid(os.getuid()).pw_name
    summary = f"{me} (rm) deleted 5,000 files, removed 11 directories in /memories/many/"

    async def run() -> Notices:
        async with stdio_client(["--root", str(mnt)], "watcher") as (client, notices):
            for uri in (many, root, one, keep):
                await client.session.subscribe_resource(uri)
            rm = await anyio.run_process(["rm", "-rf", str(mnt / "many")], check=True)
            assert rm.returncode == 0
            await notices.wait_updated(many, timeout=60)
            with open(mnt / "keep.md", "a") as f:  # a later operation of one file
                f.write("more\n")
            await notices.wait_updated(keep, timeout=30)
            # Its directory hears of it too, in a notification of its own.
            await notices.wait_updated(root, timeout=30, times=2)
            return notices

    notices = anyio.run(run)
    updated = notices.updated()
    assert updated.count(many) == 1 and updated.count(root) == 2 and updated.count(one) == 1
    assert notices.summaries(many) == [summary]
    assert notices.summaries(one) == [summary]
    comm = Path("/proc/self/comm").read_text().strip()  # the person: this test process
    assert notices.summaries(keep) == [f"{me} ({comm}) edited /memories/keep.md"]
    assert len(updated) == 5


def test_another_agents_edit_reaches_a_listening_client_over_http(
    memfs_mount: MountHandle, mcp_http: Callable[..., McpProcess]
) -> None:
    """The 2026-07-28 era: subscriptions/listen, the change made by another client."""
    mnt = memfs_mount.mountpoint
    (mnt / "plan.md").write_text("plan\n")
    server = mcp_http("--root", str(mnt))
    uri = "memory:///memories/plan.md"

    async def run() -> str:
        async with (
            http_client(server.url, "listener", mode="2026-07-28") as (listener, _),
            http_client(server.url, "writer") as (writer, _),
            listener.listen(resource_subscriptions=[uri]) as events,
        ):
            edit = {"command": "str_replace", "path": "/memories/plan.md", "old_str": "plan"}
            edit["new_str"] = "better plan"
            assert not (await writer.call_tool("memory", edit)).is_error
            with anyio.fail_after(10):
                async for event in events:
                    if getattr(event, "uri", None) == uri:
                        break
            return resource_text(await listener.read_resource(uri))

    assert anyio.run(run) == "better plan\n"


def test_history_lists_reads_and_restores_revisions_on_a_mount(memfs_mount: MountHandle) -> None:
    mnt = memfs_mount.mountpoint

    async def run() -> tuple[str, ...]:
        async with stdio_client(["--root", str(mnt)], "carol") as (client, _):
            await client.call_tool(
                "memory", {"command": "create", "path": "/memories/a.md", "file_text": "v1\n"}
            )
            await client.call_tool(
                "memory",
                {
                    "command": "str_replace",
                    "path": "/memories/a.md",
                    "old_str": "v1",
                    "new_str": "v2",
                },
            )
            listed = text_of(await client.call_tool("memory_history", {"path": "/memories/a.md"}))
            first = int(listed.splitlines()[-1].split()[1])
            old = await client.call_tool("memory_history", {"path": "/memories/a.md", "rev": first})
            restored = await client.call_tool(
                "memory_history", {"path": "/memories/a.md", "rev": first, "restore": True}
            )
            missing = await client.call_tool(
                "memory_history", {"path": "/memories/a.md", "rev": 99999}
            )
            assert missing.is_error
            return listed, text_of(old), text_of(restored), text_of(missing)

    listed, old, restored, missing = anyio.run(run)
    store = memfs_mount.store()
    revisions = store.history("a.md")
    pids = {r.author for r in revisions}
    assert pids == {"mcp:carol"}
    lines = listed.splitlines()
    assert lines[0] == "Revisions of /memories/a.md, newest first:"
    assert len(lines) == 3 and all("  mcp:carol  " in line for line in lines[1:])
    first = revisions[-1].rev
    assert old.splitlines()[1:] == ["v1"]
    assert old.startswith(f"/memories/a.md at revision {first} (")
    assert restored == (
        f"Restored /memories/a.md to revision {first}; the file is now revision {revisions[0].rev}."
    )
    wait_for(lambda: (mnt / "a.md").read_text() == "v1\n", what="the restore through the mount")
    assert missing.startswith("Error: /memories/a.md has no revision 99999; its revisions: ")


def test_search_answers_from_the_stores_index_on_a_mount(memfs_mount: MountHandle) -> None:
    mnt = memfs_mount.mountpoint
    (mnt / "proj").mkdir()
    (mnt / "proj" / "x.md").write_text("the zebra line\nother\n")
    (mnt / "y.md").write_text("no match\n")

    async def run() -> tuple[str, str]:
        async with stdio_client(["--root", str(mnt / "proj")], "finder") as (client, _):
            found = await client.call_tool("memory_search", {"query": "zebra"})
            nothing = await client.call_tool("memory_search", {"query": "match"})
            return text_of(found), text_of(nothing)

    found, nothing = anyio.run(run)
    # The server's root is a directory inside the mount: paths are relative to it.
    assert (
        found
        == "1 file in /memories match 'zebra', best first:\n/memories/x.md\n     1\tthe zebra line"
    )
    assert nothing == "No file in /memories matches 'match'."


def test_store_url_mounts_privately_and_sigterm_unmounts_it(
    tmp_path: Path, memfs_state_dir: Path, mcp_http: Callable[..., McpProcess]
) -> None:
    url = sqlite_url(tmp_path / "private.db")
    server = mcp_http("--store", url)
    private = memfs_state_dir / "mcp" / str(server.proc.pid)
    assert any(Path(r.mountpoint) == private for r in state.records())

    async def run() -> None:
        async with http_client(server.url, "dave") as (client, _):
            result = await client.call_tool(
                "memory", {"command": "create", "path": "/memories/x.md", "file_text": "kept\n"}
            )
            assert not result.is_error

    anyio.run(run)
    assert server.stop() == 0
    assert not private.exists()
    assert state.records() == []
    with open_store(url) as store:
        data, _ = store.read("x.md")
        assert data == b"kept\n"
        assert [r.author for r in store.history("x.md")] == ["mcp:dave"]


def test_clients_are_told_apart_by_their_whole_names(memfs_mount: MountHandle) -> None:
    """The kernel keeps 15 bytes of a thread name; the actor keeps the whole client name."""
    names = ["check-client-a", "check-client-b", "a-client-with-a-rather-long-name \x07bell"]

    async def run() -> None:
        for i, name in enumerate(names):
            args = ["--root", str(memfs_mount.mountpoint)]
            async with stdio_client(args, name=name) as (client, _):
                done = await client.call_tool(
                    "memory",
                    {"command": "create", "path": f"/memories/c{i}.md", "file_text": "x\n"},
                )
                assert not done.is_error, text_of(done)

    anyio.run(run)
    store = memfs_mount.store()
    actors = [store.history(f"c{i}.md")[0].author for i in range(len(names))]
    # A control character a client sends becomes a space: an actor is one printable line.
    assert actors == [
        "mcp:check-client-a",
        "mcp:check-client-b",
        "mcp:a-client-with-a-rather-long-name  bell",
    ]
