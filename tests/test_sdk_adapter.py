"""The SDK adapter with the real anthropic SDK: declaration, exact strings, ToolError."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

import memfs
from memfs.handler import strings
from memfs.handler.sdk import MemoryTool

LISTING_HEADER = (
    "Here're the files and directories up to 2 levels deep in {path}, "
    "excluding hidden items and node_modules:"
)
NOT_AN_OBJECT = "Error: The memory tool input must be an object with a `command` field."
SNIPPET_HEADER = (
    "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "memories"


@pytest.fixture
def tool(root: Path) -> MemoryTool:
    return MemoryTool(root)


def refused(tool: MemoryTool, command: object) -> Any:
    with pytest.raises(ToolError) as info:
        tool.call(command)
    return info.value.content


def size_of(path: Path) -> str:
    return strings.human_size(os.lstat(path).st_size)


def tiny_png() -> bytes:
    """A real 1x1 PNG, so the image path is exercised with a decodable file."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_declaration_is_the_memory_tool(tool: MemoryTool) -> None:
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"
    assert isinstance(tool, BetaAbstractMemoryTool)
    # memfs.MemoryTool is this adapter, finding a mount's store by itself.
    assert issubclass(memfs.MemoryTool, MemoryTool)


def test_cache_control_is_declared(root: Path) -> None:
    tool = MemoryTool(root, cache_control={"type": "ephemeral"})
    assert tool.to_dict() == {
        "type": "memory_20250818",
        "name": "memory",
        "cache_control": {"type": "ephemeral"},
    }


def test_first_view_of_an_empty_store(tool: MemoryTool, root: Path) -> None:
    content = tool.call({"command": "view", "path": "/memories"})
    expected = LISTING_HEADER.format(path="/memories") + f"\n{size_of(root)}\t/memories"
    assert content == expected


def test_every_command_returns_the_contract_string(tool: MemoryTool, root: Path) -> None:
    created = tool.call(
        {"command": "create", "path": "/memories/notes.md", "file_text": "Hello\nWorld\n"}
    )
    assert created == "File created successfully at: /memories/notes.md"
    assert (root / "notes.md").read_bytes() == b"Hello\nWorld\n"

    assert tool.call({"command": "view", "path": "/memories/notes.md"}) == (
        "Here's the content of /memories/notes.md with line numbers:\n     1\tHello\n     2\tWorld"
    )
    assert tool.call({"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]}) == (
        "Here's the content of /memories/notes.md with line numbers:\n     2\tWorld"
    )

    replaced = tool.call(
        {
            "command": "str_replace",
            "path": "/memories/notes.md",
            "old_str": "World",
            "new_str": "There",
        }
    )
    assert replaced == SNIPPET_HEADER + "\n     1\tHello\n     2\tThere"
    assert (root / "notes.md").read_text() == "Hello\nThere\n"

    inserted = tool.call(
        {
            "command": "insert",
            "path": "/memories/notes.md",
            "insert_line": 1,
            "insert_text": "Dear\n",
        }
    )
    assert inserted == "The file /memories/notes.md has been edited."
    assert (root / "notes.md").read_text() == "Hello\nDear\nThere\n"

    renamed = tool.call(
        {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/d/n.md"}
    )
    assert renamed == "Successfully renamed /memories/notes.md to /memories/d/n.md"
    assert (root / "d" / "n.md").read_text() == "Hello\nDear\nThere\n"

    listing = tool.call({"command": "view", "path": "/memories"})
    assert listing == "\n".join(
        [
            LISTING_HEADER.format(path="/memories"),
            f"{size_of(root)}\t/memories",
            f"{size_of(root / 'd')}\t/memories/d/",
            "17B\t/memories/d/n.md",
        ]
    )

    assert tool.call({"command": "delete", "path": "/memories/d"}) == (
        "Successfully deleted /memories/d"
    )
    assert list(root.iterdir()) == []


def test_str_replace_without_new_str_deletes(tool: MemoryTool, root: Path) -> None:
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "keep drop keep\n"})
    content = tool.call({"command": "str_replace", "path": "/memories/a.md", "old_str": " drop"})
    assert content == SNIPPET_HEADER + "\n     1\tkeep keep"
    assert (root / "a.md").read_text() == "keep keep\n"


