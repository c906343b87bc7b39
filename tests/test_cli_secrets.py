"""``memfs secrets`` through click's CliRunner on exact output: the current tree, a
PATH, ``--history`` (old revisions and deleted files), ``--json``, masks that never show
a secret, a path inside a mount, and the installed command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.program import command
from memfs.store import Store, open_store
from tests.fixtures.mount import MountHandle, wait_for
from tests.secrets_corpus import CREDENTIALS

SECRETS = [c.secret for c in CREDENTIALS if c.caught]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "m.db"
    with open_store(path) as store:
        fill(store)
    yield path


def fill(store: Store) -> None:
    db_url = b"DATABASE_URL=postgres://app:S3cr3tP4ss@db.internal:5432/prod\nok\n"
    store.write("notes/db.md", db_url, author="alice", parents=True)  # rev 2
    store.write("notes/db.md", b"clean now\n", author="alice")  # rev 3
    keys = b"aws AKIAUYV046EWA0RQIJML and ghp_rKSHcxWxqTDlXSkk0bX7vxSla9BOFbWFrGW9\n"
    store.write("keys.md", keys, author="bob")  # rev 4
    store.write("gone.md", b"x\npassword=Hunter22x\n", author="bob")  # rev 5
    store.delete("gone.md", author="bob")
    store.write("notes/clean.md", b"nothing here\n", author="bob")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["secrets", *args])


KEYS_ROWS = (
    "keys.md  rev 4 (current)  line 1  aws-access-key  aws AKIA… (20 chars) and ghp_… (40 chars)\n"
    "keys.md  rev 4 (current)  line 1  github-token  aws AKIA… (20 chars) and ghp_… (40 chars)\n"
)


def test_the_current_tree(db: Path) -> None:
    result = run("--store", str(db))
    assert (result.exit_code, result.output) == (
        1,
        KEYS_ROWS + "2 likely credentials in 1 file (of 3 scanned).\n"
        "Edit a file to take a secret out of its current content.\n"
        f"Old revisions may hold more: `{command('secrets', '--history')}` lists them.\n",
    )


def test_history_adds_old_revisions_and_deleted_files(db: Path) -> None:
    result = run("--store", str(db), "--history")
    assert (result.exit_code, result.output) == (
        1,
        KEYS_ROWS + "gone.md  rev 5  line 2  password-assignment  password=Hu… (9 chars)\n"
        "notes/db.md  rev 2  line 1  url-password  "
        "DATABASE_URL=postgres://app:S3… (10 chars)@db.internal:5432/prod\n"
        "4 likely credentials in 1 file (of 3 scanned) and 2 old revisions (of 2 scanned).\n"
        "Edit a file to take a secret out of its current content.\n"
        f"Remove an old revision's content for good with `{command('redact')} PATH --rev REV`.\n",
    )


def test_a_redacted_revision_is_no_longer_listed(db: Path) -> None:
    with open_store(db) as store:
        store.redact("notes/db.md", 2, author="memfs redact (user carol)")
    result = run("notes", "--store", str(db), "--history")
    assert (result.exit_code, result.output) == (
        0,
        "No credentials found in 2 files and 0 old revisions.\n",
    )


def test_a_path_and_json(db: Path) -> None:
    result = run("/memories/notes", "--store", str(db), "--history", "--json")
    assert result.exit_code == 1, result.output
    assert [json.loads(line) for line in result.output.splitlines()] == [
        {
            "path": "notes/db.md",
            "rev": 2,
            "current": False,
            "line": 1,
            "kind": "url-password",
            "why": "a password in a URL (scheme://user:PASSWORD@host)",
            "preview": "DATABASE_URL=postgres://app:S3… (10 chars)@db.internal:5432/prod",
        }
    ]


def test_a_deleted_file_by_name(db: Path) -> None:
    assert run("gone.md", "--store", str(db)).output == (
        f"Error: no entry at 'gone.md' (in the store {db})\n"
    )
    result = run("gone.md", "--store", str(db), "--history")
    assert result.output.splitlines()[0] == (
        "gone.md  rev 5  line 2  password-assignment  password=Hu… (9 chars)"
    )


def test_nothing_found(db: Path) -> None:
    result = run("notes/clean.md", "--store", str(db), "--history")
    assert (result.exit_code, result.output) == (
        0,
        "No credentials found in 1 file and 0 old revisions.\n",
    )


def test_a_missing_store_is_not_created(tmp_path: Path) -> None:
    result = run("--store", str(tmp_path / "none.db"))
    assert result.exit_code == 1
    assert result.output == (
        f"Error: no store at {tmp_path / 'none.db'}; give another --store URL\n"
    )
    assert not (tmp_path / "none.db").exists()


def test_no_secret_is_ever_printed_whole(tmp_path: Path) -> None:
    with open_store(tmp_path / "c.db") as store:
        for i, case in enumerate(c for c in CREDENTIALS if c.caught):
            store.write(f"{i}.md", case.text.encode(), author="t")
            store.write(f"{i}.md", b"gone\n", author="t")
    result = run("--store", str(tmp_path / "c.db"), "--history")
    assert result.exit_code == 1
    n = len(SECRETS)
    assert result.output.endswith(
        f"{n} likely credentials in 0 files (of {n} scanned) and {n} old revisions "
        f"(of {n} scanned).\n"
        f"Remove an old revision's content for good with `{command('redact')} PATH --rev REV`.\n"
    )
    assert len(result.output.splitlines()) == n + 2
    leaked = [s for s in SECRETS if s in result.output or s.split("\n")[0] in result.output]
    assert leaked == []


@pytest.mark.fuse
def test_a_path_inside_a_mount(mount_factory: Callable[..., MountHandle]) -> None:
    mount = mount_factory()
    (mount.mountpoint / "keys.md").write_text("token=ghp_rKSHcxWxqTDlXSkk0bX7vxSla9BOFbWFrGW9\n")
    store = mount.store()
    # The mount commits a closed file's content to the store in the background.
    wait_for(lambda: store.stat("keys.md").size == 47, what="keys.md in the store")
    result = run(str(mount.mountpoint / "keys.md"))
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[0] == (
        f"keys.md  rev {store.stat('keys.md').rev} (current)  line 1  github-token  "
        "token=ghp_… (40 chars)"
    )


def test_the_installed_command(db: Path) -> None:
    exe = Path(sys.executable).with_name("memfs")
    done = subprocess.run(
        [str(exe), "secrets", "--store", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (1, "")
    assert [json.loads(line)["kind"] for line in done.stdout.splitlines()] == [
        "aws-access-key",
        "github-token",
    ]


def test_exit_zero_reports_only(db: Path) -> None:
    result = run("--store", str(db), "--exit-zero")
    assert result.exit_code == 0
    assert "2 likely credentials in 1 file (of 3 scanned)." in result.output
