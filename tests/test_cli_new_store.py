"""Every command that may create a store says so when it did (memfs.cli.stores.
open_announced): ``import`` and ``copy`` as ``mount`` and ``sync`` do, on standard
error, with the store's path, so a mistyped path never passes for the store meant.
Through the installed command and real SQLite files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memfs.store import open_store

MEMFS = str(Path(sys.executable).with_name("memfs"))


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home), "MEMFS_STORE": ""},
    )  # fmt: skip


def test_import_into_a_new_store_announces_it_once(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.md").write_bytes(b"hi\n")
    db = tmp_path / "new.db"
    done = run(tmp_path, "import", str(src), "--store", f"sqlite:///{db}")
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"Created a new store at {db}.\n"
    assert done.stdout.startswith("imported 1 file, 0 new directories (3 bytes) from ")
    again = run(tmp_path, "import", str(src), "--store", f"sqlite:///{db}", "--overwrite")
    assert (again.returncode, again.stderr) == (0, "")  # not new any more: nothing said


def test_copy_into_a_new_store_announces_it_and_makes_up_no_operation(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    with open_store(src) as store:
        store.write("notes/a.md", b"one\n", author="alice (vim)", parents=True)
    done = run(tmp_path, "copy", f"sqlite:///{src}", f"sqlite:///{dst}")
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"Created a new store at {dst}.\n"
    assert done.stdout == f"Copied 2 changes, 1 file (4 bytes) into sqlite://{dst}\n"
    with open_store(src) as a, open_store(dst) as b:
        # The copy's history is the source's: no operation settling modes or times.
        assert [o.actor for o in b.operations(limit=None)] == [
            o.actor for o in a.operations(limit=None)
        ]
    again = run(tmp_path, "copy", f"sqlite:///{src}", f"sqlite:///{dst}")
    assert "Created a new store" not in again.stderr
