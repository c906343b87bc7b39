"""``memfs mcp`` over stdio, through the ``mcp`` SDK's own client, on plain directories.

The ``memory`` tool must be the handler exactly: every result is compared, string for
string and flag for flag, with :class:`MemoryHandler` run on an identical directory,
and a few contract strings are spelled out. The hostile path corpus goes through every
command over MCP, refused with the handler's words, nothing touched inside or outside
the root. Also: the other tools' answers on a plain directory, resources, subscription
notices after a person's edit (watchdog), and a clean stop on SIGTERM.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from memfs.handler import MemoryHandler
from tests.fixtures.mcp import MEMFS, resource_text, stdio_client, text_of
from tests.hostile_paths import HOSTILE
from tests.test_handler_contract import JPEG, PNG
from tests.test_traversal import arena, commands_for, snapshot

__all__ = ["arena"]  # a fixture, imported for pytest

# Each step: the command and, for some, the contract's exact string.
STEPS: list[tuple[dict[str, Any], str | None]] = [
    ({"command": "view", "path": "/memories"}, None),
    (
        {"command": "create", "path": "/memories/notes.md", "file_text": "one\ntwo\nthree\n"},
        "File created successfully at: /memories/notes.md",
    ),
    ({"command": "create", "path": "/memories/notes.md", "file_text": "x"}, None),
    ({"command": "create", "path": "/memories/deep/er/file.md", "file_text": "deep\n"}, None),
    ({"command": "view", "path": "/memories"}, None),
    ({"command": "view", "path": "/memories/deep/"}, None),
    ({"command": "view", "path": "/memories/notes.md"}, None),
    ({"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]}, None),
    ({"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]}, None),
    ({"command": "view", "path": "/memories/notes.md", "view_range": [0, 9]}, None),
    ({"command": "view", "path": "/memories/notes.md", "view_range": [3, 2]}, None),
    ({"command": "view", "path": "/memories/notes.md", "view_range": "1-2"}, None),
    (
        {"command": "view", "path": "/memories/missing.md"},
        "The path /memories/missing.md does not exist. Please provide a valid path.",
    ),
    (
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "two", "new_str": "2"},
        None,
    ),
    (
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "nope", "new_str": "x"},
        None,
    ),
    ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "", "new_str": "x"}, None),
    ({"command": "create", "path": "/memories/twice.md", "file_text": "a\na\n"}, None),
    (
        {"command": "str_replace", "path": "/memories/twice.md", "old_str": "a", "new_str": "b"},
        None,
    ),
    ({"command": "str_replace", "path": "/memories/twice.md", "old_str": "a\na\n"}, None),
    ({"command": "str_replace", "path": "/memories/gone.md", "old_str": "a", "new_str": "b"}, None),
    (
        {
            "command": "insert",
            "path": "/memories/notes.md",
            "insert_line": 0,
            "insert_text": "top\n",
        },
        None,
    ),
    (
        {"command": "insert", "path": "/memories/notes.md", "insert_line": 99, "insert_text": "x"},
        None,
    ),
    (
        {"command": "insert", "path": "/memories/notes.md", "insert_line": "1", "insert_text": "x"},
        None,
    ),
    (
        {"command": "insert", "path": "/memories/nope.md", "insert_line": 0, "insert_text": "x"},
        None,
    ),
    ({"command": "view", "path": "/memories/notes.md"}, None),
    ({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/a/b.md"}, None),
    ({"command": "rename", "old_path": "/memories/a/b.md", "new_path": "/memories/twice.md"}, None),
    ({"command": "rename", "old_path": "/memories/absent", "new_path": "/memories/x"}, None),
    ({"command": "rename", "old_path": "/memories/deep", "new_path": "/memories/deep/in"}, None),
    ({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}, None),
    ({"command": "delete", "path": "/memories/deep"}, "Successfully deleted /memories/deep"),
    ({"command": "delete", "path": "/memories/deep"}, None),
    ({"command": "delete", "path": "/memories"}, None),
    ({"command": "view", "path": "/memories/pic.png"}, None),
    ({"command": "view", "path": "/memories/fake.png"}, None),
    ({"command": "view", "path": "/memories/bin.dat"}, None),
    ({"command": "create", "path": "/memories/big.md", "file_text": "x" * 200_000}, None),
    ({"command": "create", "path": "/memories/t.md"}, None),
    ({"command": "create", "path": 7, "file_text": "x"}, None),
    ({"command": "teleport", "path": "/memories"}, None),
    ({"path": "/memories"}, None),
    ({"command": "view", "path": "/memories"}, None),
]


def seed(root: Path) -> None:
    root.mkdir()
    (root / "pic.png").write_bytes(PNG)
    (root / "fake.png").write_bytes(JPEG)
    (root / "bin.dat").write_bytes(b"ok\xff\xfe")


def as_handler_result(result: types.CallToolResult) -> tuple[Any, bool]:
    if all(isinstance(block, types.TextContent) for block in result.content):
        return text_of(result), result.is_error
    images = []
    for block in result.content:
        assert isinstance(block, types.ImageContent)
        source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
        images.append({"type": "image", "source": source})
    return images, result.is_error


def test_the_memory_tool_answers_exactly_as_the_handler(tmp_path: Path) -> None:
    over_mcp, direct = tmp_path / "mcp", tmp_path / "direct"
    seed(over_mcp)
    seed(direct)
    handler = MemoryHandler(direct)

    async def run() -> None:
        async with stdio_client(["--root", str(over_mcp)]) as (client, _):
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == [
                "memory",
                "memory_search",
                "memory_history",
            ]
            memory = tools.tools[0]
            assert set(memory.input_schema["properties"]) == {
                "command",
                "path",
                "view_range",
                "file_text",
                "old_str",
                "new_str",
                "insert_line",
                "insert_text",
                "old_path",
                "new_path",
            }
            for command, exact in STEPS:
                got = as_handler_result(await client.call_tool("memory", command))
                want = handler.execute(command)
                assert got == (want.content, want.is_error), command
                if exact is not None:
                    assert got[0] == exact, command

    anyio.run(run)
    assert sorted(p.name for p in over_mcp.rglob("*")) == sorted(p.name for p in direct.rglob("*"))
    image = MemoryHandler(direct).execute({"command": "view", "path": "/memories/pic.png"})
    assert base64.b64decode(image.content[0]["source"]["data"]) == PNG  # type: ignore[index]


def test_the_create_overwrites_and_size_options_reach_the_handler(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    (root / "a.md").write_text("old\n")

    async def run() -> tuple[str, str]:
        args = ["--root", str(root), "--create-overwrites", "--max-file-bytes", "10"]
        async with stdio_client(args) as (client, _):
            replaced = await client.call_tool(
                "memory", {"command": "create", "path": "/memories/a.md", "file_text": "new\n"}
            )
            big = await client.call_tool(
                "memory", {"command": "create", "path": "/memories/b.md", "file_text": "x" * 11}
            )
            assert not replaced.is_error and big.is_error
            return text_of(replaced), text_of(big)

    replaced, big = anyio.run(run)
    assert replaced == "File created successfully at: /memories/a.md"
    assert (root / "a.md").read_text() == "new\n"
    expected = MemoryHandler(tmp_path / "ref", max_file_bytes=10).execute(
        {"command": "create", "path": "/memories/b.md", "file_text": "x" * 11}
    )
    assert big == expected.content


def _sendable(path: object) -> bool:
    """JSON carries no bytes, and the SDK's client refuses to encode lone surrogates."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not isinstance(path, bytes)


