"""Every search is bounded (#17.1): regexes run on RE2, so a pattern that makes a
backtracking engine run for ever answers at once through every door; what RE2 cannot
run is refused with one line; a search past its time budget is refused; and the MCP
server answers other clients, and stops on SIGTERM, whatever one client's command does.

Waits are deadlines (a process's ``timeout``, ``anyio.fail_after``): before RE2 the
catastrophic pattern held a door for minutes, so a deadline of seconds tells them apart
without timing anything.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memfs.agent.search_tool import SearchTool, searcher_for
from memfs.errors import QueryError
from memfs.store import open_store
from memfs.store.matching import Query, parse_query
from tests.fixtures.mcp import McpProcess, http_client, stdio_client, text_of
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for

MEMFS = str(Path(sys.executable).with_name("memfs"))
EVIL = "(a+)+$"
DEADLINE = 30.0  # seconds; the old engine took minutes on this input
A = "tester"


def _evil_tree(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "trap.md").write_text("a" * 5000 + "!\n")
    (root / "hit.md").write_text("b\n" + "a" * 5000 + "\n")


def _evil_store(tmp_path: Path) -> str:
    url = sqlite_url(tmp_path / "m.db")
    with open_store(url) as store:
        store.write("trap.md", ("a" * 5000 + "!\n").encode(), author=A)
        store.write("hit.md", ("b\n" + "a" * 5000 + "\n").encode(), author=A)
    return url


def test_the_cli_answers_a_catastrophic_regex(tmp_path: Path) -> None:
    url = _evil_store(tmp_path)
    out = subprocess.run(
        [MEMFS, "search", EVIL, "--regex", "--json", "--store", url],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert out.returncode == 0, out.stderr
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(h["path"], [line["line"] for line in h["lines"]]) for h in hits] == [("hit.md", [2])]


def test_the_agents_search_tool_answers_a_catastrophic_regex(tmp_path: Path) -> None:
    _evil_tree(tmp_path / "mem")
    search, release = searcher_for(tmp_path / "mem")
    try:
        text = SearchTool(search).call({"query": EVIL, "regex": True})
    finally:
        release()
    assert isinstance(text, str)
    assert text.splitlines()[:2] == [
        f"1 file in /memories match {EVIL!r}, best first:",
        "/memories/hit.md",
    ]


UNSUPPORTED = [
    (r"(a)\1", r"back references (\1, \g<name>) are not supported"),
    ("(?P<x>a)(?P=x)", "back references (?P=name) are not supported"),
    ("foo(?=bar)", "look-ahead (?=...) is not supported"),
    ("foo(?!bar)", "look-ahead (?!...) is not supported"),
    ("(?<=foo)bar", "look-behind (?<=...) is not supported"),
    ("(?<!foo)bar", "look-behind (?<!...) is not supported"),
    ("(?>a+)b", "atomic groups (?>...) are not supported"),
    ("a++b", "possessive quantifiers (a++, a*+) are not supported"),
    (r"end\Z", r"write \z for the end of a line (\Z is Python's spelling)"),
    ("(?x) a b", "that inline flag is not supported (i, m, s and U are)"),
    ("(a)?(?(1)b|c)", "conditional groups (?(...)...) are not supported"),
    ("a{1001}", "a repetition count above 1,000 is not supported"),
]


@pytest.mark.parametrize(("pattern", "why"), UNSUPPORTED)
def test_what_re2_cannot_run_is_one_line_at_every_door(
    tmp_path: Path, pattern: str, why: str
) -> None:
    expected = (
        "memfs runs regular expressions in linear time (RE2 syntax), so it cannot run"
        f" '{pattern}': {why}"
    )
    with pytest.raises(QueryError) as caught:
        parse_query(pattern, regex=True)
    assert str(caught.value) == expected
    url = _evil_store(tmp_path)
    out = subprocess.run(
        [MEMFS, "search", pattern, "--regex", "--store", url],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert (out.returncode, out.stdout, out.stderr) == (1, "", f"Error: {expected}\n")
    _evil_tree(tmp_path / "mem")
    search, release = searcher_for(tmp_path / "mem")
    try:
        with pytest.raises(Exception, match=r"^Error: memfs runs regular expressions") as tool:
            SearchTool(search).call({"query": pattern, "regex": True})
        assert str(tool.value) == f"Error: {expected}"
    finally:
        release()


def test_a_pattern_too_long_is_refused() -> None:
    with pytest.raises(QueryError, match=r"^the regular expression is 5,000 characters long"):
        parse_query("x" * 5000, regex=True)


def test_a_search_past_its_time_budget_is_refused(tmp_path: Path) -> None:
    # A budget already spent: the first file confirmed refuses the search, at every
    # backend (they all confirm matches through Query.matching_lines).
    spent = parse_query("alpha", budget=-1.0)
    with pytest.raises(QueryError, match="ran past its time budget of 10 seconds"):
        spent.matching_lines("alpha\n")
    regex = parse_query("al+pha", regex=True, budget=-1.0)
    with pytest.raises(QueryError, match="search below a directory or give a more specific"):
        regex.matching_lines("alpha\n")


def _line_by_line(query: Query, text: str) -> list[tuple[int, str]] | None:
    # The same query without its multi-line twin: every line matched on its own.
    alone = Query(query.text, True, query.patterns, query.fragments, query.deadline, None)
    return alone.matching_lines(text)


PATTERNS = [
    "a",
    "^a",
    "a$",
    "^$",
    "ab*",
    r"a\sb",
    "[^a]b",
    r"\bab\b",
    "a.b",
    "(?s)a.b",
    "b|^",
    "x*",
]


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab \n\r", max_size=60),
    pattern=st.sampled_from(PATTERNS),
)
def test_one_pass_over_the_file_finds_the_lines_matched_one_by_one(text: str, pattern: str) -> None:
    query = parse_query(pattern, regex=True)
    assert query.whole is not None
    assert query.matching_lines(text) == _line_by_line(query, text)


# --- the MCP server ------------------------------------------------------------------


def test_mcp_answers_a_catastrophic_regex_and_another_client_meanwhile(
    tmp_path: Path, mcp_http: Callable[..., McpProcess]
) -> None:
    _evil_tree(tmp_path / "mem")
    server = mcp_http("--root", str(tmp_path / "mem"))

    async def evil() -> str:
        async with http_client(server.url, "mallory") as (client, _):
            result = await client.call_tool("memory_search", {"query": EVIL, "regex": True})
            return text_of(result)

    async def other() -> str:
        async with http_client(server.url, "alice") as (client, _):
            result = await client.call_tool("memory", {"command": "view", "path": "/memories"})
            return text_of(result)

    async def run() -> tuple[str, str]:
        found: dict[str, str] = {}

        async def keep(name: str, fn: Callable[[], object]) -> None:
            found[name] = await fn()  # type: ignore[misc]

        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(keep, "evil", evil)
                tasks.start_soon(keep, "other", other)
        return found["evil"], found["other"]

    searched, viewed = anyio.run(run)
    assert searched.splitlines()[1] == "/memories/hit.md"
    assert "hit.md" in viewed and "trap.md" in viewed
    assert server.stop() == 0


def _thread_in_syscall(pid: int, name: str, calls: set[int]) -> bool:
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            syscall = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()
        except OSError:
            continue
        if comm == name and syscall and syscall[0].isdigit() and int(syscall[0]) in calls:
            return True
    return False


# x86_64 numbers of the calls a command makes on the stopped mount: poll (waiting for the
# daemon's control socket to settle the path first), then openat, newfstatat, statx.
_WALKING = {7, 257, 262, 332}


@pytest.mark.fuse
def test_sigterm_stops_mcp_while_a_command_hangs_in_the_file_system(
    memfs_mount: MountHandle,
) -> None:
    """A command stuck in the kernel (the mount's daemon stopped, so its lookup never
    returns) does not keep SIGTERM from ending the server."""
    mnt = memfs_mount.mountpoint
    proc = subprocess.Popen(
        [MEMFS, "mcp", "--root", str(mnt)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stopped = False
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        assert proc.stderr.readline().startswith("memfs mcp: serving")

        def send(message: dict[str, object]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            proc.stdin.flush()

        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "stuck", "version": "1"},
                },
            }
        )
        assert json.loads(proc.stdout.readline())["id"] == 1
        send({"method": "notifications/initialized"})
        os.kill(memfs_mount.pid, signal.SIGSTOP)
        stopped = True
        view = {"command": "view", "path": "/memories/never-looked-up.md"}
        send({"id": 2, "method": "tools/call", "params": {"name": "memory", "arguments": view}})
        wait_for(
            lambda: _thread_in_syscall(proc.pid, "mcp:stuck", _WALKING),
            what="the command to reach the stopped mount",
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
        assert "commands of mcp:stuck still running" in proc.stderr.read()
    finally:
        if stopped:
            os.kill(memfs_mount.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_mcp_over_stdio_refuses_what_re2_cannot_run(tmp_path: Path) -> None:
    _evil_tree(tmp_path / "mem")

    async def run() -> tuple[bool, str]:
        async with stdio_client(["--root", str(tmp_path / "mem")]) as (client, _):
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool(
                    "memory_search", {"query": "(?<=a)b", "regex": True}
                )
            return bool(result.is_error), text_of(result)

    assert anyio.run(run) == (
        True,
        "Error: memfs runs regular expressions in linear time (RE2 syntax), so it cannot"
        " run '(?<=a)b': look-behind (?<=...) is not supported",
    )
