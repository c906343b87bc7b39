"""``memfs webdav`` as a real process: litmus's compliance suites, saves (compare-and-set,
the merge rules), operations and actors, the guard, and the bounds of a request."""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from memfs import paths
from memfs.store import open_store
from memfs.store.base import Store
from memfs.store.ranges import SMALL_CONTENT
from memfs.webdav.provider import ACTOR_KEY, StoreProvider
from tests import http_raw
from tests.fixtures.webdav import MEMFS, DavProcess
from tests.hostile_paths import HOSTILE_STRINGS

LITMUS = shutil.which("litmus")
SUITES = ["basic", "copymove", "props", "locks", "http"]

Server = Callable[..., DavProcess]


def _auth(user: str, password: str = "") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def call(
    dav: DavProcess,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", dav.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as opened:
        yield opened


@pytest.mark.parametrize("suite", SUITES)
def test_litmus_suite_passes(
    suite: str, webdav_server: Server, store_url: str, tmp_path: Path
) -> None:
    if LITMUS is None:
        pytest.fail("litmus is missing: make system-deps installs Debian's litmus")
    dav = webdav_server(store_url)
    done = subprocess.run(
        [LITMUS, dav.url + "/"],
        env={"TESTS": suite, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = [line for line in done.stdout.splitlines() if "summary for" in line]
    assert summary, done.stdout + done.stderr
    assert " 0 failed" in summary[-1], done.stdout
    assert done.returncode == 0, done.stdout


def test_put_get_are_store_revisions_by_the_basic_user(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    dav = webdav_server(store_url)
    status, headers, _ = call(dav, "PUT", "/notes.md", b"one\n", _auth("alice"))
    assert status == 201
    entry = store.stat("notes.md")
    assert headers["etag"] == f'"r{entry.rev}"'
    assert store.history("notes.md")[0].author == "webdav:alice"
    status, _, body = call(dav, "GET", "/notes.md")
    assert (status, body) == (200, b"one\n")
    # Live: what another writer commits is what the next GET and PROPFIND serve.
    store.write("other.md", b"from the mount\n", author="bob (vim)")
    assert call(dav, "GET", "/other.md")[2] == b"from the mount\n"
    listing = call(dav, "PROPFIND", "/", headers={"Depth": "1"})[2]
    assert b"/other.md" in listing and b"/notes.md" in listing


def test_stale_if_match_is_412_and_changes_nothing(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    dav = webdav_server(store_url)
    call(dav, "PUT", "/a.md", b"base\n")
    etag = call(dav, "HEAD", "/a.md")[1]["etag"]
    store.write("a.md", b"theirs\n", author="bob (vim)")
    status, _, _ = call(dav, "PUT", "/a.md", b"mine\n", {"If-Match": etag})
    assert status == 412
    assert store.read("a.md")[0] == b"theirs\n"
    fresh = call(dav, "HEAD", "/a.md")[1]["etag"]
    assert call(dav, "PUT", "/a.md", b"mine\n", {"If-Match": fresh})[0] == 204
    assert store.read("a.md")[0] == b"mine\n"


def test_save_without_precondition_merges_with_what_changed_since_the_read(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    dav = webdav_server(store_url)
    store.write("list.md", b"a\nb\nc\n", author="bob (vim)")
    assert call(dav, "GET", "/list.md")[2] == b"a\nb\nc\n"
    store.write("list.md", b"a\nb\nc\nfrom bob\n", author="bob (vim)")
    assert call(dav, "PUT", "/list.md", b"from dav\na\nb\nc\n")[0] == 204
    assert store.read("list.md")[0] == b"from dav\na\nb\nc\nfrom bob\n"


@pytest.mark.parametrize("size", [100, SMALL_CONTENT + 1])
def test_a_get_serves_the_revision_it_looked_up_and_a_save_merges_against_it(
    store: Store, size: int
) -> None:
    """A write landing between a GET's lookup (its Content-Length and ETag) and its body
    must not change the body: a newer, longer body cut at the older length would lose
    its tail in the client's next save (issue #29: the mount's appends vanished so)."""
    first = b"x" * (size - 6) + b"first\n"
    store.write("log.md", first, author="someone")
    provider = StoreProvider(store)
    environ = {ACTOR_KEY: "webdav:bob", "wsgidav.provider": provider}
    res = provider.get_resource_inst("/log.md", environ)
    store.write("log.md", first + b"second\n", author="someone")  # after the lookup
    assert res.get_content_length() == len(first)
    assert res.get_content().read() == first
    # The client saves what it received, a line put first; no precondition: merged
    # against what it read, so "second" stays.
    put = provider.get_resource_inst("/log.md", environ)
    body = put.begin_write()
    body.write(b"top\n" + first)
    put.end_write(with_errors=False)
    assert store.read("log.md")[0] == b"top\n" + first + b"second\n"


def test_each_changing_request_is_one_operation_undone_whole(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    dav = webdav_server(store_url)
    assert call(dav, "MKCOL", "/dir", headers=_auth("carol"))[0] == 201
    for name in ("x", "y"):
        call(dav, "PUT", f"/dir/{name}.md", name.encode(), _auth("carol"))
    status, _, _ = call(
        dav, "MOVE", "/dir", headers={**_auth("carol"), "Destination": dav.url + "/moved"}
    )
    assert status == 201
    last = store.operations(limit=1)[0]
    assert last.actor == "webdav:carol"
    assert "MOVE" in last.detail
    done = subprocess.run(
        [MEMFS, "undo", "--store", store_url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert sorted(e.path for e in store.walk("dir")) == ["dir/x.md", "dir/y.md"]
    assert [e.name for e in store.listdir("")] == ["dir"]


def test_subtree_is_the_root_and_nothing_above_is_reachable(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    store.write("outside.md", b"SECRET\n", author="bob (vim)", parents=True)
    dav = webdav_server(store_url, "--subtree", "team/inner")
    assert call(dav, "PUT", "/in.md", b"inside\n")[0] == 201
    assert store.read("team/inner/in.md")[0] == b"inside\n"
    for path in ("/../outside.md", "/%2e%2e/outside.md", "/..%2foutside.md", "/../../outside.md"):
        status, _, body = call(dav, "GET", path)
        assert b"SECRET" not in body, path
        assert status in (400, 403, 404), (path, status)


def test_deep_propfind_and_big_bodies_are_refused(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    dav = webdav_server(store_url)
    status, _, body = call(dav, "PROPFIND", "/", headers={"Depth": "infinity"})
    assert status == 403 and b"propfind-finite-depth" in body
    assert call(dav, "PROPFIND", "/")[0] == 403  # no Depth means infinity
    huge = b"<?xml version='1.0'?>" + b" " * (2 << 20)
    assert call(dav, "PROPFIND", "/", huge, {"Depth": "0"})[0] == 413
    assert call(dav, "LOCK", "/x.md", huge)[0] == 413
    cap = store.max_file_bytes
    assert cap is not None
    assert call(dav, "PUT", "/big.bin", b"x" * (cap + 1))[0] == 413
    assert call(dav, "PUT", "/big.bin", b"x" * 1000)[0] == 201


def test_token_is_the_basic_password(webdav_server: Server, store_url: str, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    token_file.chmod(0o600)
    dav = webdav_server(store_url, "--token-file", str(token_file))
    status, headers, _ = call(dav, "PROPFIND", "/", headers={"Depth": "0"})
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert call(dav, "PROPFIND", "/", headers={"Depth": "0", **_auth("dan", "wrong")})[0] == 401
    assert (
        call(dav, "PROPFIND", "/", headers={"Depth": "0", **_auth("dan", "s3cret-token")})[0] == 207
    )


def test_other_address_without_token_is_refused(store_url: str) -> None:
    done = subprocess.run(
        [MEMFS, "webdav", "--store", store_url, "--http", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("MEMFS_WEBDAV_TOKEN")},
    )
    assert done.returncode == 2
    assert "--token-file" in done.stderr and "Traceback" not in done.stderr


def test_misdirected_host_is_refused(webdav_server: Server, store_url: str) -> None:
    dav = webdav_server(store_url)
    conn = http.client.HTTPConnection("127.0.0.1", dav.port, timeout=30)
    try:
        conn.putrequest("PROPFIND", "/", skip_host=True)
        conn.putheader("Host", "evil.example")
        conn.putheader("Depth", "0")
        conn.endheaders()
        assert conn.getresponse().status == 421
    finally:
        conn.close()


LOCKINFO = (
    b'<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope>'
    b"<D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
)


def _spellings(path: str) -> list[str]:
    """A DAV URL path for a hostile model path, as sent plainly and percent-encoded
    once (slashes too) and twice."""
    rest = path[len("/memories") :] if path.startswith("/memories") else path
    rest = rest.lstrip("/")
    # Lone surrogates go as the bytes a careless client would send.
    raw = rest.encode("utf-8", "surrogatepass")
    return [
        "/" + quote(raw, safe="/%"),
        "/" + quote(raw, safe=""),
        "/" + quote(quote(raw, safe=""), safe=""),
    ]


def test_hostile_paths_never_escape_the_served_tree(
    webdav_server: Server, store_url: str, store: Store
) -> None:
    store.write("outside.md", b"SECRET outside\n", author="bob (vim)")
    store.write("inner/ok.md", b"ok\n", author="bob (vim)", parents=True)
    before = {e.path: e.rev for e in store.walk() if not e.path.startswith("inner")}
    dav = webdav_server(store_url, "--subtree", "inner")
    host = f"127.0.0.1:{dav.port}"
    answers = 0
    for hostile in HOSTILE_STRINGS:
        assert isinstance(hostile.path, str)
        for path in _spellings(hostile.path):
            if len(path) > 8000:
                continue  # past what the server reads as a request line: refused anyway
            if "ok.md" not in {e.name for e in store.listdir("inner")}:
                store.write("inner/ok.md", b"ok\n", author="bob (vim)")
            tries: list[tuple[str, str, bytes, dict[str, str]]] = [
                ("GET", path, b"", {}),
                ("PUT", path, b"HOSTILE", {}),
                ("PROPFIND", path, b"", {"Depth": "1"}),
                ("LOCK", path, LOCKINFO, {"Timeout": "Second-60"}),
                ("MOVE", "/ok.md", b"", {"Destination": f"http://{host}{path}"}),
                ("COPY", "/ok.md", b"", {"Destination": f"http://{host}{path}"}),
            ]
            for method, target, body, headers in tries:
                if body:
                    headers = {**headers, "Content-Length": str(len(body))}
                answer = http_raw.request(
                    dav.port, host=host, method=method, path=target, headers=headers, body=body
                )
                answers += 1
                assert b"SECRET" not in answer.body, (hostile.label, method, path)
                assert answer.status < 500, (hostile.label, method, path, answer.status)
    assert answers > 1000
    after = {e.path: e.rev for e in store.walk() if not e.path.startswith("inner")}
    assert after == before, "a request changed something outside the served subtree"
    assert store.read("outside.md")[0] == b"SECRET outside\n"
    for entry in store.walk("inner"):
        assert paths.parse_rel(entry.path).rel == entry.path


def test_status_lists_the_running_server_and_forgets_it_when_stopped(
    webdav_server: Server, store_url: str
) -> None:
    dav = webdav_server(store_url, "--subtree", "team")

    def status() -> dict[str, list[dict[str, object]]]:
        done = subprocess.run(
            [MEMFS, "status", "--json"], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        report: dict[str, list[dict[str, object]]] = json.loads(done.stdout)
        return report

    servers = status()["webdav"]
    assert [(s["url"], s["subtree"]) for s in servers] == [(dav.url + "/", "team")]
    assert str(servers[0]["store"]).endswith("memory.db")
    table = subprocess.run([MEMFS, "status"], capture_output=True, text=True, timeout=60)
    assert dav.url + "/" in table.stdout and "WEBDAV" in table.stdout
    assert dav.stop() == 0
    assert status()["webdav"] == []


def test_locks_and_properties_are_seen_by_every_server_of_the_store(
    webdav_server: Server, store_url: str
) -> None:
    one, two = webdav_server(store_url), webdav_server(store_url)
    assert call(one, "PUT", "/shared.md", b"x\n")[0] == 201
    status, headers, _ = call(
        one, "LOCK", "/shared.md", LOCKINFO, {"Timeout": "Second-600", "Depth": "0"}
    )
    assert status == 200
    token = headers["lock-token"]
    assert call(two, "PUT", "/shared.md", b"other\n")[0] == 423
    assert b"lockdiscovery" in call(two, "PROPFIND", "/shared.md", headers={"Depth": "0"})[2]
    locked = {"If": f"({token})"}
    assert call(two, "PUT", "/shared.md", b"holder\n", locked)[0] == 204
    assert call(two, "UNLOCK", "/shared.md", headers={"Lock-Token": token})[0] == 204
    assert call(one, "PUT", "/shared.md", b"free\n")[0] == 204
    patch = (
        b'<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:memfs:test">'
        b"<D:set><D:prop><Z:colour>teal</Z:colour></D:prop></D:set></D:propertyupdate>"
    )
    assert call(one, "PROPPATCH", "/shared.md", patch)[0] == 207
    ask = (
        b'<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:Z="urn:memfs:test">'
        b"<D:prop><Z:colour/></D:prop></D:propfind>"
    )
    answer = call(two, "PROPFIND", "/shared.md", ask, {"Depth": "0"})[2]
    assert b"teal" in answer


@pytest.mark.parametrize("size", [10_240, 3 << 20], ids=["small", "read-by-range"])
def test_a_range_is_served_as_206(webdav_server: Server, store_url: str, size: int) -> None:
    # Past 1 MiB the GET is served from the store's range reader, not a whole read.
    dav = webdav_server(store_url)
    data = (bytes(range(256)) * (size // 256 + 1))[:size]
    assert call(dav, "PUT", "/big.bin", data)[0] == 201
    tail = f"bytes={size - 1000}-{size - 1}"
    status, headers, body = call(dav, "GET", "/big.bin", headers={"Range": tail})
    assert (status, body) == (206, data[-1000:])
    assert headers["content-range"] == f"{tail.replace('=', ' ')}/{size}"
    assert call(dav, "GET", "/big.bin")[2] == data


def test_a_port_in_use_is_one_line(webdav_server: Server, store_url: str) -> None:
    dav = webdav_server(store_url)
    done = subprocess.run(
        [MEMFS, "webdav", "--store", store_url, "--http", f"127.0.0.1:{dav.port}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the port is in use" in lines[0], done.stderr
