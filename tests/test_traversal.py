"""Every hostile path through every command against a real root: refused, nothing touched.

The root is ``tmp_path/"memories"``; beside it sit canaries a traversal would reach
(a directory, a look-alike sibling root, a secrets file and a file literally named
``%2e%2e``). After all commands ran, a snapshot of everything under ``tmp_path`` (names,
bytes, modes, mtimes, link targets, directories' own mtimes) must be unchanged, inside
the root as well as outside it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfs.handler import MemoryHandler
from tests.hostile_paths import HOSTILE, Hostile

Snapshot = dict[str, tuple[Any, ...]]


def snapshot(base: Path, *, prune: str | None = None) -> Snapshot:
    """Every entry under ``base`` (and ``base`` itself) with what a change would alter.

    ``prune`` names a top-level directory whose content is left out (its own entry in
    ``base`` stays in, without its mtime, since it is snapshotted separately).
    """
    entries: Snapshot = {}

    def record(path: Path, rel: str, *, with_mtime: bool = True) -> None:
        st = os.lstat(path)
        data: bytes | str | None = None
        if stat.S_ISREG(st.st_mode):
            data = path.read_bytes()
        elif stat.S_ISLNK(st.st_mode):
            data = os.readlink(path)
        mtime = st.st_mtime_ns if with_mtime else None
        entries[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), mtime, data)

    record(base, ".")
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        if here == base and prune in dirnames:
            dirnames.remove(prune)
            record(base / prune, prune, with_mtime=False)
        for name in sorted(dirnames + filenames):
            full = here / name
            record(full, str(full.relative_to(base)))
    return entries


def commands_for(path: object) -> Iterator[dict[str, Any]]:
    """Each command with the hostile value as its path, every other field valid."""
    yield {"command": "view", "path": path}
    yield {"command": "view", "path": path, "view_range": [1, 2]}
    yield {"command": "create", "path": path, "file_text": "pwned\n"}
    yield {"command": "str_replace", "path": path, "old_str": "canary", "new_str": "pwned"}
    yield {"command": "str_replace", "path": path, "old_str": "canary"}
    yield {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned\n"}
    yield {"command": "delete", "path": path}
    yield {"command": "rename", "old_path": path, "new_path": "/memories/moved.md"}
    yield {"command": "rename", "old_path": "/memories/src.md", "new_path": path}
    yield {"command": "rename", "old_path": "/memories/sub", "new_path": path}


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    (root / "sub").mkdir(parents=True)
    (root / "src.md").write_text("canary in the root\n")
    (root / "sub" / "inner.md").write_text("canary below\n")
    (tmp_path / "canary").mkdir()
    (tmp_path / "canary" / "x").write_text("canary\n")
    (tmp_path / "memories_backup").mkdir()
    (tmp_path / "memories_backup" / "x").write_text("canary backup\n")
    (tmp_path / "secrets.env").write_text("SECRET=canary\n")
    (tmp_path / "%2e%2e").write_text("canary named like an encoded dot-dot\n")
    return tmp_path


@pytest.mark.parametrize("overwrite", [False, True], ids=["strict", "overwrite"])
@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.label for h in HOSTILE])
def test_hostile_path_is_refused_by_every_command(
    arena: Path, hostile: Hostile, overwrite: bool
) -> None:
    root = arena / "memories"
    handler = MemoryHandler(root, overwrite=overwrite)
    outside_before = snapshot(arena, prune="memories")
    inside_before = snapshot(root)

    for command in commands_for(hostile.path):
        result = handler.execute(command)
        assert result.is_error, (command, result)
        assert isinstance(result.content, str), (command, result)
        assert result.content.startswith("Error:"), (command, result.content)

    assert snapshot(arena, prune="memories") == outside_before
    assert snapshot(root) == inside_before


def test_snapshot_sees_a_change(arena: Path) -> None:
    """The snapshot is sharp enough to catch what the tests above rule out."""
    root = arena / "memories"
    before_out = snapshot(arena, prune="memories")
    before_in = snapshot(root)
    secrets = arena / "secrets.env"
    st = secrets.stat()
    secrets.write_text("SECRET=canarx\n")  # same size, new bytes
    os.utime(secrets, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert snapshot(arena, prune="memories") != before_out
    (root / ".hidden-tmp").write_text("")
    (root / ".hidden-tmp").unlink()  # created and removed: only the root's mtime moves
    assert snapshot(root) != before_in


def test_valid_commands_still_work_in_the_arena(arena: Path) -> None:
    """The refusals above are about the paths, not a handler refusing everything."""
    handler = MemoryHandler(arena / "memories")
    ok = handler.execute({"command": "view", "path": "/memories/src.md"})
    assert not ok.is_error
    assert "canary in the root" in str(ok.content)
    moved = handler.execute(
        {"command": "rename", "old_path": "/memories/src.md", "new_path": "/memories/moved.md"}
    )
    assert not moved.is_error
    assert moved.content == "Successfully renamed /memories/src.md to /memories/moved.md"
    assert (arena / "memories" / "moved.md").read_text() == "canary in the root\n"
