"""The guard in front of both HTTP doors (memfs.httpguard): Host and Origin must name
the address served, the token is required where it is set.

Every request is a real one to a real ``memfs mcp --http`` process, written byte by
byte (tests/http_raw.py) so the hostile headers go out as an attacker would send them.
``tests/test_web.py`` runs the same checks against ``memfs web``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.fixtures.mcp import McpProcess, start_mcp
from tests.http_raw import request

TOKEN = "guard-token"
INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
).encode()
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

# Host header values a rebinding page or a confused proxy sends; {port} is the served one.
BAD_HOSTS = [
    "evil.com",
    "evil.com:{port}",
    "127.0.0.1:{port}@evil.com",
    "127.0.0.1:{other}",
    "127.0.0.1",
    "localhost:{other}",
    "[::1]:{port}",
    "127.0.0.2:{port}",
    "127.0.0.1:{port} evil",
    "",
]
BAD_ORIGINS = [
    "http://127.0.0.1:{other}",
    "http://localhost:{other}",
    "http://evil.com",
    "http://evil.com:{port}",
    "https://127.0.0.1:{port}",
    "http://user@127.0.0.1:{port}",
    "null",
]
GOOD_HOSTS = ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"]


def _fill(template: str, port: int) -> str:
    return template.format(port=port, other=port + 1 if port < 65535 else port - 1)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "mem"
    r.mkdir()
    return r


@pytest.fixture(scope="module")
def mcp_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One loopback server for the module's many requests (each test only reads)."""
    tree = tmp_path_factory.mktemp("mem")
    server = start_mcp(["--http", "127.0.0.1:0", "--root", str(tree)])
    try:
        yield int(urlsplit(server.wait_ready()).port or 0)
    finally:
        server.stop()


def _post(port: int, host: str, headers: dict[str, str] | None = None) -> int:
    return request(
        port,
        host=host,
        method="POST",
        path="/mcp",
        headers={**MCP_HEADERS, **(headers or {})},
        body=INIT,
    ).status


@pytest.mark.parametrize("good", GOOD_HOSTS)
def test_the_served_host_is_answered(mcp_port: int, good: str) -> None:
    assert _post(mcp_port, _fill(good, mcp_port)) == 200


@pytest.mark.parametrize("bad", BAD_HOSTS)
def test_a_host_that_is_not_the_served_address_is_refused(mcp_port: int, bad: str) -> None:
    response = request(
        mcp_port,
        host=_fill(bad, mcp_port),
        method="POST",
        path="/mcp",
        headers=MCP_HEADERS,
        body=INIT,
    )
    assert response.status == 421, bad
    assert json.loads(response.body)["error"] == "misdirected"


@pytest.mark.parametrize("bad", BAD_ORIGINS)
def test_an_origin_that_is_not_the_served_one_is_refused(mcp_port: int, bad: str) -> None:
    host = f"127.0.0.1:{mcp_port}"
    assert _post(mcp_port, host, {"Origin": _fill(bad, mcp_port)}) == 403, bad


def test_the_served_origin_is_answered(mcp_port: int) -> None:
    for origin in (f"http://127.0.0.1:{mcp_port}", f"http://localhost:{mcp_port}"):
        assert _post(mcp_port, f"127.0.0.1:{mcp_port}", {"Origin": origin}) == 200


def test_a_wildcard_address_answers_to_the_address_a_request_came_in_on(
    root: Path, mcp_http: Callable[..., McpProcess]
) -> None:
    server = mcp_http("--root", str(root), "--token", TOKEN, address="0.0.0.0:0")
    port = int(urlsplit(server.url).port or 0)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert _post(port, f"127.0.0.1:{port}", auth) == 200
    assert _post(port, f"127.0.0.1:{port}") == 401  # the right host, no token
    assert _post(port, f"evil.com:{port}", auth) == 421  # the token does not excuse a host
    assert _post(port, f"127.0.0.1:{port}", {**auth, "Origin": "http://evil.com"}) == 403
    assert _post(port, f"127.0.0.1:{port}", {"Authorization": "Bearer guard-tokeN"}) == 401
