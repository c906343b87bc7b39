"""``memfs export --history`` and ``memfs import --history``: the revisions, authors,
times and feed of a store survive the trip into an empty store; a non-empty one is
refused with nothing changed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.store import Store, open_store

# Recent, so that the source still retains every revision when it is exported (a
# renamed-away path keeps its older revisions for 10 minutes).
T0 = (time.time_ns() // 10**9 - 120) * 10**9


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def story(store: Store) -> None:
    ticks = iter(range(1000))
    store.clock = lambda: T0 + next(ticks) * 10**9
    store.write("notes/todo.md", b"one\n", author="alice", parents=True)
    store.write("notes/todo.md", b"one\ntwo\n", author="claude (model)")
    store.write("notes/gone.md", b"soon gone\n", author="bob")
    store.mkdir("empty dir", author="bob")
    store.set_checkpoint("before-rename", author="alice")
    store.rename("notes/todo.md", "notes/done.md", author="bob")
    store.write("notes/done.md", b"one\ntwo\nthree\n", author="alice")
    store.delete("notes/gone.md", author="claude (model)")


def feed(store: Store) -> list[tuple[object, ...]]:
    return [(c.kind, c.path, c.old_path, c.author, c.time_ns, c.size, c.sha256)
            for c in store.changes(0)]  # fmt: skip


def revisions(store: Store, path: str) -> list[tuple[object, ...]]:
    return [(r.author, r.time_ns, r.size, r.sha256, store.read_revision(path, r.rev))
            for r in store.history(path)]  # fmt: skip


@pytest.mark.parametrize("name", ["out", "out.tgz", "out.zip"])
def test_history_round_trip_into_an_empty_store(tmp_path: Path, name: str) -> None:
    src_db, dst_db, dest = tmp_path / "src.db", tmp_path / "dst.db", tmp_path / name
    with open_store(src_db) as src:
        story(src)
    exported = run("export", str(dest), "--history", "--store", str(src_db))
    assert exported.output.startswith("exported 1 file, 2 directories (14 bytes) and its history")
    imported = run("import", str(dest), "--history", "--store", str(dst_db))
    assert (imported.exit_code, imported.output) == (
        0,
        f"Created a new store at {dst_db}.\n"  # on standard error
        f"imported 8 changes of history: 1 file, 2 directories (14 bytes) from {dest}"
        f" into {dst_db}\n",
    )
    with open_store(src_db) as src, open_store(dst_db) as dst:
        assert feed(dst) == feed(src)
        for path in ("notes/done.md", "notes/todo.md", "notes/gone.md"):
            assert revisions(dst, path) == revisions(src, path), path
        assert dst.checkpoints() == src.checkpoints()
        assert [c.name for c in dst.checkpoints()] == ["before-rename"]
        assert [(e.path, e.kind, e.mode, e.mtime_ns) for e in dst.walk()] == [
            (e.path, e.kind, e.mode, e.mtime_ns) for e in src.walk()
        ]


def test_history_import_refuses_a_store_that_is_not_empty(tmp_path: Path) -> None:
    src_db, dst_db, dest = tmp_path / "src.db", tmp_path / "dst.db", tmp_path / "h.tar"
    with open_store(src_db) as src:
        story(src)
    with open_store(dst_db) as dst:
        dst.write("mine.md", b"mine", author="carol")
    assert run("export", str(dest), "--history", "--store", str(src_db)).exit_code == 0
    result = run("import", str(dest), "--history", "--store", str(dst_db))
    assert (result.exit_code, result.output) == (
        1,
        f"Error: --history imports into an empty store only; sqlite://{dst_db} already has"
        " 1 change (use a new store, or import without --history)\n",
    )
    with open_store(dst_db) as dst:
        assert [e.path for e in dst.walk()] == ["mine.md"]


def test_history_needs_the_carried_store(tmp_path: Path) -> None:
    src_db, dest = tmp_path / "src.db", tmp_path / "plain.tar"
    with open_store(src_db) as src:
        story(src)
    assert run("export", str(dest), "--store", str(src_db)).exit_code == 0
    result = run("import", str(dest), "--history", "--store", str(tmp_path / "new.db"))
    assert result.output == (
        f"Error: cannot import {dest} with --history: it carries no .memfs-history.db\n"
    )
    plain = run("import", str(dest), "--store", str(tmp_path / "new.db"))
    assert plain.exit_code == 0, plain.output
