"""``memfs tool``: JSON lines in, one result line out per command, through click and a pipe."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.handler import strings

EXAMPLE = '{"command": "view", "path": "/memories"}'
HINT = f"send one command object per line, such as {EXAMPLE}"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "memories"
    path.mkdir()
    return path


def line(content: object, is_error: bool) -> str:
    return json.dumps({"content": content, "is_error": is_error}, ensure_ascii=False) + "\n"


def run(args: list[str], stdin: bytes | str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["tool", *args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_stream_answers_each_line_and_survives_bad_ones(root: Path) -> None:
    stdin = b"".join(
        [
            b'{"command": "create", "path": "/memories/a.md", "file_text": "h\xc3\xa9\\n"}\n',
            b"\n",
            b"   \n",
            b"not json\n",
            b"[1, 2]\n",
            b'"view"\n',
            b"\xff\xfe\n",
            b'{"command": "view", "path": "/memories/a.md"}\n',
            b'{"command": "delete", "path": "/memories/none"}',  # no final newline
        ]
    )
    code, output = run(["--root", str(root)], stdin)
    assert code == 0
    assert output == "".join(
        [
            line("File created successfully at: /memories/a.md", False),
            line(f"Error: line 4 is not valid JSON (Expecting value at column 1); {HINT}.", True),
            line(f"Error: line 5 is a JSON array, not an object; {HINT}.", True),
            line(f"Error: line 6 is a JSON string, not an object; {HINT}.", True),
            line(
                f"Error: line 7 is not valid UTF-8 (byte 0xff at offset 0); {HINT}, in UTF-8.", True
            ),
            line("Here's the content of /memories/a.md with line numbers:\n     1\thé", False),
            line("Error: The path /memories/none does not exist", True),
        ]
    )
    assert (root / "a.md").read_text() == "hé\n"


def test_stream_output_is_readable_utf8(root: Path) -> None:
    code, output = run(["--root", str(root)], '{"command": "view", "path": "/memories/café"}\n')
    assert code == 0
    assert "café" in output  # not \u00e9
    assert json.loads(output)["content"] == strings.view_missing("/memories/café")


def test_lone_surrogate_in_a_result_is_escaped_not_a_crash(root: Path) -> None:
    code, output = run(["--root", str(root)], '{"command": "\\ud800"}\n')
    assert code == 0
    output.encode("utf-8")  # the line can be written
    assert "\\ud800" in output
    assert json.loads(output) == {"content": "Error: unknown command \ud800", "is_error": True}


def test_empty_stream_prints_nothing(root: Path) -> None:
    assert run(["--root", str(root)], b"") == (0, "")


def test_one_command_success_exits_0(root: Path) -> None:
    code, output = run(
        ["--root", str(root), '{"command": "create", "path": "/memories/x.md", "file_text": ""}']
    )
    assert (code, output) == (0, line("File created successfully at: /memories/x.md", False))
    assert (root / "x.md").read_bytes() == b""


def test_one_command_error_prints_the_line_and_exits_1(root: Path) -> None:
    code, output = run(["--root", str(root), '{"command": "delete", "path": "/memories"}'])
    assert (code, output) == (1, line("Error: Cannot delete the /memories directory itself", True))
    assert root.is_dir()


@pytest.mark.parametrize(
    ("argument", "problem"),
    [
        ("{", "it is not valid JSON (Expecting property name enclosed in double quotes"),
        ("[]", "it is a JSON array, not an object"),
        ("null", "it is a JSON null, not an object"),
    ],
)
def test_malformed_command_json_is_a_usage_error(root: Path, argument: str, problem: str) -> None:
    code, output = run(["--root", str(root), argument])
    assert code == 2
    assert "Invalid value for COMMAND_JSON" in output
    assert problem in output
    assert f"give one command object, such as '{EXAMPLE}'" in output
    assert list(root.iterdir()) == []


def test_root_is_required(tmp_path: Path) -> None:
    code, output = run([EXAMPLE])
    assert code == 2
    assert "Missing option '--root'" in output


def test_root_must_exist(tmp_path: Path) -> None:
    code, output = run(["--root", str(tmp_path / "typo"), EXAMPLE])
    assert code == 2
    assert "does not exist" in output
    assert not (tmp_path / "typo").exists()


def test_create_overwrites_flag(root: Path) -> None:
    create = '{"command": "create", "path": "/memories/a.md", "file_text": "%s"}\n'
    strict = (create % "one") + (create % "two")
    code, output = run(["--root", str(root)], strict)
    assert code == 0
    assert output.splitlines()[1] == line("Error: File /memories/a.md already exists", True).strip()
    assert (root / "a.md").read_text() == "one"
    code, output = run(["--root", str(root), "--create-overwrites"], create % "three")
    assert code == 0
    assert output == line("File created successfully at: /memories/a.md", False)
    assert (root / "a.md").read_text() == "three"


def test_max_file_bytes_option(root: Path) -> None:
    command = '{"command": "create", "path": "/memories/a.md", "file_text": "12345"}'
    code, output = run(["--root", str(root), "--max-file-bytes", "4", command])
    assert code == 1
    assert json.loads(output)["content"] == strings.too_large("/memories/a.md", "file_text", 5, 4)
    code, output = run(["--root", str(root), "--max-file-bytes", "0", command])
    assert code == 2
    assert "--max-file-bytes" in output


def test_help_documents_the_exit_status() -> None:
    code, output = run(["--help"])
    assert code == 0
    assert "Exit status" in output
    assert "1 if its result is an error" in output


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    buffer = b""
    while not buffer.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], max(left, 0))
        if not ready:
            raise AssertionError(f"no answer within {timeout}s; got {buffer!r} so far")
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            raise AssertionError(f"memfs tool closed its output; got {buffer!r}")
        buffer += chunk
    return buffer


def test_real_process_answers_each_line_before_the_next_is_sent(root: Path) -> None:
    exe = Path(sys.executable).with_name("memfs")
    proc = subprocess.Popen(
        [str(exe), "tool", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None
        talk = [
            (
                {"command": "create", "path": "/memories/p.md", "file_text": "ping\n"},
                line("File created successfully at: /memories/p.md", False),
            ),
            (
                {"command": "str_replace", "path": "/memories/p.md", "old_str": "ping"},
                line(strings.replaced("     1\t"), False),
            ),
            (
                {"command": "view", "path": "/memories/none"},
                line(strings.view_missing("/memories/none"), True),
            ),
        ]
        for command, answer in talk:
            # stdin stays open: the answer must come while the process still waits for more.
            proc.stdin.write(json.dumps(command).encode() + b"\n")
            proc.stdin.flush()
            assert _read_line(proc, timeout=30).decode() == answer
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        assert proc.stderr is not None
        assert proc.stderr.read() == b""
        assert (root / "p.md").read_text() == "\n"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_reader_going_away_ends_the_stream_quietly(root: Path) -> None:
    exe = Path(sys.executable).with_name("memfs")
    proc = subprocess.Popen(
        [str(exe), "tool", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((EXAMPLE + "\n").encode())
        proc.stdin.flush()
        assert b"Here're the files" in _read_line(proc, timeout=30)
        proc.stdout.close()  # the reader leaves; the next answer has nowhere to go
        proc.stdin.write((EXAMPLE + "\n").encode())
        proc.stdin.close()
        assert proc.wait(timeout=30) == 1
        assert proc.stderr is not None
        assert b"Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
