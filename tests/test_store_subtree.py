"""The path-prefix view of a store (memfs.store.subtree) without a mount: what it maps,
what it leaves out, and what the change feed looks like from inside."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.errors import InvalidMove, NotFound
from memfs.store import open_store
from memfs.store.base import Store, WriteItem
from memfs.store.subtree import SubtreeStore

SUB = "team/repo"


@pytest.fixture
def base(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite://{tmp_path / 's.db'}") as store:
        store.mkdir(SUB, author="t", parents=True)
        store.mkdir("elsewhere", author="t")
        yield store


def test_paths_map_both_ways(base: Store) -> None:
    view = SubtreeStore(base, SUB)
    entry = view.write("notes/a.md", b"a\n", author="t", parents=True)
    assert entry.path == "notes/a.md"
    assert base.read(f"{SUB}/notes/a.md")[0] == b"a\n"
    assert [r.path for r in view.history("notes/a.md")] == ["notes/a.md"]
    assert [e.path for e in view.walk()] == ["notes", "notes/a.md"]
    assert [h.path for h in view.search("a")] == ["notes/a.md"]
    view.rename("notes/a.md", "b.md", author="t")
    assert view.settled().keys() <= {"b.md"}
    assert view.stat("b.md").is_file
    with pytest.raises(NotFound):
        view.stat("notes/a.md")
    with pytest.raises(InvalidMove):
        view.delete("", author="t", recursive=True)
    with pytest.raises(InvalidMove):
        view.rename("b.md", "", author="t", overwrite=True)


def test_write_many_and_mtime_map_both_ways(base: Store) -> None:
    view = SubtreeStore(base, SUB)
    made = view.write_many(
        [WriteItem("a.md", b"a", 0o644, 5_000_000_000), WriteItem("b.md", b"b")], author="t"
    )
    assert [e.path for e in made] == ["a.md", "b.md"] and made[0].mtime_ns == 5_000_000_000
    assert base.read(f"{SUB}/b.md")[0] == b"b"
    assert view.write("c.md", b"c", author="t", mtime_ns=6_000_000_000).mtime_ns == 6_000_000_000
    assert base.stat(f"{SUB}/c.md").mtime_ns == 6_000_000_000


def test_the_feed_from_inside(base: Store) -> None:
    view = SubtreeStore(base, SUB)
    start = view.last_seq()
    base.write(f"{SUB}/in.md", b"1", author="t")
    base.write("elsewhere/out.md", b"2", author="t")
    base.rename("elsewhere/out.md", f"{SUB}/arrived.md", author="t")
    base.rename(f"{SUB}/in.md", "elsewhere/left.md", author="t")
    base.rename(f"{SUB}/arrived.md", f"{SUB}/moved.md", author="t")
    base.write("elsewhere/last.md", b"3", author="t")
    seen = [(c.kind, c.path, c.old_path) for c in view.changes(start)]
    assert seen == [
        ("create", "in.md", None),
        ("rename", "arrived.md", None),  # arrived from outside
        ("delete", "in.md", None),  # left for outside
        ("rename", "moved.md", "arrived.md"),
        ("attr", "", None),  # stands for the change outside, so a cursor moves on
    ]
    assert view.changes(start)[-1].seq == base.last_seq()
    assert [c.path for c in view.changes(start, 2)] == ["in.md", "arrived.md"]
    newest = view.changes(start, 2, newest_first=True)
    assert [(c.kind, c.path) for c in newest] == [("rename", "moved.md"), ("delete", "in.md")]
    # Nothing changed since: nothing, not even the stand-in.
    assert view.changes(base.last_seq()) == []


def test_view_paths_for_other_doors(base: Store) -> None:
    view = SubtreeStore(base, SUB)
    assert view.view_paths([f"{SUB}/a.md", "elsewhere/x", "team", "", SUB]) == ["a.md", ""]
    assert view.journal_key == f"{base.url}#subtree={SUB}"