def test_errors_raise_tool_error_with_the_exact_string(tool: MemoryTool, root: Path) -> None:
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x\nx\n"})
    tool.call({"command": "create", "path": "/memories/b.md", "file_text": ""})
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {"command": "view", "path": "/memories/none.md"},
            "The path /memories/none.md does not exist. Please provide a valid path.",
        ),
        (
            {"command": "create", "path": "/memories/a.md", "file_text": "y"},
            "Error: File /memories/a.md already exists",
        ),
        (
            {"command": "str_replace", "path": "/memories/none.md", "old_str": "x"},
            "Error: The path /memories/none.md does not exist. Please provide a valid path.",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "y", "new_str": "z"},
            "No replacement was performed, old_str `y` did not appear verbatim in /memories/a.md.",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "x", "new_str": "z"},
            "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 2. "
            "Please ensure it is unique",
        ),
        (
            {"command": "insert", "path": "/memories/none.md", "insert_line": 0, "insert_text": ""},
            "Error: The path /memories/none.md does not exist",
        ),
        (
            {"command": "insert", "path": "/memories/a.md", "insert_line": 5, "insert_text": "y"},
            "Error: Invalid `insert_line` parameter: 5. It should be within the range of lines "
            "of the file: [0, 2]",
        ),
        (
            {"command": "delete", "path": "/memories/none.md"},
            "Error: The path /memories/none.md does not exist",
        ),
        (
            {"command": "delete", "path": "/memories"},
            "Error: Cannot delete the /memories directory itself",
        ),
        (
            {"command": "rename", "old_path": "/memories/none.md", "new_path": "/memories/c.md"},
            "Error: The path /memories/none.md does not exist",
        ),
        (
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"},
            "Error: The destination /memories/b.md already exists",
        ),
        (
            {"command": "rename", "old_path": "/memories", "new_path": "/memories/c"},
            "Error: Cannot rename the /memories directory itself",
        ),
        (
            {"command": "view", "path": "/memories/../secrets.env"},
            "Error: The path /memories/../secrets.env is not allowed: it contains a '..' segment.",
        ),
    ]
    for command, message in cases:
        assert refused(tool, command) == message, command
    # Nothing above changed a file.
    assert (root / "a.md").read_text() == "x\nx\n"
    assert (root / "b.md").read_text() == ""
    assert sorted(p.name for p in root.iterdir()) == ["a.md", "b.md"]


def test_create_overwrites_when_asked(root: Path) -> None:
    tool = MemoryTool(root, overwrite=True)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    again = tool.call({"command": "create", "path": "/memories/a.md", "file_text": "two\n"})
    assert again == "File created successfully at: /memories/a.md"
    assert (root / "a.md").read_text() == "two\n"


def test_max_file_bytes_is_passed_on(root: Path) -> None:
    tool = MemoryTool(root, max_file_bytes=4)
    content = refused(tool, {"command": "create", "path": "/memories/a.md", "file_text": "12345"})
    assert content.startswith("Error: The file_text for /memories/a.md is 5 bytes")
    assert not (root / "a.md").exists()


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ({"command": "bogus", "path": "/memories"}, "Error: unknown command bogus"),
        ({"command": 7}, "Error: unknown command 7"),
        (
            {"path": "/memories"},
            "Error: The memory tool input needs a `command` "
            "(one of view, create, str_replace, insert, delete, rename).",
        ),
        (
            "view /memories",
            "Error: The memory tool input must be an object with a `command` field.",
        ),
        (None, "Error: The memory tool input must be an object with a `command` field."),
        (["view"], "Error: The memory tool input must be an object with a `command` field."),
        (
            {"command": "create", "path": "/memories/a.md"},
            "Error: The `create` command needs `file_text` (a string).",
        ),
        (
            {"command": "view", "path": 5},
            "Error: The `view` command needs `path` (a string), got a number.",
        ),
    ],
    ids=["unknown", "non-string-command", "no-command", "text", "null", "array", "missing", "type"],
)
def test_malformed_input_is_a_tool_error_not_a_crash(
    tool: MemoryTool, command: object, message: str
) -> None:
    """The base class would raise NotImplementedError or AttributeError for these."""
    assert refused(tool, command) == message


def test_call_does_not_coerce_what_the_model_sent(tool: MemoryTool, root: Path) -> None:
    """The SDK's construct turns "1" into 1; the handler must see (and refuse) the string."""
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "a\nb\n"})
    content = refused(
        tool,
        {"command": "insert", "path": "/memories/a.md", "insert_line": "1", "insert_text": "x"},
    )
    assert content == (
        'Error: Invalid `insert_line` parameter: "1". It should be within the range of lines '
        "of the file: [0, 2]"
    )
    assert (root / "a.md").read_text() == "a\nb\n"


def test_typed_methods_and_execute_take_sdk_models(tool: MemoryTool, root: Path) -> None:
    create = BetaMemoryTool20250818CreateCommand(
        command="create", path="/memories/m.md", file_text="alpha beta\n"
    )
    assert tool.create(create) == "File created successfully at: /memories/m.md"
    view = BetaMemoryTool20250818ViewCommand(command="view", path="/memories/m.md")
    assert tool.execute(view) == (
        "Here's the content of /memories/m.md with line numbers:\n     1\talpha beta"
    )
    # What the base class's call() builds for a str_replace without new_str: an
    # unvalidated model with the field unset. It must stay a deletion, not "None".
    partial = BetaMemoryTool20250818StrReplaceCommand.construct(
        command="str_replace", path="/memories/m.md", old_str=" beta"
    )
    assert tool.str_replace(partial) == SNIPPET_HEADER + "\n     1\talpha"
    assert (root / "m.md").read_text() == "alpha\n"
    with pytest.raises(ToolError) as info:
        tool.delete(BetaMemoryTool20250818DeleteCommand.construct(command="delete", path="/x"))
    assert info.value.content == (
        "Error: The path /x is not allowed: it must be /memories or start with /memories/."
    )


def test_image_view_returns_content_blocks(tool: MemoryTool, root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "dot.png").write_bytes(tiny_png())
    blocks = tool.call({"command": "view", "path": "/memories/dot.png"})
    assert isinstance(blocks, list)
    assert len(blocks) == 1
    assert blocks[0]["type"] == "image"
    assert blocks[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(blocks[0]["source"]["data"]) == tiny_png()
