"""Reading needs no write access (#17.5): every command that only reads opens its store
read-only. On an SQLite store whose file and directory are read-only (modes 0444 and
0555, and seen through a read-only bind mount, since root ignores modes) each one
answers as it does on the writable original, and leaves the file byte-identical with
no -wal or -shm beside it; where the directory can be written, it takes away the
-wal and -shm its open made. A mistyped PostgreSQL tree (``?tree=tema``) is one line
naming the trees that exist, exit status 1, and is never created.

Through click's CliRunner (stderr apart from stdout), real SQLite files, a read-only
bind mount (tests/fixtures/bad_stores.py) and the suite's PostgreSQL cluster.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.cli.history import format_revision
from memfs.store import open_store
from memfs.store.base import Store
from tests.fixtures.bad_stores import read_only_view
from tests.fixtures.postgres import PgCluster

A = "alice"
KEY = "ghp_rKSHcxWxqTDlXSkk0bX7vxSla9BOFbWFrGW9"  # a GitHub token's shape, not a real one


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def fingerprint(directory: Path) -> dict[str, str]:
    """Every file in ``directory`` and its SHA-256: what a reading command must not change."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def fill(store: Store) -> None:
    store.write("a.md", b"apple one\n", author=A)
    store.set_checkpoint("before-pear", author=A)
    store.write("a.md", b"apple two\npear\n", author=A)
    store.write("notes/keys.md", f"token {KEY}\n".encode(), author=A, parents=True)


# Each command that only reads, as run against the store URL it is given.
READERS: dict[str, list[str]] = {
    "history": ["history", "a.md"],
    "history --show": ["history", "a.md", "--show", "1"],
    "log": ["log"],
    "log PATH --files": ["log", "a.md", "--files"],
    "diff": ["diff", "a.md"],
    "diff --since": ["diff", "--since", "before-pear"],
    "search": ["search", "apple"],
    "search --regex": ["search", "^pe+ar$", "--regex"],
    # --exit-zero: the store holds a secret, which would make secrets exit 1.
    "secrets": ["secrets", "--exit-zero"],
    "secrets --history": ["secrets", "--history", "--exit-zero"],
    "status --json": ["status", "--json"],
    "trees": ["trees"],
    "trees --json": ["trees", "--json"],
    "check": ["check"],
    "checkpoint --list": ["checkpoint", "--list"],
    "undo --dry-run": ["undo", "--dry-run"],
    "restore --to --dry-run": ["restore", "--to", "before-pear", "--dry-run"],
}


def read_with(name: str, url: str) -> Result:
    return invoke(*READERS[name], "--store", url)


@pytest.fixture
def original(tmp_path: Path) -> Path:
    """A store holding a little history, closed (so nothing but the file is left), its
    directory and file read-only by mode."""
    source = tmp_path / "rw"
    source.mkdir()
    with open_store(source / "memory.db") as store:
        fill(store)
    assert sorted(os.listdir(source)) == ["memory.db"]
    return source


@pytest.fixture
def read_only(original: Path, tmp_path: Path) -> Iterator[Path]:
    """``original``'s store, mode 0444 in a 0555 directory, through a read-only mount."""
    (original / "memory.db").chmod(0o444)
    original.chmod(0o555)
    try:
        with read_only_view(original, tmp_path / "ro") as view:
            yield view / "memory.db"
    finally:
        original.chmod(0o755)


def test_the_store_really_cannot_be_written(read_only: Path) -> None:
    # Root ignores the modes; the mount is what stops it.
    with pytest.raises(OSError, match="Read-only file system"):
        open(read_only, "r+b").close()
    with pytest.raises(OSError, match="Read-only file system"):
        (read_only.parent / "x").write_bytes(b"")
    done = invoke("checkpoint", "nope", "--store", str(read_only))  # a command that writes
    assert done.exit_code == 1 and "for writing" in done.stderr


