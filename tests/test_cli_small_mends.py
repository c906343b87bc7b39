"""The new user's list from #17: one default mountpoint for ``make run``, ``memfs
mount``, ``umount`` and ``agent``; ``memfs status --json`` and ``memfs trees --json``;
``memfs tool --root DIR --store URL`` on a plain directory says the store is not used
and does not use it. Through the installed command, a real FUSE mount, real SQLite
files and the suite's PostgreSQL cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memfs.store import open_store
from tests.fixtures.mount import MountHandle
from tests.fixtures.postgres import PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))
ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "HOME": str(home), **env}
    environ.pop("MEMFS_MOUNTPOINT", None)
    return subprocess.run(
        [MEMFS, *args], capture_output=True, text=True, timeout=60, env=environ,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_make_run_mount_umount_and_agent_share_one_default_mountpoint(tmp_path: Path) -> None:
    dry = subprocess.run(
        ["make", "-n", "run", "stop"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert dry.returncode == 0, dry.stderr
    said = [
        line.split(" ", 1)[1].strip() for line in dry.stdout.splitlines() if "bin/memfs " in line
    ]
    assert said == ["mount --exist-ok", "umount"]  # no mountpoint: memfs's own default
    home = tmp_path / "home"
    home.mkdir()
    expected = home / "memories"
    umount = run("umount", home=home)
    assert umount.returncode == 1 and str(expected) in umount.stderr
    agent = run("agent", "hello", home=home, ANTHROPIC_API_KEY="sk-ant-test")
    assert agent.returncode == 1
    assert agent.stderr.startswith(f"Error: nothing is mounted at {expected};")
    help_text = run("mount", "--help", home=home).stdout
    assert "$MEMFS_MOUNTPOINT or ~/memories" in " ".join(help_text.split())


def test_status_json_lists_a_mount(memfs_mount: MountHandle, tmp_path: Path) -> None:
    # Counted from the store: fsync commits the file now, not after the mount's quiet
    # period (which a loaded machine can stretch past the status call).
    with open(memfs_mount.mountpoint / "a.md", "w") as f:
        f.write("a\n")
        f.flush()
        os.fsync(f.fileno())
    home = tmp_path / "home"
    home.mkdir()
    done = run("status", "--json", home=home)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["mirrors"], report["journals"]) == ([], [])
    (mount,) = report["mounts"]
    assert mount["mountpoint"] == str(memfs_mount.mountpoint)
    assert (mount["state"], mount["pid"], mount["store"]) == (
        "mounted",
        memfs_mount.pid,
        memfs_mount.store_url,
    )
    assert mount["files"] == 1 and mount["notes"] == []


def test_status_json_of_one_store(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(f"sqlite://{db}?max_files=10") as store:
        store.write("d/a.md", b"abc", author="t", parents=True)
    done = run("status", "--json", "--store", f"sqlite://{db}?max_files=10", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "store": f"sqlite://{db}?max_files=10",
        "files": 1,
        "dirs": 1,
        "bytes": 3,
        "max_files": 10,
        "max_tree_bytes": None,
        "max_file_bytes": 64 * 1024 * 1024,
    }


def test_trees_json(pg_cluster: PgCluster, tmp_path: Path) -> None:
    url = pg_cluster.url("json-tree")
    with open_store(url) as store:
        store.write("x.md", b"12345", author="t")
    done = run("trees", "--json", "--store", url, home=tmp_path)
    assert done.returncode == 0, done.stderr
    trees = {t["tree"]: t for t in map(json.loads, done.stdout.splitlines())}
    assert trees["json-tree"]["files"] == 1 and trees["json-tree"]["bytes"] == 5
    assert trees["json-tree"]["url"].endswith("tree=json-tree")


def test_tool_on_a_plain_directory_does_not_use_the_store(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    db = tmp_path / "elsewhere.db"
    created = '{"command": "create", "path": "/memories/n.md", "file_text": "n\\n"}'
    done = run("tool", "--root", str(plain), "--store", f"sqlite://{db}", created, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        f"memfs tool: not using --store: {plain} is a plain directory, not a memfs mount"
    )
    assert (plain / "n.md").read_text() == "n\n"
    assert not db.exists()
