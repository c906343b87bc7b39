"""``memfs web`` end to end: a real server process, Debian's Chromium driven by
Playwright, real FUSE mounts and the real ``memfs tool`` as the door that makes the
operations, real HTTP requests for what a browser would never send.

The operation the scenario undoes is made by ``memfs tool --actor planner`` on the
mount (its commands are transactions on the mount's store, by that actor).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memfs.store import open_store
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for
from tests.fixtures.web import WebProcess
from tests.http_raw import request

MEMFS = str(Path(sys.executable).with_name("memfs"))
ACTOR_ARGS: list[str] = ["--actor", "planner"]
ACTOR = "planner"
TOKEN = "web-token-123"


def tool(root: Path, *commands: dict[str, Any]) -> list[dict[str, Any]]:
    lines = "".join(json.dumps(c) + "\n" for c in commands)
    done = subprocess.run(
        [MEMFS, "tool", "--root", str(root), *ACTOR_ARGS],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with a little history, made through the store's own API."""
    path = tmp_path / "memory.db"
    with open_store(sqlite_url(path)) as store:
        store.write(
            "notes/plan.md", b"# Plan\n\n- first step\n", author="vim (pid 812)", parents=True
        )
        store.write(
            "notes/plan.md", b"# Plan\n\n- first step\n- oat milk\n", author="agent:planner"
        )
        store.write("bin/blob.dat", b"\0\1\2\3" * 100, author="cp (pid 9)", parents=True)
    return path


@pytest.mark.fuse
def test_see_an_operation_its_diff_undo_it_and_read_the_old_content_through_the_mount(
    memfs_mount: MountHandle, web_server: Callable[..., WebProcess], page: Any
) -> None:
    mnt = memfs_mount.mountpoint
    created, edited = tool(
        mnt,
        {"command": "create", "path": "/memories/plan.md", "file_text": "alpha\nbeta\n"},
        {
            "command": "str_replace",
            "path": "/memories/plan.md",
            "old_str": "beta",
            "new_str": "gamma",
        },
    )
    assert not created["is_error"] and not edited["is_error"], (created, edited)
    server = web_server("--root", str(mnt))
    page.goto(server.url + "/")
    # The edit's operation: the handler's atomic save folded into one edit of plan.md.
    edit = re.compile(r"edited plan\.md$")
    row = page.locator("tr.op", has=page.get_by_role("link", name=edit))
    row.first.wait_for()
    assert ACTOR in row.first.locator("td.actor").inner_text()
    row.first.get_by_role("link").click()
    assert page.locator("tr.del td.t").first.inner_text().endswith("beta")
    assert page.locator("tr.add td.t").first.inner_text().endswith("gamma")
    page.get_by_role("link", name="Undo").click()
    assert (mnt / "plan.md").read_text() == "alpha\ngamma\n"  # nothing changed yet
    page.get_by_role("button", name="Undo").click()
    page.get_by_text(re.compile("This operation undid operation")).wait_for()
    wait_for(lambda: (mnt / "plan.md").read_text() == "alpha\nbeta\n", what="undone content")
    assert "web:" in page.locator("dl.facts").inner_text()
    # The undo is one operation of the page's person, named in the address it went to.
    (undo,) = memfs_mount.store().operations(actor="web:")
    assert page.url.endswith(f"/op/{undo.id}?note=undid-{undo.id - 1}")
    assert undo.detail == f"undo of operation {undo.id - 1}"


@pytest.mark.fuse
def test_an_operation_page_shows_its_steps_with_no_temporary_names(
    memfs_mount: MountHandle, web_server: Callable[..., WebProcess], page: Any
) -> None:
    """sed -i through the mount: its temporary file and rename are one edit of the file,
    diffed line by line; a binary file's step by size and hash."""
    mnt = memfs_mount.mountpoint
    store = memfs_mount.store()
    (mnt / "todo.md").write_text("- milk\n- bread\n")
    wait_for(lambda: store.read("todo.md")[0] == b"- milk\n- bread\n", what="todo.md")
    script = 'sed -i s/milk/oat-milk/ "$1" && printf "\\000\\001\\002" > "$2"'
    both = ["sh", "-c", script, "sh", str(mnt / "todo.md"), str(mnt / "blob.bin")]
    subprocess.run(both, check=True, timeout=30)
    wait_for(lambda: store.read("todo.md")[0] == b"- oat-milk\n- bread\n", what="sed")
    wait_for(lambda: store.read("blob.bin")[0] == b"\0\1\2", what="the blob")
    (sed,) = store.operations(actor="(sed)")
    (sh,) = store.operations(actor="(sh)")
    server = web_server("--root", str(mnt))
    page.goto(f"{server.url}/op/{sed.id}")
    assert page.locator("section.change h2").all_inner_texts() == ["edited todo.md"]
    assert page.locator("tr.del td.t").inner_text().endswith("- milk")
    assert page.locator("tr.add td.t").inner_text().endswith("- oat-milk")
    page.goto(f"{server.url}/op/{sh.id}")
    assert page.locator("section.change h2").all_inner_texts() == ["created blob.bin"]
    digest = store.history("blob.bin")[0].sha256
    assert page.locator("p.binary").inner_text() == (
        f"Binary content: after 3 B, sha256 {digest[:16]}"
    )