def test_every_hostile_path_is_refused_over_mcp_with_nothing_touched(arena: Path) -> None:
    root = arena / "memories"
    reference = MemoryHandler(root)
    hostile = [h for h in HOSTILE if _sendable(h.path)]
    assert len(hostile) > 150
    outside_before = snapshot(arena, prune="memories")
    inside_before = snapshot(root)

    async def run() -> int:
        sent = 0
        async with stdio_client(["--root", str(root)]) as (client, _):
            for entry in hostile:
                for command in commands_for(entry.path):
                    result = await client.call_tool("memory", command)
                    assert result.is_error, (entry.label, command)
                    text = text_of(result)
                    assert text.startswith("Error:"), (entry.label, text)
                    assert text == reference.execute(command).content, entry.label
                    sent += 1
        return sent

    sent = anyio.run(run)
    assert sent == 10 * len(hostile)
    assert snapshot(arena, prune="memories") == outside_before
    assert snapshot(root) == inside_before


def test_search_reads_a_plain_directory_and_history_says_why_not(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("alpha\nbeta\n")
    (root / "sub" / "b.md").write_text("gamma\nAlphabet soup\n")
    (tmp_path / "outside.md").write_text("alpha outside\n")

    async def run() -> list[types.CallToolResult]:
        async with stdio_client(["--root", str(root)]) as (client, _):
            return [
                await client.call_tool("memory_search", {"query": "alpha"}),
                await client.call_tool(
                    "memory_search", {"query": "alpha", "path": "/memories/sub"}
                ),
                await client.call_tool("memory_search", {"query": "(", "regex": True}),
                await client.call_tool("memory_search", {"query": "x", "path": "/memories/.."}),
                await client.call_tool("memory_history", {"path": "/memories/a.md"}),
                await client.call_tool("memory_history", {"path": "/memories/../etc"}),
                await client.call_tool("nonsense", {}),
            ]

    found, below, bad_regex, bad_path, history, hostile, unknown = anyio.run(run)
    assert not found.is_error
    lines = text_of(found).split("\n")
    assert lines[0] == "2 files in /memories match 'alpha', best first:"
    assert sorted(lines[1:]) == sorted(
        ["/memories/a.md", "     1\talpha", "/memories/sub/b.md", "     2\tAlphabet soup"]
    )
    assert text_of(below) == (
        "1 file in /memories/sub match 'alpha', best first:\n"
        "/memories/sub/b.md\n     2\tAlphabet soup"
    )
    assert bad_regex.is_error and text_of(bad_regex).startswith("Error: ")
    assert bad_path.is_error
    assert text_of(bad_path) == (
        "Error: The path /memories/.. is not allowed: it contains a '..' segment."
    )
    assert history.is_error
    assert text_of(history) == (
        f"Error: No history here: {root} is a plain directory, not a memfs store; "
        "only a memfs mount or store keeps revisions."
    )
    assert hostile.is_error
    assert text_of(hostile) == (
        "Error: The path /memories/../etc is not allowed: it contains a '..' segment."
    )
    assert unknown.is_error
    assert text_of(unknown) == (
        "Error: There is no tool 'nonsense'; the tools are memory, memory_search, memory_history."
    )


def test_resources_list_and_read_the_files_a_model_can_address(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    (root / "dir with space").mkdir(parents=True)
    (root / "dir with space" / "ünï.md").write_text("héllo\n")
    (root / "a.txt").write_text("plain\n")
    (root / "pic.png").write_bytes(PNG)
    (root / ".hidden.md").write_text("hidden\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.js").write_text("x\n")
    (root / "outside.md").symlink_to(tmp_path)
    (tmp_path / "secret.md").write_text("secret\n")

    async def run() -> tuple[Any, ...]:
        async with stdio_client(["--root", str(root)]) as (client, _):
            listed = await client.list_resources()
            text = await client.read_resource(
                "memory:///memories/dir%20with%20space/%C3%BCn%C3%AF.md"
            )
            image = await client.read_resource("memory:///memories/pic.png")
            errors = []
            for uri in (
                "memory:///memories/outside.md/secret.md",
                "memory:///memories/../secret.md",
                "memory:///memories/missing.md",
                "file:///etc/passwd",
            ):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(uri)
                errors.append(caught.value.message)
            return listed, text, image, errors

    listed, text, image, errors = anyio.run(run)
    assert [(r.uri, r.name, r.mime_type, r.size) for r in listed.resources] == [
        ("memory:///memories/a.txt", "/memories/a.txt", "text/plain", 6),
        (
            "memory:///memories/dir%20with%20space/%C3%BCn%C3%AF.md",
            "/memories/dir with space/ünï.md",
            "text/markdown",
            7,
        ),
        ("memory:///memories/pic.png", "/memories/pic.png", "image/png", len(PNG)),
    ]
    assert text.contents[0].text == "héllo\n"
    assert base64.b64decode(image.contents[0].blob) == PNG
    assert errors[0].startswith("No file at /memories/outside.md/secret.md")
    assert (
        errors[1]
        == "Error: The path /memories/../secret.md is not allowed: it contains a '..' segment."
    )
    assert errors[2].startswith("No file at /memories/missing.md")
    assert errors[3].startswith("Error: The resource 'file:///etc/passwd' is not a memfs resource")


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a_person_editing_a_subscribed_file_notifies_the_client(tmp_path: Path, mode: str) -> None:
    """watchdog on a plain directory; both protocol eras' subscriptions."""
    root = tmp_path / "mem"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "todo.md").write_text("- one\n")
    uri = "memory:///memories/sub/todo.md"

    async def run() -> str:
        async with stdio_client(["--root", str(root)], mode=mode) as (client, notices):
            if mode == "legacy":
                await client.session.subscribe_resource(uri)
                (root / "sub" / "todo.md").write_text("- one\n- two\n")  # a person's save
                await notices.wait_updated(uri)
                assert "memory:///memories/sub/other.md" not in notices.updated()
            else:
                async with client.listen(resource_subscriptions=[uri]) as events:
                    (root / "sub" / "todo.md").write_text("- one\n- two\n")
                    with anyio.fail_after(10):
                        async for event in events:
                            if getattr(event, "uri", None) == uri:
                                break
            return resource_text(await client.read_resource(uri))

    assert anyio.run(run) == "- one\n- two\n"


def test_sigterm_stops_a_stdio_server_at_once_while_its_client_is_connected(
    tmp_path: Path,
) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    proc = subprocess.Popen(
        [MEMFS, "mcp", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == f"memfs mcp: serving {root} over stdio\n"
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0  # stdin still open: the signal alone ends it
        assert time.monotonic() - started < 10
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert os.listdir(root) == []
