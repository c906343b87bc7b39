"""People's tools on a real mount: editors' exact save patterns, grep, find, cp, rsync, git,
and the memory handler, each checked against the store through a second handle.

Editors that are not installed are reproduced syscall for syscall (the sequences are in
the FUSE field notes); vim also runs for real when it is on PATH.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from memfs.store.base import Store
from tests.fixtures.mount import MountHandle, wait_for

pytestmark = pytest.mark.fuse

ME = f"(pid {os.getpid()})"
OLD = b"# Notes\n\nold line\n"
NEW = b"# Notes\n\nnew line, saved by an editor\n" * 3
CONTENT_KINDS = ("create", "modify")


def _content_revisions(store: Store, since: int, paths: set[str]) -> int:
    """How many new content revisions the save made, on the file or its temp names."""
    return sum(
        1
        for c in store.changes(since)
        if c.kind in CONTENT_KINDS and c.rev is not None and c.path in paths
    )


def _settled(store: Store, path: str, data: bytes, timeout: float = 10) -> None:
    wait_for(lambda: store.read(path)[0] == data, timeout, what=f"{path} committed")


def _names(store: Store) -> set[str]:
    return {e.path for e in store.walk()}


@pytest.fixture
def notes(memfs_mount: MountHandle) -> tuple[MountHandle, Store, Path, int]:
    """``notes.md`` with OLD content, committed; returns the change-feed position after."""
    store = memfs_mount.store()
    path = memfs_mount.mountpoint / "notes.md"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    os.write(fd, OLD)
    os.fsync(fd)
    os.close(fd)
    assert store.read("notes.md")[0] == OLD
    return memfs_mount, store, path, store.last_seq()


def _assert_one_save(store: Store, since: int, temps: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    assert store.read("notes.md")[0] == NEW
    assert _content_revisions(store, since, {"notes.md", *temps}) == 1
    latest = store.history("notes.md", 1)[0]
    assert latest.sha256 == hashlib.sha256(NEW).hexdigest()
    assert ME in latest.author, latest.author


# --- editors ----------------------------------------------------------------------------


def test_vscode_save(notes) -> None:  # type: ignore[no-untyped-def]
    _, store, path, since = notes
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.pwrite(fd, NEW, 0)
    os.fdatasync(fd)
    os.close(fd)
    _assert_one_save(store, since)
    assert stat.S_IMODE(store.stat("notes.md").mode) == 0o640


def test_jetbrains_safe_write(notes) -> None:  # type: ignore[no-untyped-def]
    _, store, path, since = notes
    tmp = path.with_name("notes.md___jb_tmp___")
    old = path.with_name("notes.md___jb_old___")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    os.write(fd, NEW)
    os.close(fd)
    os.rename(path, old)
    os.rename(tmp, path)
    os.unlink(old)
    assert path.read_bytes() == NEW
    _settled(store, "notes.md", NEW)
    _assert_one_save(store, since, {tmp.name})
    assert _names(store) == {"notes.md"}


def _vim_swap(swap: Path) -> int:
    fd = os.open(swap, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    for page in range(3):
        os.pwrite(fd, bytes([page + 1]) * 4096, page * 4096)
        os.fsync(fd)
    os.fchmod(fd, 0o600)
    return fd


def _vim_probe(directory: Path) -> None:
    # vim checks it may create files with the right owner by making and deleting "4913".
    probe = directory / "4913"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    os.fchown(fd, os.getuid(), os.getgid())
    os.close(fd)
    os.unlink(probe)


@pytest.mark.parametrize("backup", [False, True], ids=["in-place", "backup-rename"])
def test_vim_save(notes, backup: bool) -> None:  # type: ignore[no-untyped-def]
    _, store, path, since = notes
    swap = path.with_name(".notes.md.swp")
    swap_fd = _vim_swap(swap)
    try:
        _vim_probe(path.parent)
        if backup:
            os.rename(path, path.with_name("notes.md~"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        os.write(fd, NEW)
        os.fsync(fd)
        os.fchmod(fd, 0o640)
        os.close(fd)
        if backup:
            os.unlink(path.with_name("notes.md~"))
    finally:
        os.close(swap_fd)
        os.unlink(swap)
    _assert_one_save(store, since)
    assert stat.S_IMODE(store.stat("notes.md").mode) == 0o640
    assert _names(store) == {"notes.md"}


@pytest.mark.parametrize("program", ["vim.tiny", "vim.basic"])
def test_real_vim_edits_through_the_mount(notes, program: str) -> None:  # type: ignore[no-untyped-def]
    vim = shutil.which(program)
    if vim is None:
        pytest.skip(f"{program} is not installed (the syscall-level vim tests still ran)")
    mount, store, path, since = notes
    proc = subprocess.Popen(
        [
            vim,
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-N",
            "-es",
            "-c",
            "%s/old line/new line, saved by vim/",
            "-c",
            "wq",
            str(path),
        ],
        cwd=mount.mountpoint,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    expected = OLD.replace(b"old line", b"new line, saved by vim")
    assert path.read_bytes() == expected
    _settled(store, "notes.md", expected)
    latest = store.history("notes.md", 1)[0]
    assert f"(pid {proc.pid})" in latest.author and "vim" in latest.author, latest.author
    assert _content_revisions(store, since, {"notes.md"}) == 1
    assert _names(store) == {"notes.md"}  # swap file and probe are gone


def test_emacs_save(notes) -> None:  # type: ignore[no-untyped-def]
    _, store, path, since = notes
    lock = path.with_name(".#notes.md")
    os.symlink(
        f"{os.environ.get('USER', 'root')}@{socket.gethostname()}.{os.getpid()}:1700000000", lock
    )
    assert os.readlink(lock).endswith(":1700000000")
    os.rename(path, path.with_name("notes.md~"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.write(fd, NEW)
    os.fsync(fd)
    os.close(fd)
    os.chmod(path, 0o640)
    os.unlink(lock)
    _assert_one_save(store, since)
    assert store.read("notes.md~")[0] == OLD  # emacs keeps its backup
    assert _names(store) == {"notes.md", "notes.md~"}


def test_gedit_save_over_an_open_file(notes) -> None:  # type: ignore[no-untyped-def]
    _, store, path, since = notes
    held = os.open(path, os.O_RDONLY)  # gedit keeps the document open while saving
    try:
        assert os.read(held, 100) == OLD
        tmp = path.with_name(".goutputstream-Q1W2E3")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o640)
        os.write(fd, NEW)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, path)
    finally:
        os.close(held)
    assert path.read_bytes() == NEW
    _settled(store, "notes.md", NEW)
    _assert_one_save(store, since, {tmp.name})
    assert _names(store) == {"notes.md"}


# --- tools ------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    files = {
        "a.md": b"alpha needle\n",
        "dir/b.md": b"beta\n",
        "dir/sub/c.txt": b"gamma needle\n" * 500,
        "dir/sub/d.bin": os.urandom(70_000),
        "e.md": b"",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_grep_and_find(memfs_mount: MountHandle) -> None:
    mp = memfs_mount.mountpoint
    files = _tree(mp)
    hits = subprocess.run(
        ["grep", "-rl", "needle", "."], cwd=mp, capture_output=True, text=True, timeout=30
    )
    assert hits.returncode == 0, hits.stderr
    assert sorted(hits.stdout.split()) == ["./a.md", "./dir/sub/c.txt"]
    found = subprocess.run(
        ["find", ".", "-type", "f"], cwd=mp, capture_output=True, text=True, timeout=30
    )
    assert sorted(found.stdout.split()) == sorted(f"./{rel}" for rel in files)
    store = memfs_mount.store()
    for rel, data in files.items():
        _settled(store, rel, data)


def _snapshot(root: Path) -> dict[str, tuple[str, int, int, bytes]]:
    """kind, permission bits, mtime (ns) and content (or link target) of every entry."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = path.relative_to(root).as_posix()
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", 0, 0, os.readlink(path).encode())
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", stat.S_IMODE(st.st_mode), 0, b"")
        else:
            out[rel] = ("file", stat.S_IMODE(st.st_mode), st.st_mtime_ns, path.read_bytes())
    return out


