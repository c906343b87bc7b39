"""The secrets policy at every door that serves the model: the library handler, the SDK
adapter, ``memfs tool`` (CliRunner and the installed command), the agent loop against
the scripted Messages API, and a real mount whose SQLite file must never hold a secret.
Every corpus case goes through each policy with exact result strings."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from click.testing import CliRunner

from memfs import MemoryHandler, MemoryTool
from memfs.agent import AgentSession
from memfs.cli import main
from memfs.secrets import scan
from tests.fixtures.model_server import ModelServer, memory, reply, text
from tests.fixtures.mount import MountHandle
from tests.secrets_corpus import CREDENTIALS, LOOK_ALIKES, Case

CAUGHT = [c for c in CREDENTIALS if c.caught]
POLICIES = ("redact", "refuse", "allow")
PATH = "/memories/note.md"
CREATED = f"File created successfully at: {PATH}"


def note(field: str, items: list[tuple[int, str, str]]) -> str:
    n = len(items)
    head = (
        f"\n\nNote: memfs replaced {n} likely credential{'s' if n != 1 else ''} in the {field} "
        "with [REDACTED:kind] markers before storing it, because credentials must not be "
        "stored in memory (keep a pointer to where they live instead):\n"
    )
    return head + "\n".join(f"- {field} line {ln}: [REDACTED:{k}], {why}" for ln, k, why in items)


def refusal(field: str, items: list[tuple[int, str]], path: str = PATH) -> str:
    n = len(items)
    listed = ", ".join(f"{k} on line {ln}" for ln, k in items)
    return (
        f"Error: The {field} for {path} contains {n} likely credential{'s' if n != 1 else ''} "
        f"({listed}); credentials must not be stored in memory. Nothing was written. "
        "Leave the credential out, or write where it is kept (a vault entry, an "
        "environment variable) instead."
    )


def line_of(case: Case, offset: int = 0) -> int:
    return case.text[: case.text.index(case.secret)].count("\n") + 1 + offset


def why(case: Case) -> str:
    return scan(case.text)[0].why


def redacted(case: Case) -> str:
    return case.text.replace(case.secret, f"[REDACTED:{case.kind}]")


def expected_create(case: Case, policy: str) -> tuple[str, bool, str | None]:
    """(content, is_error, file text or None) for creating ``case`` under ``policy``."""
    if policy == "allow":
        return CREATED, False, case.text
    assert case.kind is not None
    if policy == "refuse":
        return refusal("file_text", [(line_of(case), case.kind)]), True, None
    return (
        CREATED + note("file_text", [(line_of(case), case.kind, why(case))]),
        False,
        redacted(case),
    )


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.name)
def test_create_under_each_policy(tmp_path: Path, case: Case, policy: str) -> None:
    handler = MemoryHandler(tmp_path, secrets=policy)
    content, is_error, stored = expected_create(case, policy)
    assert handler.create(PATH, case.text) == (content, is_error)
    file = tmp_path / "note.md"
    assert (file.read_text() if file.exists() else None) == stored


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", LOOK_ALIKES, ids=lambda c: c.name)
def test_look_alikes_are_written_as_sent(tmp_path: Path, case: Case, policy: str) -> None:
    handler = MemoryHandler(tmp_path, secrets=policy)
    assert handler.create(PATH, case.text) == (CREATED, False)
    assert (tmp_path / "note.md").read_text() == case.text


@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.name)
def test_str_replace_scans_new_str(tmp_path: Path, case: Case) -> None:
    assert case.kind is not None
    (tmp_path / "note.md").write_text("start\nend\n")
    refused = MemoryHandler(tmp_path, secrets="refuse").str_replace(PATH, "end", case.text)
    assert refused == (refusal("new_str", [(line_of(case), case.kind)]), True)
    assert (tmp_path / "note.md").read_text() == "start\nend\n"

    result = MemoryHandler(tmp_path).str_replace(PATH, "end", case.text)
    assert not result.is_error
    assert isinstance(result.content, str)
    header = "The memory file has been edited. Here is the snippet showing the change"
    assert result.content.startswith(header)
    assert result.content.endswith(note("new_str", [(line_of(case), case.kind, why(case))]))
    assert f"[REDACTED:{case.kind}]" in result.content.split("\n\nNote:")[0]
    assert case.secret not in result.content
    assert (tmp_path / "note.md").read_text() == "start\n" + redacted(case) + "\n"


@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.name)
def test_insert_scans_insert_text(tmp_path: Path, case: Case) -> None:
    assert case.kind is not None
    (tmp_path / "note.md").write_text("start\nend\n")
    refused = MemoryHandler(tmp_path, secrets="refuse").insert(PATH, 1, case.text)
    assert refused == (refusal("insert_text", [(line_of(case), case.kind)]), True)
    assert (tmp_path / "note.md").read_text() == "start\nend\n"

    result = MemoryHandler(tmp_path).insert(PATH, 1, case.text)
    expected = f"The file {PATH} has been edited." + note(
        "insert_text", [(line_of(case), case.kind, why(case))]
    )
    assert result == (expected, False)
    assert (tmp_path / "note.md").read_text() == "start\n" + redacted(case) + "end\n"


def test_old_str_is_not_scanned_so_a_stored_secret_can_be_edited_out(tmp_path: Path) -> None:
    case = CAUGHT[0]
    MemoryHandler(tmp_path, secrets="allow").create(PATH, case.text)
    for policy in ("redact", "refuse"):
        handler = MemoryHandler(tmp_path, secrets=policy)
        assert handler.str_replace(PATH, case.secret, case.secret) == (
            (refusal("new_str", [(1, "aws-access-key")]), True)
            if policy == "refuse"
            else (
                "The memory file has been edited. Here is the snippet showing the change "
                "(with line numbers):\n     1\taws_access_key_id = [REDACTED:aws-access-key]"
                + note("new_str", [(1, "aws-access-key", "an AWS access key ID")]),
                False,
            )
        )
    MemoryHandler(tmp_path, secrets="allow").create("/memories/b.md", case.text)
    result = MemoryHandler(tmp_path, secrets="refuse").str_replace(
        "/memories/b.md", case.secret, "(in the vault)"
    )
    assert result == (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n     1\taws_access_key_id = (in the vault)",
        False,
    )


def test_several_findings_and_uniqueness_checks_over_markers(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path)
    body = "a AKIAUYV046EWA0RQIJML\nb AKIAZ3MPLQ7RTY2VWX4B\nDB_PASSWORD=Tr0ub4dor&3\n"
    assert handler.create(PATH, body) == (
        CREATED
        + note(
            "file_text",
            [
                (1, "aws-access-key", "an AWS access key ID"),
                (2, "aws-access-key", "an AWS access key ID"),
                (3, "password-assignment", "a password assigned to DB_PASSWORD"),
            ],
        ),
        False,
    )
    # Both keys became the same marker: old_str must be made unique as for any text.
    assert handler.str_replace(PATH, "[REDACTED:aws-access-key]", "x") == (
        "No replacement was performed. Multiple occurrences of old_str "
        "`[REDACTED:aws-access-key]` in lines: 1, 2. Please ensure it is unique",
        True,
    )
    assert handler.view(PATH) == (
        f"Here's the content of {PATH} with line numbers:\n"
        "     1\ta [REDACTED:aws-access-key]\n"
        "     2\tb [REDACTED:aws-access-key]\n"
        "     3\tDB_PASSWORD=[REDACTED:password-assignment]",
        False,
    )


def test_a_write_that_fails_anyway_carries_no_note(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path)
    handler.create(PATH, "x\n")
    assert handler.create(PATH, CAUGHT[0].text) == (f"Error: File {PATH} already exists", True)
    # The policy answers first under refuse: nothing would be written either way.
    assert MemoryHandler(tmp_path, secrets="refuse").create(PATH, CAUGHT[0].text) == (
        refusal("file_text", [(1, "aws-access-key")]),
        True,
    )


def test_an_unknown_policy_is_refused_up_front(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="secrets policy must be one of"):
        MemoryHandler(tmp_path, secrets="warn")
    with pytest.raises(ValueError, match="secrets policy must be one of"):
        MemoryTool(tmp_path, secrets="off")


def test_the_sdk_adapter_passes_the_policy(tmp_path: Path) -> None:
    case = CAUGHT[0]
    command = {"command": "create", "path": PATH, "file_text": case.text}
    with pytest.raises(ToolError) as err:
        MemoryTool(tmp_path, secrets="refuse").call(command)
    assert err.value.content == refusal("file_text", [(1, "aws-access-key")])
    assert MemoryTool(tmp_path).call(command) == expected_create(case, "redact")[0]


def _lines(results: list[tuple[Any, bool]]) -> str:
    return "".join(
        json.dumps({"content": c, "is_error": e}, ensure_ascii=False) + "\n" for c, e in results
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_memfs_tool_streams_the_corpus_under_each_policy(tmp_path: Path, policy: str) -> None:
    cases = [*CAUGHT, *LOOK_ALIKES]
    commands = [
        {"command": "create", "path": f"/memories/{i}.md", "file_text": c.text}
        for i, c in enumerate(cases)
    ]
    expected: list[tuple[Any, bool]] = []
    for i, case in enumerate(cases):
        content, is_error, _ = (
            expected_create(case, policy) if case.kind else (CREATED, False, case.text)
        )
        expected.append((content.replace(PATH, f"/memories/{i}.md"), is_error))
    stdin = "".join(json.dumps(c) + "\n" for c in commands)
    result = CliRunner().invoke(
        main, ["tool", "--root", str(tmp_path), "--secrets", policy], input=stdin
    )
    assert result.exit_code == 0, result.output
    assert result.output == _lines(expected)
    for i, case in enumerate(cases):
        file = tmp_path / f"{i}.md"
        if policy == "refuse" and case.kind:
            assert not file.exists()
        else:
            stored = redacted(case) if policy == "redact" and case.kind else case.text
            assert file.read_text() == stored


def test_memfs_tool_rejects_an_unknown_policy(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["tool", "--root", str(tmp_path), "--secrets", "warn"])
    assert result.exit_code == 2
    assert "Invalid value for '--secrets': 'warn' is not one of 'redact', 'refuse', 'allow'." in (
        result.output
    )


def test_the_installed_memfs_tool_refuses(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("memfs")
    command = json.dumps({"command": "create", "path": PATH, "file_text": CAUGHT[3].text})
    done = subprocess.run(
        [str(exe), "tool", "--root", str(tmp_path), "--secrets", "refuse", command],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == _lines([(refusal("file_text", [(1, "github-token")]), True)])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("policy", ["redact", "refuse"])
def test_the_agent_loop_sends_the_policy_s_result(
    model_server: ModelServer, tmp_path: Path, policy: str
) -> None:
    case = CAUGHT[0]
    model_server.script(
        reply(memory("t1", "create", path=PATH, file_text=case.text)), reply(text("Done."))
    )
    with AgentSession(tmp_path, client=model_server.client(), stream=False, secrets=policy) as s:
        list(s.ask("Remember my key."))
    content, is_error, _ = expected_create(case, policy)
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": content}
    if is_error:
        block["is_error"] = True
    assert model_server.requests[1].tool_results() == [block]


def test_memfs_agent_offers_the_option() -> None:
    result = CliRunner().invoke(main, ["agent", "--help"])
    assert "--secrets [redact|refuse|allow]" in result.output


@pytest.mark.fuse
def test_a_mount_s_store_never_receives_a_secret(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    mount = mount_factory()
    handler = MemoryHandler(mount.mountpoint)
    for i, case in enumerate(CAUGHT):
        path = f"/memories/{i}.md"
        content, is_error, _ = expected_create(case, "redact")
        assert handler.create(path, case.text) == (content.replace(PATH, path), is_error)
    store = mount.store()
    for i, case in enumerate(CAUGHT):
        assert store.read(f"{i}.md")[0].decode() == redacted(case)
    mount.stop()
    assert mount.db_path is not None
    raw = b"".join(p.read_bytes() for p in tmp_path.glob(mount.db_path.name + "*"))
    leaked = [c.name for c in CAUGHT if c.secret.encode() in raw]
    assert leaked == []
