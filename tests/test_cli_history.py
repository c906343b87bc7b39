"""``memfs history`` through click's CliRunner: exact lines, --limit, --show, the three
kinds of PATH (store path, model path, file in a mount) and one-line errors."""

from __future__ import annotations

import hashlib
import os
import pwd
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.store import Store, open_store
from tests.fixtures.mount import MountHandle, wait_for

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z
SHA_V1 = hashlib.sha256(b"v1\n").hexdigest()[:12]
SHA_V2 = hashlib.sha256(b"v2\n").hexdigest()[:12]


pytestmark = pytest.mark.usefixtures("utc")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "m.db") as store:
        ticks = iter(range(100))
        store.clock = lambda: (T0 + 60 * next(ticks)) * 10**9
        store.write("notes/a.md", b"v1\n", author="alice", parents=True)
        store.write("notes/a.md", b"v2\n", author="bob (pid 42)")
        yield store


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["history", *args])


def test_lists_revisions_newest_first(tmp_path: Path, store: Store) -> None:
    result = run("notes/a.md", "--store", str(tmp_path / "m.db"))
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"3  2023-11-14T22:14:20+00:00  bob (pid 42)  3  {SHA_V2}\n"
        f"2  2023-11-14T22:13:20+00:00  alice  3  {SHA_V1}\n"
    )


def test_a_model_path_and_limit(tmp_path: Path, store: Store) -> None:
    url = f"sqlite://{tmp_path}/m.db"
    result = run("/memories/notes/a.md", "--store", url, "--limit", "1")
    assert (result.exit_code, result.output) == (
        0,
        f"3  2023-11-14T22:14:20+00:00  bob (pid 42)  3  {SHA_V2}\n",
    )


def test_show_prints_one_revisions_content(tmp_path: Path, store: Store) -> None:
    result = run("notes/a.md", "--store", str(tmp_path / "m.db"), "--show", "2")
    assert (result.exit_code, result.stdout_bytes) == (0, b"v1\n")


def test_a_deleted_file_shows_its_last_revision(tmp_path: Path, store: Store) -> None:
    store.clock = time.time_ns  # deleted now: within the 30 days that keep a tombstone
    store.delete("notes/a.md", author="carol")
    result = run("/memories/notes/a.md", "--store", str(tmp_path / "m.db"))
    assert result.output == f"3  2023-11-14T22:14:20+00:00  bob (pid 42)  3  {SHA_V2}\n"
    shown = run("notes/a.md", "--store", str(tmp_path / "m.db"), "--show", "3")
    assert shown.stdout_bytes == b"v2\n"


def test_errors_are_one_line_status_1_and_name_the_store(tmp_path: Path, store: Store) -> None:
    db = str(tmp_path / "m.db")
    cases = [
        (
            ("nope.md", "--store", db),
            f"Error: no entry and no retained history at 'nope.md' (in the store {db})\n",
        ),
        (
            ("notes/a.md", "--store", db, "--show", "1"),
            f"Error: revision 1 of 'notes/a.md' is not retained (in the store {db})\n",
        ),
        (("notes", "--store", db), f"Error: 'notes' is a directory (in the store {db})\n"),
        (("/memories/../x", "--store", db), "Error: '/memories/../x' is not a memory path"),
    ]
    for args, expected in cases:
        result = run(*args)
        assert result.exit_code == 1, result.output
        assert result.stdout == "" and result.stderr.startswith(expected), result.stderr
        assert result.stderr.count("\n") == 1


def test_no_store_is_an_error_and_creates_none(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    result = run("a.md", "--store", str(missing))
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: no store at {missing}; give another --store URL\n",
    )
    assert not missing.exists()


@pytest.mark.fuse
def test_a_file_in_a_mount_uses_the_mounts_store(memfs_mount: MountHandle) -> None:
    path = memfs_mount.mountpoint / "d" / "m.md"
    path.parent.mkdir()
    for data in (b"one\n", b"two\n"):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
    store = memfs_mount.store()
    history = wait_for(lambda: (h := store.history("d/m.md")) and len(h) == 2 and h)
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert [line.split("  ")[0] for line in result.output.splitlines()] == [
        str(r.rev) for r in history
    ]
    # A person through the mount is their user and program (the pid is the detail).
    me = f"{pwd.getpwuid(os.getuid()).pw_name} ({Path('/proc/self/comm').read_text().strip()})"
    assert f"  {me}  " in result.output.splitlines()[0]
    assert run(str(path), "--show", str(history[-1].rev)).stdout_bytes == b"one\n"


@pytest.mark.fuse
def test_a_file_in_a_mount_with_store_is_read_at_its_place_in_the_tree(
    memfs_mount: MountHandle,
) -> None:
    path = memfs_mount.mountpoint / "d" / "m.md"
    path.parent.mkdir()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, b"one\n")
    os.fsync(fd)
    os.close(fd)
    store = memfs_mount.store()
    (revision,) = wait_for(lambda: store.history("d/m.md"))
    # --store names the store to read; the mounted path still means d/m.md in it.
    result = run(str(path), "--store", memfs_mount.store_url)
    assert result.exit_code == 0, result.output
    assert result.output.split("  ")[0] == str(revision.rev)
    missing = run(str(path.with_name("gone.md")), "--store", memfs_mount.store_url)
    assert missing.stderr == (
        "Error: no entry and no retained history at 'd/gone.md'"
        f" (in the store {memfs_mount.store_url})\n"
    )
