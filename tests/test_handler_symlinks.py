"""No command ever follows a symbolic link, planted beforehand or swapped in meanwhile."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfs.handler import MemoryHandler

SECRET = "SECRET outside the memory root\n"


def snapshot(top: Path) -> dict[str, bytes | str]:
    """Every entry under ``top``: file bytes, link targets, directories."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(top))
            if p.is_symlink():
                out[rel] = "link->" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "memories"
        self.outside = tmp_path / "outside"
        self.backup = tmp_path / "memories_backup"
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text(SECRET)
        (self.outside / "dir").mkdir()
        (self.outside / "dir" / "x.md").write_text(SECRET)
        self.backup.mkdir()
        (self.backup / "x.md").write_text(SECRET)
        self.h = MemoryHandler(self.root)
        (self.root / "real.md").write_text("real\n")
        (self.root / "sub").mkdir()
        links = {
            "file_link": self.outside / "secret.txt",
            "dir_link": self.outside / "dir",
            "backup": Path("..") / "memories_backup",
            "dangling": self.outside / "nothing-here",
            "sub/inner": self.outside,
        }
        for name, target in links.items():
            (self.root / name).symlink_to(target)
        self.before = snapshot(tmp_path / "outside"), snapshot(self.backup)

    def outside_unchanged(self) -> bool:
        return (snapshot(self.outside), snapshot(self.backup)) == self.before


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    assert w.outside_unchanged()


def refusal(path: str, link: str) -> str:
    return (
        f"Error: The path {path} cannot be used: {link} is a symbolic link, "
        "and memfs never follows links."
    )


LINKS = ["/memories/file_link", "/memories/dir_link", "/memories/backup", "/memories/dangling"]
# Paths whose walk meets a link, and the link it meets.
THROUGH = [(f"{link}/x.md", link) for link in LINKS[1:]] + [
    ("/memories/sub/inner/secret.txt", "/memories/sub/inner"),
    ("/memories/sub/inner/dir/x.md", "/memories/sub/inner"),
]
ALL = [(link, link) for link in LINKS] + THROUGH