@pytest.mark.fuse
def test_a_write_through_the_mount_shows_in_the_open_timeline_within_2_s(
    memfs_mount: MountHandle, web_server: Callable[..., WebProcess], page: Any
) -> None:
    mnt = memfs_mount.mountpoint
    (mnt / "first.md").write_text("one\n")
    wait_for(lambda: memfs_mount.store().last_seq() > 0, what="the first write committed")
    server = web_server("--root", str(mnt))
    page.goto(server.url + "/")
    page.wait_for_function("document.querySelector('table[data-following]') !== null")
    page.evaluate("window.notReloaded = true")
    # Another process (this one's writes within 2 s would be the same operation).
    write = ["sh", "-c", 'echo "written while the page is open" > "$1"', "sh", str(mnt / "live.md")]
    subprocess.run(write, check=True, timeout=30)
    page.get_by_role("link", name=re.compile("sh: created live.md")).wait_for(timeout=2000)
    assert page.evaluate("window.notReloaded") is True


def test_search_highlights_the_matches(
    db: Path, web_server: Callable[..., WebProcess], page: Any
) -> None:
    server = web_server("--store", sqlite_url(db))
    page.goto(server.url + "/")
    page.get_by_role("searchbox", name="Search").fill("oat")
    page.get_by_role("searchbox", name="Search").press("Enter")
    page.get_by_role("link", name="/memories/notes/plan.md").wait_for()
    assert page.locator("mark").all_inner_texts() == ["oat"]


def test_restore_redact_and_checkpoints_are_confirmed_and_recorded_as_web_user(
    db: Path, web_server: Callable[..., WebProcess], page: Any
) -> None:
    server = web_server("--store", sqlite_url(db))
    page.goto(server.url + "/history/notes/plan.md")
    page.get_by_role("link", name="Restore revision 2").click()
    with open_store(sqlite_url(db)) as store:
        assert store.read("notes/plan.md")[0].endswith(b"oat milk\n")  # not yet
    page.get_by_role("button", name="Restore").click()
    page.get_by_text("Revision 2 was put back").wait_for()
    with open_store(sqlite_url(db)) as store:
        assert store.read("notes/plan.md")[0] == b"# Plan\n\n- first step\n"
        assert store.history("notes/plan.md", limit=1)[0].author.startswith("web:")
    # Redact the old revision holding "oat milk": asked twice (the page, then the script).
    page.get_by_role("link", name="Redact revision 3").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Redact").click()
    page.get_by_text("The content of revision 3 was removed for good").wait_for()
    with open_store(sqlite_url(db)) as store:
        assert store.history("notes/plan.md")[1].redacted_by is not None
    # A checkpoint, a change, and the tree back to the checkpoint.
    page.goto(server.url + "/")
    page.get_by_label("Checkpoint name").fill("before-cleanup")
    page.get_by_role("button", name="Checkpoint").click()
    page.get_by_role("button", name="Checkpoint").click()  # the confirmation
    page.get_by_text("Checkpoint before-cleanup was made").wait_for()
    with open_store(sqlite_url(db)) as store:
        store.delete("notes", author="rm (pid 7)", recursive=True)
    page.get_by_role("link", name="Return the tree to before-cleanup").click()
    assert "put back notes/plan.md" in page.locator("ul.records").inner_text()
    page.get_by_role("button", name="Return").click()
    page.get_by_text("returned the tree to a checkpoint").wait_for()
    with open_store(sqlite_url(db)) as store:
        assert store.read("notes/plan.md")[0] == b"# Plan\n\n- first step\n"


def test_undo_with_conflicts_shows_them_and_changes_nothing(
    db: Path, web_server: Callable[..., WebProcess], page: Any
) -> None:
    server = web_server("--store", sqlite_url(db))
    with open_store(sqlite_url(db)) as store:
        (vim,) = store.operations(actor="vim")  # its create, edited since by the planner
        before = store.last_seq()
    page.goto(f"{server.url}/op/{vim.id}/undo")
    assert "'notes/plan.md' was changed since" in page.locator("section.conflicts").inner_text()
    assert page.get_by_role("button", name="Undo anyway").is_visible()
    with open_store(sqlite_url(db)) as store:
        assert store.last_seq() == before


