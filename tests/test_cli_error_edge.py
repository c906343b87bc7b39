"""One error edge (#17.6): a matrix of bad inputs over every command, through the
installed ``memfs``: read-only directories, truncated and garbage archives, an unknown
archive suffix, missing paths, bad URLs and a full disk. Each answers with no
traceback, one ``Error:`` line on stderr and the right exit status (1, or 2 for usage),
and leaves nothing behind that it was not asked to make.

Read-only places are read-only mounts (root ignores modes), the full disk a real 4 MiB
tmpfs filled with zeros (tests/fixtures/bad_stores.py, tests/fixtures/disks.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from memfs.store import open_store
from tests.fixtures.disks import fill

MEMFS = str(Path(sys.executable).with_name("memfs"))


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home), "MEMFS_STORE": ""},
    )


def one_error(done: subprocess.CompletedProcess[str], status: int = 1) -> str:
    """The one ``Error:`` line of a failed command (usage errors keep click's usage
    lines above it)."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, done.stderr
    if status == 1:
        assert done.stderr.splitlines() == errors, done.stderr
    return errors[0]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    d = tmp_path / "home"
    d.mkdir()
    return d


@pytest.fixture
def good(tmp_path: Path) -> str:
    db = tmp_path / "good.db"
    with open_store(db) as store:
        store.write("notes/a.md", b"alpha\n" * 2000, author="alice", parents=True)
        store.write("b.md", b"beta\n", author="alice")
    return f"sqlite://{db}"


def _archives(tmp_path: Path) -> dict[str, Path]:
    src = tmp_path / "arch"
    src.mkdir()
    tar = src / "good.tar"
    with tarfile.open(tar, "w") as t:
        for i in range(3):
            data = os.urandom(5000)
            info = tarfile.TarInfo(f"f{i}.bin")
            info.size = len(data)
            t.addfile(info, __import__("io").BytesIO(data))
    out = {"truncated.tar": src / "truncated.tar", "garbage.tar": src / "garbage.tar",
           "garbage.zip": src / "garbage.zip", "empty.tgz": src / "empty.tgz"}  # fmt: skip
    out["truncated.tar"].write_bytes(tar.read_bytes()[:7000])
    out["garbage.tar"].write_bytes(os.urandom(3000))
    out["garbage.zip"].write_bytes(b"PK\x03\x04" + os.urandom(3000))
    out["empty.tgz"].write_bytes(b"")
    return out


# --- every command, on missing things and bad URLs ---------------------------------------


def _bad_inputs(tmp: Path, good: str) -> list[tuple[list[str], int]]:
    missing_db = f"sqlite://{tmp}/nowhere/none.db"
    return [
        (["history", "nope.md", "--store", good], 1),
        (["history", "a.md", "--store", missing_db], 1),
        (["log", "--store", "foo://x/y"], 1),
        (["log", "--store", "postgresql://memfs@127.0.0.1:1/memfs"], 1),
        (["log", "--since", "not-a-time", "--store", good], 2),
        (["diff", "nope.md", "--store", good], 1),
        (["restore", "b.md", "--rev", "999", "--store", good], 1),
        (["restore", "--to", "no-such-checkpoint", "--store", good], 2),
        (["undo", "--store", missing_db], 1),
        (["checkpoint", "2h", "--store", good], 2),
        (["checkpoint", "2026-11-30T09:00", "--store", good], 2),
        (["redact", "b.md", "--rev", "999", "--store", good], 1),
        (["secrets", "nope.md", "--store", good], 1),
        (["search", "(", "--regex", "--store", good], 1),
        (["search", "x", "nope/", "--store", good], 1),
        (["trees", "--store", "foo://x"], 1),
        (["status", "--store", missing_db], 1),
        (["copy", missing_db, f"sqlite://{tmp}/copy.db"], 1),
        (["expire", "--unused-for", "soon", "--store", good], 2),
        (["expire", str(tmp), "--unused-for", "1d"], 1),
        (["export", str(tmp / "no-dir" / "out.tar"), "--store", good], 1),
        (["export", str(tmp / "out.rar"), "--store", good], 1),
        (["import", str(tmp / "nothing-here.tar"), "--store", f"sqlite://{tmp}/imp.db"], 1),
        (["tool", "--root", str(tmp / "no-root")], 2),
        (["mcp", "--http", "nonsense"], 2),
        (["mcp", "--http", "127.0.0.1:99999"], 2),
        (["umount", str(tmp / "not-mounted")], 1),
        (["sync", str(tmp / "mirror"), "--once", "--store", "foo://x"], 1),
    ]