def commands_on(path: str) -> list[dict[str, Any]]:
    return [
        {"command": "view", "path": path},
        {"command": "view", "path": path, "view_range": [1, -1]},
        {"command": "create", "path": path, "file_text": "PWNED"},
        {"command": "str_replace", "path": path, "old_str": "SECRET", "new_str": "PWNED"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "PWNED"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/moved"},
    ]


@pytest.mark.parametrize(("path", "link"), ALL)
def test_no_command_follows_a_planted_link(world: World, path: str, link: str) -> None:
    for cmd in commands_on(path):
        res = world.h.execute(cmd)
        assert res.is_error, (cmd, res)
        assert res.content == refusal(path, link), cmd
        assert world.outside_unchanged(), cmd
    assert not (world.root / "moved").exists()
    assert os.path.islink(world.root / link.removeprefix("/memories/"))


@pytest.mark.parametrize(("path", "link"), THROUGH)
def test_rename_into_a_link_is_refused(world: World, path: str, link: str) -> None:
    res = world.h.execute({"command": "rename", "old_path": "/memories/real.md", "new_path": path})
    assert (res.content, res.is_error) == (refusal(path, link), True)
    assert (world.root / "real.md").read_text() == "real\n"


@pytest.mark.parametrize("link", LINKS)
def test_rename_onto_a_link_is_an_existing_destination(world: World, link: str) -> None:
    res = world.h.execute({"command": "rename", "old_path": "/memories/real.md", "new_path": link})
    assert (res.content, res.is_error) == (f"Error: The destination {link} already exists", True)
    assert (world.root / "real.md").read_text() == "real\n"


def test_listing_leaves_links_out(world: World) -> None:
    res = world.h.execute({"command": "view", "path": "/memories"})
    assert res.is_error is False
    assert isinstance(res.content, str)  # text, not image blocks
    assert res.content.split("\n")[2:] == [
        "5B\t/memories/real.md",
        f"{_size(world.root / 'sub')}\t/memories/sub/",
    ]


def test_deleting_a_directory_with_links_inside_removes_only_the_links(world: World) -> None:
    res = world.h.execute({"command": "delete", "path": "/memories/sub"})
    assert (res.content, res.is_error) == ("Successfully deleted /memories/sub", False)
    assert not (world.root / "sub").exists()
    assert (world.outside / "secret.txt").read_text() == SECRET


def test_renaming_a_directory_with_links_inside_moves_the_links_unfollowed(world: World) -> None:
    res = world.h.execute(
        {"command": "rename", "old_path": "/memories/sub", "new_path": "/memories/s2"}
    )
    assert res.is_error is False
    assert os.readlink(world.root / "s2" / "inner") == str(world.outside)


def _size(p: Path) -> str:
    from memfs.handler.strings import human_size

    return human_size(os.lstat(p).st_size)


def test_link_swapped_in_during_writes_never_leads_outside(tmp_path: Path) -> None:
    """A thread keeps replacing the directory ``sw`` by a link to ``outside`` and back.

    Meanwhile the handler creates, edits, renames into and deletes under ``sw``. Whatever
    the interleaving, nothing may appear or change outside the root.
    """
    root = tmp_path / "memories"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.md").write_text("TARGET outside\n")
    before = snapshot(outside)
    h = MemoryHandler(root)
    (root / "sw").mkdir()
    stop = threading.Event()
    swaps = 0
    thread_errors: list[BaseException] = []

    def swapper() -> None:
        nonlocal swaps
        try:
            n = 0
            while not stop.is_set():
                n += 1
                parked = root / f"parked{n}"
                # The handler may have made, moved or removed sw meanwhile: each step is
                # tried on whatever is there, and a step that cannot be done is skipped.
                with contextlib.suppress(OSError):
                    os.rename(root / "sw", parked)
                try:
                    os.symlink(outside, root / "lnk")
                    os.rename(root / "lnk", root / "sw")
                    swaps += 1
                except OSError:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(root / "lnk")
                time.sleep(0.0005)
                if (root / "sw").is_symlink():
                    os.unlink(root / "sw")
                with contextlib.suppress(OSError):
                    os.rename(parked, root / "sw")
        except BaseException as exc:  # reported by the test, not lost in the thread
            thread_errors.append(exc)

    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    refused = succeeded = 0
    try:
        deadline = time.monotonic() + 3.0
        i = 0
        while time.monotonic() < deadline and i < 3000:
            i += 1
            for cmd in (
                {"command": "create", "path": f"/memories/sw/n{i}.md", "file_text": "MARK\n"},
                {"command": "create", "path": "/memories/sw/target.md", "file_text": "MARK\n"},
                {
                    "command": "str_replace",
                    "path": "/memories/sw/target.md",
                    "old_str": "TARGET",
                    "new_str": "MARK",
                },
                {
                    "command": "insert",
                    "path": "/memories/sw/target.md",
                    "insert_line": 0,
                    "insert_text": "MARK",
                },
                {"command": "view", "path": "/memories/sw/target.md"},
                {"command": "delete", "path": "/memories/sw/target.md"},
                {
                    "command": "rename",
                    "old_path": f"/memories/sw/n{i}.md",
                    "new_path": f"/memories/sw/m{i}.md",
                },
            ):
                res = h.execute(cmd)
                assert "TARGET outside" not in str(res.content)
                if res.is_error and "symbolic link" in str(res.content):
                    refused += 1
                elif not res.is_error:
                    succeeded += 1
            if swaps > 50 and refused > 20 and i > 200:
                break
    finally:
        stop.set()
        t.join(timeout=10)
    assert not t.is_alive()
    assert thread_errors == []
    assert snapshot(outside) == before
    # The race was really run: links were in place while commands ran, and were refused.
    print(f"swaps={swaps} refused={refused} succeeded={succeeded} rounds={i}")
    assert swaps > 10
    assert refused > 0
    assert succeeded > 0


# --- hard links: the link O_NOFOLLOW cannot see ---------------------------------------


def hard_linked(path: str) -> str:
    return (
        f"Error: The file {path} has other hard links, which may lead outside /memories, "
        "so memfs neither reads nor edits it. A person can replace it with a plain copy."
    )


def test_a_planted_hard_link_is_neither_read_nor_edited(tmp_path: Path) -> None:
    outside = tmp_path / "secret.env"
    outside.write_text(f"TOKEN={SECRET}\n")
    h = MemoryHandler(tmp_path / "memories")
    os.link(outside, tmp_path / "memories" / "notes.md")
    path = "/memories/notes.md"
    for command in (
        {"command": "view", "path": path},
        {"command": "view", "path": path, "view_range": [1, 1]},
        {"command": "str_replace", "path": path, "old_str": "TOKEN", "new_str": "X"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "X\n"},
    ):
        result = h.execute(command)
        assert (result.content, result.is_error) == (hard_linked(path), True), command
        assert SECRET not in str(result.content)
    assert outside.read_text() == f"TOKEN={SECRET}\n"
    # Removing or moving the name is fine: only the name in the root changes.
    assert (
        h.execute({"command": "rename", "old_path": path, "new_path": "/memories/n2.md"})[1]
        is False
    )
    assert h.execute({"command": "delete", "path": "/memories/n2.md"})[1] is False
    assert outside.read_text() == f"TOKEN={SECRET}\n"


def test_create_with_overwrite_does_not_touch_a_hard_linked_file(tmp_path: Path) -> None:
    outside = tmp_path / "secret.env"
    outside.write_text("keep\n")
    h = MemoryHandler(tmp_path / "memories", overwrite=True)
    os.link(outside, tmp_path / "memories" / "notes.md")
    result = h.execute({"command": "create", "path": "/memories/notes.md", "file_text": "new\n"})
    assert result == (hard_linked("/memories/notes.md"), True)
    assert outside.read_text() == "keep\n"