def test_tree_renders_markdown_with_a_raw_switch_and_binary_by_size(
    db: Path, web_server: Callable[..., WebProcess], page: Any
) -> None:
    server = web_server("--store", sqlite_url(db))
    page.goto(server.url + "/tree/notes/plan.md")
    assert page.get_by_role("heading", name="Plan", exact=True).is_visible()
    assert "agent:planner" in page.locator("dl.facts").inner_text()
    page.get_by_role("link", name="Raw text").click()
    assert page.locator("pre.text").inner_text().startswith("# Plan")
    page.goto(server.url + "/tree/bin/blob.dat")
    assert "Binary content: 400 B" in page.locator("p.binary").inner_text()


def _get(server: WebProcess, path: str, headers: dict[str, str] | None = None) -> Any:
    return request(server.port, host=f"127.0.0.1:{server.port}", path=path, headers=headers)


def test_unknown_ids_and_revisions_are_404_pages_and_refused_paths_say_the_gate(
    db: Path, web_server: Callable[..., WebProcess]
) -> None:
    server = web_server("--store", sqlite_url(db))
    for path in ("/op/999999", "/history/notes/plan.md?rev=999", "/nowhere", "/tree/none.md"):
        response = _get(server, path, {"Accept": "text/html"})
        assert response.status == 404, path
        assert b"Traceback" not in response.body
    for path, sentence in [
        ("/tree/%2e%2e/etc/passwd", "it contains a '..' segment"),
        ("/history/a%00b.md", "it contains the control or invisible character U+0000"),
        ("/?path=.memfs-x", "names starting with '.memfs' are reserved for memfs"),
    ]:
        response = _get(server, path)
        assert response.status == 400, path
        text = response.body.decode().replace("&#39;", "'")
        assert f"is not allowed: {sentence}." in text, text
        assert "Traceback" not in text


def test_a_post_without_the_form_token_is_403(
    db: Path, web_server: Callable[..., WebProcess]
) -> None:
    server = web_server("--store", sqlite_url(db))
    host = f"127.0.0.1:{server.port}"
    with open_store(sqlite_url(db)) as store:
        last = store.last_seq()
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for body in (b"", b"csrf=forged", b"name=x"):
        response = request(
            server.port, host=host, method="POST", path="/checkpoints", headers=form, body=body
        )
        assert response.status == 403, body
    response = request(
        server.port, host=host, method="POST", path="/op/1/undo", headers=form, body=b"force=1"
    )
    assert response.status == 403
    with open_store(sqlite_url(db)) as store:
        assert store.last_seq() == last and store.checkpoints() == []


def test_off_loopback_a_token_is_required(
    db: Path, web_server: Callable[..., WebProcess], page: Any
) -> None:
    server = web_server("--store", sqlite_url(db), "--token", TOKEN, address="0.0.0.0:0")
    assert server.printed.endswith(f"/?token={TOKEN}")
    host = f"127.0.0.1:{server.port}"
    assert request(server.port, host=host).status == 401
    assert request(server.port, host=host, headers={"Authorization": "Bearer nope"}).status == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert request(server.port, host=host, headers=bearer).status == 200
    assert request(server.port, host=f"evil.com:{server.port}", headers=bearer).status == 421
    # A browser opens the printed address once; the cookie carries the token after that.
    page.goto(server.printed.replace("0.0.0.0", "127.0.0.1"))
    assert "token=" not in page.url
    page.goto(f"http://127.0.0.1:{server.port}/tree")
    assert page.get_by_role("link", name="notes/").is_visible()


def test_the_guard_checks_host_and_origin(db: Path, web_server: Callable[..., WebProcess]) -> None:
    server = web_server("--store", sqlite_url(db))
    port = server.port
    for host in ("evil.com", f"127.0.0.1:{port}@evil.com", f"127.0.0.1:{port + 1}"):
        assert request(port, host=host).status == 421, host
    for origin in (f"http://127.0.0.1:{port + 1}", "http://evil.com", "null"):
        response = request(port, host=f"127.0.0.1:{port}", headers={"Origin": origin})
        assert response.status == 403, origin
    good = request(port, host=f"localhost:{port}", headers={"Origin": f"http://localhost:{port}"})
    assert good.status == 200


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_cleanly_with_a_live_timeline_open(
    db: Path, web_server: Callable[..., WebProcess], page: Any, sig: int
) -> None:
    server = web_server("--store", sqlite_url(db))
    page.goto(server.url + "/")
    page.wait_for_function("document.querySelector('table[data-following]') !== null")
    started = time.monotonic()
    assert server.stop(sig) == 0
    assert time.monotonic() - started < 5
    assert "Traceback" not in "".join(server.stderr)


def test_usage_errors_are_one_line(db: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMFS, "web", *args],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )

    done = run("--store", sqlite_url(db), "--http", "0.0.0.0:0")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "Error: --http 0.0.0.0:0 is reachable from other machines: give --token-file PATH "
        "(or set $MEMFS_WEB_TOKEN), or listen on 127.0.0.1"
    )
    done = run("--store", sqlite_url(db.with_name("none.db")))
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("Error: no store at ")
