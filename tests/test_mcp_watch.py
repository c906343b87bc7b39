"""The MCP server's store watch on a real SQLite store: one update per operation, told
once the operation goes quiet (a burst that spans many commits is one update), a long
one told as far as it got, temporary and hidden names folded away. The clock is the
watch's own argument: no waiting on real time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.mcp.tree import HandlerOptions, MemoryTree
from memfs.mcp.watch import MAX_HOLD_S, QUIET_S, StoreWatch, Update
from memfs.paths import parse
from memfs.store import Store, open_store
from memfs.store.base import Act


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'memory.db'}")
    try:
        yield s
    finally:
        s.close()


def _watch(store: Store, tmp_path: Path, subdir: str = "") -> tuple[StoreWatch, list[Update]]:
    tree = MemoryTree(tmp_path, HandlerOptions(False, 1 << 20), store=store, subdir=subdir)
    told: list[Update] = []
    return StoreWatch(tree, told.append), told


def test_a_burst_over_many_commits_is_one_update_once_quiet(store: Store, tmp_path: Path) -> None:
    watch, told = _watch(store, tmp_path)
    rm = Act("root (cp)", detail="pid 7", label="cp")
    with store.acting(rm):
        for i in range(3):
            store.write(f"many/{i}.md", b"x\n", author="root (cp)", parents=True)
    watch.step(now=100.0)
    with store.acting(rm):  # the same process goes on, in later commits
        for i in range(3, 6):
            store.write(f"many/{i}.md", b"x\n", author="root (cp)")
    watch.step(now=100.0 + QUIET_S / 2)
    assert told == []  # still going on
    watch.step(now=100.0 + QUIET_S * 2)
    (update,) = told
    assert update.top == parse("/memories/many")
    assert update.summary == "root (cp) made 1 directory, created 6 files in /memories/many/"
    assert update.listing and len(update.paths) == 7


def test_a_long_operation_is_told_as_far_as_it_got_then_the_rest(
    store: Store, tmp_path: Path
) -> None:
    store.mkdir("t", author="seed")
    watch, told = _watch(store, tmp_path)
    act = Act("root (tar)", detail="pid 8", label="tar")
    written, now = 0, 0.0
    while not told and written < 1000:  # a write every half quiet time: never quiet
        with store.acting(act):
            store.write(f"t/{written}.md", b"x\n", author="root (tar)")
        written += 1
        watch.step(now=now)
        now += QUIET_S / 2
    assert now >= MAX_HOLD_S
    assert [u.summary for u in told] == [f"root (tar) created {written:,} files in /memories/t/"]
    with store.acting(act):
        store.write(f"t/{written}.md", b"x\n", author="root (tar)")
    watch.step(now=now)
    watch.step(now=now + 2 * QUIET_S)
    assert [u.summary for u in told[1:]] == [f"root (tar) created /memories/t/{written}.md"]


def test_saves_fold_hidden_names_go_and_a_subdirectory_maps(store: Store, tmp_path: Path) -> None:
    store.write("notes/a.md", b"a\n", author="seed", parents=True)
    watch, told = _watch(store, tmp_path, subdir="notes")
    with store.acting(Act("root (sed)", detail="pid 9", label="sed")):
        store.write("notes/sedXk2pQ", b"b\n", author="root (sed)")
        store.rename("notes/sedXk2pQ", "notes/a.md", author="root (sed)", overwrite=True)
    with store.acting(Act("root (vim)", detail="pid 10", label="vim")):
        store.write("notes/.a.md.swp", b"swap", author="root (vim)")
    with store.acting(Act("root (vim)", detail="pid 11", label="vim")):
        store.write("elsewhere.md", b"e\n", author="root (vim)")
    watch.step(now=0.0)
    watch.step(now=2 * QUIET_S)
    (update,) = told
    assert update.paths == [parse("/memories/a.md")] and not update.listing
    assert update.summary == "root (sed) edited /memories/a.md"
