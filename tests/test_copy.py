"""``memfs copy`` and memfs.history.copy: a whole store, history included, between
backends (SQLite -> PostgreSQL -> SQLite)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memfs.cli import main
from memfs.errors import NotFound
from memfs.history.copy import copy_store
from memfs.store import Store, open_store
from tests.fixtures.postgres import PgCluster
from tests.store_contract.common import tree

DAY = 86_400 * 10**9
T0 = 1_700_000_000 * 10**9


def _make_history(store: Store) -> None:
    steps = iter(range(1, 1000))

    def at(author: str) -> str:
        when = T0 + next(steps) * DAY // 10
        store.clock = lambda: when
        return author

    store.write("notes/a.md", b"v1\n", author=at("alice"), parents=True)
    store.write("notes/a.md", b"v2\n", author=at("bob"))
    store.write("notes/.a.md.tmp", b"v3 atomic\n", author=at("vim"))
    store.rename("notes/.a.md.tmp", "notes/a.md", author=at("vim"), overwrite=True)
    store.write("gone.md", b"deleted later\n", author=at("alice"))
    store.delete("gone.md", author=at("carol"))
    store.symlink("notes/link", "a.md", author=at("emacs"))
    store.mkdir("old", author=at("alice"))
    store.write("old/b.md", b"b\n", author=at("alice"))
    store.set_checkpoint("before-move", author=at("alice"))
    store.rename("old", "new", author=at("dave"))
    store.set_attrs("new/b.md", author=at("dave"), mode=0o640, mtime_ns=T0)
    store.write("big.bin", bytes(range(256)) * 400, author=at("robot"))
    store.truncate("big.bin", 1000, author=at("robot"))


def _histories(store: Store) -> dict[str, list[tuple[object, ...]]]:
    paths = {c.path for c in store.changes()} | {c.old_path for c in store.changes() if c.old_path}
    out: dict[str, list[tuple[object, ...]]] = {}
    for path in sorted(p for p in paths if p):
        try:
            revisions = store.history(path)
        except (NotFound, Exception):
            continue
        out[path] = [
            (r.author, r.time_ns, r.size, r.sha256, store.read_revision(path, r.rev))
            for r in revisions
        ]
    return out


def _feed(store: Store) -> list[tuple[object, ...]]:
    return [(c.kind, c.path, c.old_path, c.author, c.time_ns, c.sha256) for c in store.changes()]


def _same(a: Store, b: Store) -> None:
    assert tree(b) == tree(a)
    assert {e.path: (e.mode, e.mtime_ns) for e in b.walk()} == {
        e.path: (e.mode, e.mtime_ns) for e in a.walk()
    }
    assert _histories(b) == _histories(a)
    assert _feed(b) == _feed(a)
    assert [(c.name, c.author, c.time_ns) for c in b.checkpoints()] == [
        (c.name, c.author, c.time_ns) for c in a.checkpoints()
    ]


def test_copy_moves_a_store_with_its_history_between_backends(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    src_url = f"sqlite://{tmp_path}/src.db"
    pg_url = pg_cluster.url()
    back_url = f"sqlite://{tmp_path}/back.db"
    with open_store(src_url) as src:
        _make_history(src)
        changes = src.last_seq()
    runner = CliRunner()
    done = runner.invoke(main, ["copy", src_url, pg_url])
    assert done.exit_code == 0, done.output
    with open_store(pg_url) as pg:
        usage = pg.usage()
        assert done.output == (
            f"Copied {changes} changes, {usage.files} files ({usage.bytes} bytes) into {pg.url}\n"
        )
    with open_store(src_url) as src, open_store(pg_url) as pg:
        _same(src, pg)
        # The checkpoint names the same tree in the copy.
        mark = pg.checkpoints()[0]
        assert any(c.path == "old/b.md" for c in pg.changes(until=mark.seq))
        assert all(c.kind != "rename" or c.path != "new" for c in pg.changes(until=mark.seq))
        with open_store(back_url) as back:
            copy_store(pg, back)
            _same(src, back)


def test_copy_refuses_a_destination_that_is_not_empty(tmp_path: Path) -> None:
    src_url, dst_url = f"sqlite://{tmp_path}/a.db", f"sqlite://{tmp_path}/b.db"
    with open_store(src_url) as src, open_store(dst_url) as dst:
        src.write("f", b"1", author="t")
        dst.write("mine", b"keep", author="t")
    done = CliRunner().invoke(main, ["copy", src_url, dst_url])
    assert done.exit_code == 1
    assert done.output == (
        f"Error: the destination {dst_url} is not empty; copy into a new store\n"
    )
    with open_store(dst_url) as dst:
        assert tree(dst) == {"mine": ("file", b"keep")}
