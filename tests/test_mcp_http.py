"""``memfs mcp --http``: the bearer token, addresses, and the one-line refusals.

Servers are real ``memfs mcp`` processes (the ``mcp_http`` fixture stops them); requests
are the ``mcp`` SDK's client or plain HTTP through httpx. Usage errors go through
click's CliRunner, on exact output.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from click.testing import CliRunner

from memfs.cli import main
from tests.fixtures.mcp import McpProcess, http_client, text_of

TOKEN = "s3cret-token"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, headers: dict[str, str]) -> httpx2.Response:
    with httpx2.Client(timeout=10) as http:
        return http.post(url, json=INIT, headers={**HEADERS, **headers})


def view_root(url: str, token: str | None) -> str:
    async def run() -> str:
        async with http_client(url, "tokened", token=token) as (client, _):
            result = await client.call_tool("memory", {"command": "view", "path": "/memories"})
            assert not result.is_error
            return text_of(result)

    return anyio.run(run)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "mem"
    r.mkdir()
    (r / "a.md").write_text("a\n")
    return r


def test_every_request_without_the_token_is_refused_401(
    root: Path, mcp_http: Callable[..., McpProcess]
) -> None:
    server = mcp_http("--root", str(root), "--token", TOKEN)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = post(server.url, headers)
        assert refused.status_code == 401, headers
        assert refused.headers["www-authenticate"] == 'Bearer realm="memfs"'
        assert refused.json()["error"] == "unauthorized"
    accepted = post(server.url, {"Authorization": f"Bearer {TOKEN}"})
    assert accepted.status_code == 200
    assert "/memories/a.md" in view_root(server.url, TOKEN)
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 its own way
        view_root(server.url, None)


def test_a_non_loopback_address_serves_with_its_token(
    root: Path, mcp_http: Callable[..., McpProcess]
) -> None:
    server = mcp_http("--root", str(root), "--token", TOKEN, address="0.0.0.0:0")
    assert server.url.startswith("http://0.0.0.0:")
    url = server.url.replace("0.0.0.0", "127.0.0.1")
    assert post(url, {}).status_code == 401
    assert "/memories/a.md" in view_root(url, TOKEN)


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["mcp", *args], env=env)
    return result.exit_code, result.output


def test_a_non_loopback_address_without_a_token_is_refused(root: Path) -> None:
    code, out = invoke("--root", str(root), "--http", "0.0.0.0:8765")
    assert code == 2
    assert out.splitlines()[-1] == (
        "Error: --http 0.0.0.0:8765 is reachable from other machines: give --token-file "
        "PATH (or set $MEMFS_MCP_TOKEN) for clients to send as 'Authorization: Bearer "
        "TOKEN', or listen on 127.0.0.1"
    )


def test_a_port_in_use_is_one_line(root: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, out = invoke("--root", str(root), "--http", f"127.0.0.1:{port}")
    assert code == 1
    assert out == (
        f"Error: cannot listen on 127.0.0.1:{port}: the port is in use; "
        "stop what uses it or choose another with --http HOST:PORT\n"
    )


@pytest.mark.parametrize(
    ("address", "message"),
    [
        (
            "127.0.0.1:99999",
            "Error: --http 127.0.0.1:99999: the port must be a number from 0 to 65535\n",
        ),
        (
            "localhost:http",
            "Error: --http localhost:http: the port must be a number from 0 to 65535\n",
        ),
        ("::1:80", "Error: --http ::1:80: write an IPv6 address in brackets, as [::1]:80\n"),
        ("192.0.2.1:8000", None),
        ("no-such-host.invalid:8000", None),
    ],
)
def test_bad_addresses_are_one_line(root: Path, address: str, message: str | None) -> None:
    args = ["--root", str(root), "--http", address]
    code, out = invoke(*args, env={"MEMFS_MCP_TOKEN": TOKEN})
    if message is not None:  # not HOST:PORT at all: a usage error
        assert code == 2
        assert out.splitlines()[-1] + "\n" == message
        return
    assert code == 1
    assert len(out.splitlines()) == 1
    if address.startswith("192"):
        assert out == "Error: cannot listen on 192.0.2.1:8000: this machine has no such address\n"
    else:
        assert out.startswith("Error: --http: cannot resolve 'no-such-host.invalid': ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "sqlite:///x.db"], "Error: give --root DIR or --store URL, not both"),
        (
            ["--token", TOKEN],
            "Error: --token protects --http; over stdio there is nothing to refuse",
        ),
        (["--http", ":0", "--token", " "], "Error: Invalid value for --token: the token is empty"),
    ],
)
def test_contradictory_options_are_usage_errors(root: Path, args: list[str], message: str) -> None:
    code, out = invoke("--root", str(root), *args)
    assert code == 2
    assert out.splitlines()[-1] == message


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.db").write_text("not a database")
    code, out = invoke("--store", f"sqlite:///{tmp_path}/bad.db")
    assert code == 1
    assert len(out.splitlines()) == 1 and out.startswith("Error: ")