@pytest.mark.parametrize("name", READERS)
def test_each_reading_command_works_where_nothing_can_be_written(
    read_only: Path, tmp_path: Path, name: str
) -> None:
    before = fingerprint(read_only.parent)
    url = f"sqlite://{read_only}"
    done = read_with(name, url)
    assert (done.exit_code, done.stderr) == (0, ""), done.output
    assert done.stdout
    assert fingerprint(read_only.parent) == before
    assert sorted(os.listdir(read_only.parent)) == ["memory.db"]
    # The same answer as from the writable original, with its own URL in it.
    original = tmp_path / "rw" / "memory.db"
    (tmp_path / "rw").chmod(0o755)
    (original).chmod(0o644)
    same = read_with(name, f"sqlite://{original}")
    assert (same.exit_code, same.stderr) == (0, "")
    assert done.stdout.replace(str(read_only), str(original)) == same.stdout


def test_fixed_answers_on_the_read_only_store(read_only: Path) -> None:
    url = f"sqlite://{read_only}"
    with open_store(read_only, readonly=True) as store:
        revisions = store.history("a.md")
    assert read_with("history", url).stdout == "".join(format_revision(r) + "\n" for r in revisions)
    assert read_with("history --show", url).stdout == "apple one\n"
    assert read_with("search", url).stdout == "a.md:1:apple two\n"
    assert read_with("search --regex", url).stdout == "a.md:2:pear\n"
    secrets = read_with("secrets", url).stdout.splitlines()
    assert secrets[0].startswith("notes/keys.md  rev 4 (current)  line 1  github-token  ")
    assert secrets[1] == "1 likely credential in 1 file (of 2 scanned)."
    assert json.loads(read_with("status --json", url).stdout) == {
        "store": url,
        "files": 2,
        "dirs": 1,
        "bytes": len(b"apple two\npear\n") + len(f"token {KEY}\n"),
        "max_files": None,
        "max_tree_bytes": None,
        "max_file_bytes": 64 * 1024 * 1024,
    }
    assert read_with("trees", url).stdout.splitlines()[1].split() == [
        "default", "2", "1", "62", "B", "4", url,
    ]  # fmt: skip
    assert read_with("check", url).stdout == "All 3 retained revisions match their SHA-256.\n"
    listed = read_with("checkpoint --list", url).stdout
    assert re.fullmatch(r"before-pear  \S+  alice  change 1\n", listed), listed
    undo = read_with("undo --dry-run", url).stdout
    assert undo.startswith("would undo operation ") and "notes/keys.md" in undo
    assert read_with("restore --to --dry-run", url).stdout == (
        "would delete  notes/keys.md\n"
        "would remove directory  notes\n"
        "would put back  a.md\n"
        "3 changes would return the tree to before-pear\n"
    )


def test_export_and_copy_read_a_read_only_store(read_only: Path, tmp_path: Path) -> None:
    before = fingerprint(read_only.parent)
    url = f"sqlite://{read_only}"
    out = tmp_path / "out"
    done = invoke("export", str(out), "--history", "--quiet", "--store", url)
    assert (done.exit_code, done.stderr) == (0, ""), done.output
    assert (out / "a.md").read_bytes() == b"apple two\npear\n"
    assert (out / ".memfs-history.db").exists()
    tarball = tmp_path / "out.tar.gz"
    done = invoke("export", str(tarball), "--quiet", "--store", url)
    assert (done.exit_code, done.stderr) == (0, "") and tarball.stat().st_size > 0
    copied = tmp_path / "copy.db"
    done = invoke("copy", url, f"sqlite://{copied}")
    assert (done.exit_code, done.stderr) == (0, f"Created a new store at {copied}.\n"), done.output
    with open_store(copied) as store:
        assert store.read("a.md")[0] == b"apple two\npear\n"
        assert [r.rev for r in store.history("a.md")] == [2, 1]
    assert fingerprint(read_only.parent) == before
    assert sorted(os.listdir(read_only.parent)) == ["memory.db"]