def _native_source(tmp_path: Path) -> Path:
    src = tmp_path / "native"
    src.mkdir()
    _tree(src)
    os.chmod(src / "a.md", 0o640)
    os.chmod(src / "dir/sub/d.bin", 0o600)
    os.symlink("dir/b.md", src / "link-to-b")
    os.utime(src / "a.md", ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    return src


def _check_store_matches(
    store: Store, snap: dict[str, tuple[str, int, int, bytes]], prefix: str
) -> None:
    for rel, (kind, mode, _mtime, data) in snap.items():
        entry = store.stat(f"{prefix}/{rel}")
        assert entry.kind == {"link": "symlink", "dir": "dir", "file": "file"}[kind]
        if kind == "file":
            assert store.read(entry.path)[0] == data
            assert stat.S_IMODE(entry.mode) == mode
        elif kind == "link":
            assert entry.target == data.decode()


def test_cp_a_into_the_mount_and_back(memfs_mount: MountHandle, tmp_path: Path) -> None:
    src = _native_source(tmp_path)
    mp = memfs_mount.mountpoint
    subprocess.run(["cp", "-a", f"{src}/.", str(mp / "copy")], check=True, timeout=60)
    back = tmp_path / "back"
    subprocess.run(["cp", "-a", str(mp / "copy"), str(back)], check=True, timeout=60)
    want = _snapshot(src)
    assert _snapshot(mp / "copy") == want
    assert _snapshot(back) == want
    store = memfs_mount.store()
    wait_for(lambda: store.read("copy/a.md")[0] == want["a.md"][3], 10)
    _check_store_matches(store, want, "copy")


def test_rsync_a_into_the_mount_and_back(memfs_mount: MountHandle, tmp_path: Path) -> None:
    if shutil.which("rsync") is None:
        pytest.skip("rsync is not installed (make system-deps installs it)")
    src = _native_source(tmp_path)
    mp = memfs_mount.mountpoint
    subprocess.run(["rsync", "-a", f"{src}/", str(mp / "sync")], check=True, timeout=60)
    # A second run over an unchanged tree must find nothing to transfer.
    again = subprocess.run(
        ["rsync", "-a", "--itemize-changes", f"{src}/", str(mp / "sync")],
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert again.stdout == ""
    back = tmp_path / "back"
    subprocess.run(["rsync", "-a", f"{mp / 'sync'}/", str(back)], check=True, timeout=60)
    want = _snapshot(src)
    assert _snapshot(mp / "sync") == want
    assert _snapshot(back) == want
    store = memfs_mount.store()
    wait_for(lambda: store.read("sync/a.md")[0] == want["a.md"][3], 10)
    _check_store_matches(store, want, "sync")


def test_git_init_add_commit_status(memfs_mount: MountHandle) -> None:
    repo = memfs_mount.mountpoint / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# memory\n")
    (repo / "notes").mkdir()
    (repo / "notes" / "todo.md").write_text("- buy milk\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(memfs_mount.mountpoint.parent),
    }

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    assert git("status", "--porcelain") == ""
    (repo / "notes" / "todo.md").write_text("- buy milk\n- call mum\n")
    git("commit", "-qam", "second")
    assert git("status", "--porcelain") == ""
    assert git("log", "--format=%s").split() == ["second", "first"]
    git("fsck", "--no-progress", "--strict")
    store = memfs_mount.store()
    _settled(store, "repo/notes/todo.md", b"- buy milk\n- call mum\n")
    head = store.read("repo/.git/HEAD")[0]
    assert head.startswith(b"ref: refs/heads/")


# --- the memory handler, running the model's commands on the mount -------------------------


def test_handler_commands_through_the_mount(memfs_mount: MountHandle) -> None:
    try:
        from memfs.handler import MemoryHandler
    except ImportError:
        pytest.skip("memfs.handler does not export MemoryHandler yet")
    handler = MemoryHandler(memfs_mount.mountpoint)
    store = memfs_mount.store()

    def ok(command: dict[str, object]) -> str:
        result = handler.execute(command)
        assert not result.is_error, result.content
        return str(result.content)

    ok({"command": "create", "path": "/memories/p/facts.md", "file_text": "sky: blue\n"})
    _settled(store, "p/facts.md", b"sky: blue\n")
    ok(
        {
            "command": "str_replace",
            "path": "/memories/p/facts.md",
            "old_str": "blue",
            "new_str": "grey",
        }
    )
    _settled(store, "p/facts.md", b"sky: grey\n")
    ok(
        {
            "command": "insert",
            "path": "/memories/p/facts.md",
            "insert_line": 0,
            "insert_text": "# Facts\n",
        }
    )
    _settled(store, "p/facts.md", b"# Facts\nsky: grey\n")
    assert "sky: grey" in ok({"command": "view", "path": "/memories/p/facts.md"})
    assert "facts.md" in ok({"command": "view", "path": "/memories"})
    ok(
        {
            "command": "rename",
            "old_path": "/memories/p/facts.md",
            "new_path": "/memories/p/world.md",
        }
    )
    wait_for(lambda: "p/world.md" in _names(store) and "p/facts.md" not in _names(store), 10)
    assert store.read("p/world.md")[0] == b"# Facts\nsky: grey\n"
    ok({"command": "delete", "path": "/memories/p"})
    wait_for(lambda: _names(store) == set(), 10)
    assert not (memfs_mount.mountpoint / "p").exists()