def test_every_command_answers_bad_input_with_one_line(
    tmp_path: Path, home: Path, good: str
) -> None:
    for args, status in _bad_inputs(tmp_path, good):
        done = run(home, *args)
        try:
            one_error(done, status)
        except AssertionError as exc:
            raise AssertionError(f"memfs {' '.join(args)}: {exc}") from None
    assert not (tmp_path / "out.rar").exists()
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "imp.db").exists()
    assert not (tmp_path / "copy.db").exists() and not (tmp_path / "mirror").exists()


def test_checkpoint_names_that_read_as_a_time_are_refused(home: Path, good: str) -> None:
    for name in ("2h", "90m", "3d", "1w", "2026-11-30", "2026-11-30T09:00", "41"):
        line = one_error(run(home, "checkpoint", name, "--store", good), 2)
        assert "a checkpoint name" in line, line
    done = run(home, "checkpoint", "before-refactor", "--store", good)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["truncated.tar", "garbage.tar", "garbage.zip", "empty.tgz"])
def test_a_damaged_archive_is_one_line(tmp_path: Path, home: Path, name: str) -> None:
    archive = _archives(tmp_path)[name]
    line = one_error(run(home, "import", str(archive), "--store", f"sqlite://{tmp_path}/i.db"))
    assert str(archive) in line


# --- read-only places -------------------------------------------------------------------


def test_read_only_directories(read_only_dir: Path, tmp_path: Path, home: Path, good: str) -> None:
    ro = read_only_dir
    src = tmp_path / "src"
    src.mkdir()
    (src / "n.md").write_text("n\n")
    line = one_error(run(home, "export", str(ro / "out.tar"), "--store", good))
    assert line == f"Error: cannot export to {ro / 'out.tar'}: Read-only file system"
    one_error(run(home, "export", str(ro / "tree"), "--store", good))
    one_error(run(home, "import", str(src), "--store", f"sqlite://{ro}/new.db"))
    one_error(run(home, "copy", good, f"sqlite://{ro}/copy.db"))
    # The tool answers the model (the result line on stdout), and says nothing else.
    created = '{"command": "create", "path": "/memories/x.md", "file_text": "x"}'
    done = run(home, "tool", "--root", str(ro), created)
    assert done.returncode == 1 and done.stderr == ""
    assert done.stdout.count("\n") == 1 and '"is_error": true' in done.stdout
    assert "Read-only file system" in done.stdout
    streamed = subprocess.run(
        [MEMFS, "tool", "--root", str(ro)],
        input=created + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(home)},
    )
    assert (streamed.returncode, streamed.stderr) == (0, "")
    assert streamed.stdout.count("\n") == 1
    # A mirror that cannot write its directory did not sync: it says so, non-zero.
    line = one_error(
        run(home, "sync", str(ro), "--once", "--store", good, "--state", str(tmp_path / "s"))
    )
    assert line.startswith(f"Error: could not sync {ro}: ")
    assert os.listdir(ro) == []


def test_a_full_disk(small_disk: Path, tmp_path: Path, home: Path, good: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.md").write_bytes(b"x" * 200_000)
    # A store made while there was room, then the disk fills up.
    with open_store(small_disk / "m.db") as store:
        store.write("seed.md", b"seed\n", author="t")
    filler = fill(small_disk)
    try:
        one_error(run(home, "import", str(src), "--store", f"sqlite://{small_disk}/m.db"))
        line = one_error(run(home, "export", str(small_disk / "out.tar"), "--store", good))
        assert line.endswith("No space left on device"), line
        # Nothing of the export is left (the store's own -wal and -shm may be).
        assert not [n for n in os.listdir(small_disk) if "out.tar" in n]
        one_error(run(home, "checkpoint", "full", "--store", f"sqlite://{small_disk}/m.db"))
    finally:
        filler.unlink()
    with open_store(small_disk / "m.db") as store:
        assert [e.path for e in store.walk()] == ["seed.md"]
