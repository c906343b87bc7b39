"""Two writers, one file: a WebDAV client and a FUSE mount of one store appending to and
saving ``log.md`` at once (the list-append run of tests/test_many_writers.py).

Writers: ``echo TOKEN >> log.md`` on the mount (O_APPEND); a WebDAV client that reads,
appends a line and saves with ``If-Match`` (compare-and-set: a 412 means read again);
and a WebDAV client that reads, puts a line first and saves with no precondition (the
mount's merge rules, against what that client, another user, last read). Every
acknowledged token must be in the file exactly once, in its writer's order.
"""

from __future__ import annotations

import base64
import http.client
import threading
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.webdav import DavProcess
from tests.test_many_writers import Writer, _check_log, _collect_shell, _shell

SHELL_APPENDS = 40
DAV_SAVES = 25


def _request(
    dav: DavProcess,
    user: str,
    method: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", dav.port, timeout=60)
    who = base64.b64encode(f"{user}:".encode()).decode()
    try:
        conn.request(
            method,
            "/log.md",
            body=body,
            headers={"Authorization": f"Basic {who}", **(headers or {})},
        )
        answer = conn.getresponse()
        return answer.status, answer.getheader("ETag") or "", answer.read()
    finally:
        conn.close()


def _dav_writer(dav: DavProcess, writer: Writer, count: int, *, if_match: bool) -> None:
    for i in range(1, count + 1):
        token = f"{writer.tag}-{i}"
        for _ in range(200):
            status, etag, body = _request(dav, writer.tag, "GET")
            if status != 200:
                writer.errors.append(f"GET {status}")
                return
            text = body if body.endswith(b"\n") or not body else body + b"\n"
            saved = (
                text + token.encode() + b"\n" if writer.appends else token.encode() + b"\n" + text
            )
            status, _, _ = _request(
                dav, writer.tag, "PUT", saved, {"If-Match": etag} if if_match else {}
            )
            if status in (200, 201, 204):
                writer.ack(token)
                break
            if status != 412 or not if_match:
                writer.errors.append(f"PUT {status}")
                return
        else:
            writer.errors.append("PUT kept meeting newer revisions")
            return


def test_a_webdav_client_and_a_fuse_mount_lose_nothing(
    mount_factory: Callable[..., MountHandle],
    webdav_server: Callable[..., DavProcess],
    tmp_path: Path,
) -> None:
    mount = mount_factory()
    (mount.mountpoint / "log.md").write_text("")
    store = mount.store()
    wait_for(lambda: "log.md" in {e.name for e in store.listdir("")}, what="log.md committed")
    dav = webdav_server(mount.store_url)
    shell = Writer("shell", appends=True)
    cas = Writer("cas", appends=True)
    merged = Writer("merged", appends=False)
    proc = _shell(mount.mountpoint, shell, SHELL_APPENDS, tmp_path)
    threads = [
        threading.Thread(target=_dav_writer, args=(dav, cas, DAV_SAVES), kwargs={"if_match": True}),
        threading.Thread(
            target=_dav_writer, args=(dav, merged, DAV_SAVES), kwargs={"if_match": False}
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert proc.wait(300) == 0
    _collect_shell(shell, tmp_path)
    assert len(cas.acked) == DAV_SAVES and len(merged.acked) == DAV_SAVES
    assert len(shell.acked) == SHELL_APPENDS

    def settled() -> str | None:
        text = store.read("log.md")[0].decode()
        return text if set(shell.acked) <= set(text.split()) else None

    text = wait_for(settled, what="the mount's appends committed")
    _check_log(text, [shell, cas, merged])
    # What the mount shows is the same file.
    wait_for(lambda: (mount.mountpoint / "log.md").read_text() == text, what="mount shows it")
