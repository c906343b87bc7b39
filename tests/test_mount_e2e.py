"""People's tools on a real mount (grep, find, cp -a, rsync -a, git) and the memory
handler running the model's six commands on it, each checked against the store through
a second handle. Editors have their own module, test_mount_editors.py.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from memfs.store.base import Store
from tests.fixtures.mount import MountHandle, wait_for

pytestmark = pytest.mark.fuse


def _settled(store: Store, path: str, data: bytes, timeout: float = 10) -> None:
    wait_for(lambda: store.read(path)[0] == data, timeout, what=f"{path} committed")


def _names(store: Store) -> set[str]:
    return {e.path for e in store.walk()}


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