def test_a_writable_directory_is_left_as_it_was(original: Path) -> None:
    """The -wal and -shm a read-only open makes beside the store go when it closes."""
    before = fingerprint(original)
    url = f"sqlite://{original / 'memory.db'}"
    for name in READERS:
        done = read_with(name, url)
        assert done.exit_code == 0, (name, done.output)
        assert fingerprint(original) == before, name
    out = original.parent / "out.tar"
    assert invoke("export", str(out), "--quiet", "--store", url).exit_code == 0
    assert fingerprint(original) == before


def test_a_reader_sees_a_live_writer_and_leaves_its_log(original: Path) -> None:
    path = original / "memory.db"
    with open_store(path) as writer:
        writer.defer_maintenance()  # the commit stays in the writer's -wal
        writer.write("live.md", b"kiwi\n", author="bob")
        done = invoke("search", "kiwi", "--store", str(path))
        assert (done.exit_code, done.stdout) == (0, "live.md:1:kiwi\n")
        assert {"memory.db-wal", "memory.db-shm"} <= set(os.listdir(original))
        writer.write("live.md", b"kiwi and lime\n", author="bob")  # the writer goes on
        done = invoke("search", "lime", "--store", str(path))
        assert (done.exit_code, done.stdout) == (0, "live.md:1:kiwi and lime\n")
    assert sorted(os.listdir(original)) == ["memory.db"]


# --- a PostgreSQL tree that is not there -----------------------------------------------


@pytest.fixture
def pg_trees(pg_cluster: PgCluster) -> tuple[PgCluster, str]:
    """A database of this test's own holding the trees ``team`` and ``other``."""
    db = "ro" + os.urandom(4).hex()
    pg_cluster.psql(f"CREATE DATABASE {db}")
    for tree in ("team", "other"):
        with open_store(pg_cluster.url(tree, db=db)) as store:
            fill(store)
    return pg_cluster, db


@pytest.mark.parametrize("name", [n for n in READERS if not n.startswith("trees")])
def test_a_mistyped_tree_is_one_line_and_never_made(
    pg_trees: tuple[PgCluster, str], name: str
) -> None:
    cluster, db = pg_trees
    url = cluster.url("tema", db=db)
    done = read_with(name, url)
    where = f"{cluster.socket_dir}:5432/{db}"
    assert (done.exit_code, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: the PostgreSQL database {where} has no tree 'tema' (its trees: other,"
        " team); name one of them with ?tree=NAME or give another --store URL\n"
    )
    listed = invoke("trees", "--store", url)
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["other", "team"]


def test_export_and_copy_of_a_mistyped_tree(
    pg_trees: tuple[PgCluster, str], tmp_path: Path
) -> None:
    cluster, db = pg_trees
    url = cluster.url("tema", db=db)
    for args in (
        ["export", str(tmp_path / "out"), "--store", url],
        ["copy", url, str(tmp_path / "c.db")],
    ):
        done = invoke(*args)
        assert (done.exit_code, done.stdout) == (1, ""), args
        assert (
            done.stderr.count("\n") == 1
            and "has no tree 'tema' (its trees: other, team)" in done.stderr
        )
    assert not (tmp_path / "out").exists() and not (tmp_path / "c.db").exists()
    listed = invoke("trees", "--json", "--store", url)
    assert [json.loads(line)["tree"] for line in listed.stdout.splitlines()] == ["other", "team"]


def test_reading_commands_read_a_tree_that_is_there(pg_trees: tuple[PgCluster, str]) -> None:
    cluster, db = pg_trees
    url = cluster.url("team", db=db)
    assert read_with("history --show", url).stdout == "apple one\n"
    assert read_with("search", url).stdout == "a.md:1:apple two\n"
    assert read_with("check", url).stdout == "All 3 retained revisions match their SHA-256.\n"
