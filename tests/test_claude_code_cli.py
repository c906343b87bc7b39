"""``memfs claude-code enable|status|disable`` in real git repositories, each person a
machine with a private HOME, run as a person runs it (the ``memfs`` command in the work
tree), over a real SQLite store mounted through FUSE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfs.agent.claude_code import (
    INDEX_MAX_LINES,
    Repo,
    find_repo,
    memory_key,
    normalize_origin,
)
from memfs.store import open_store
from tests.fixtures.claude_code import Machine, git, make_repo

pytestmark = pytest.mark.fuse

HTTPS = "https://github.com/Acme/Widgets.git"
SSH = "git@github.com:acme/widgets.git"


@pytest.mark.parametrize(
    "url",
    [
        HTTPS,
        SSH,
        "ssh://git@github.com:22/acme/widgets",
        "https://someone@github.com/acme/widgets/",
        "git://github.com/acme/widgets.git",
    ],
)
def test_every_spelling_of_one_github_url_is_one_name(url: str) -> None:
    assert normalize_origin(url) == "github.com/acme/widgets"


def test_other_repositories_get_other_names() -> None:
    assert normalize_origin("git@github.com:acme/gadgets.git") != normalize_origin(SSH)
    assert normalize_origin("git@gitlab.com:acme/widgets.git") != normalize_origin(SSH)
    # Names that read alike still get different directories.
    assert memory_key("github.com/a-b/c") != memory_key("github.com/a/b-c")
    assert memory_key("github.com/acme/widgets").startswith("github.com-acme-widgets-")


def settings_of(work_tree: Path) -> dict[str, object]:
    data = json.loads((work_tree / ".claude" / "settings.local.json").read_text())
    assert isinstance(data, dict)
    return data


def test_ssh_and_https_clones_share_one_directory(machines: list[Machine]) -> None:
    alice, bob = machines
    a = make_repo(alice.base / "widgets", HTTPS)
    b = make_repo(bob.base / "src" / "widgets-clone", SSH)
    other = make_repo(bob.base / "gadgets", "git@github.com:acme/gadgets.git")
    alice.memfs(a, "claude-code", "enable")
    bob.memfs(b, "claude-code", "enable")
    bob.memfs(other, "claude-code", "enable")
    mine, theirs = settings_of(a)["autoMemoryDirectory"], settings_of(b)["autoMemoryDirectory"]
    assert isinstance(mine, str) and isinstance(theirs, str)
    assert Path(mine).relative_to(alice.mountpoint) == Path(theirs).relative_to(bob.mountpoint)
    assert settings_of(other)["autoMemoryDirectory"] != theirs
    (Path(mine) / "MEMORY.md").write_text("- [from alice](a.md)\n")
    shown = bob.memfs(b, "claude-code", "status").stdout
    assert "Mounted: yes" in shown and "MEMORY.md: 1 line(s)" in shown
    assert (Path(theirs) / "MEMORY.md").read_text() == "- [from alice](a.md)\n"


def test_without_origin_the_first_commit_names_the_repository(
    machines: list[Machine], tmp_path: Path
) -> None:
    alice, bob = machines
    a = make_repo(alice.base / "local", commits=3)
    b = bob.base / "copy"
    git(tmp_path, "clone", "-q", str(a), str(b))
    git(b, "remote", "remove", "origin")
    git(b, "commit", "-q", "--allow-empty", "-m", "later work")
    unrelated = make_repo(bob.base / "unrelated", commits=3)
    ra, rb, ru = find_repo(a), find_repo(b), find_repo(unrelated)
    assert ra.origin is None and rb.origin is None
    assert ra.first_commit == git(a, "rev-list", "--max-parents=0", "HEAD")
    assert ra.store_path == rb.store_path != ru.store_path
    assert ra.store_path == f"claude-code/commit-{ra.first_commit}-" + ra.store_path[-10:]
    # A linked worktree is the same repository.
    wt = alice.base / "local-wt"
    git(a, "worktree", "add", "-q", str(wt))
    assert find_repo(wt).store_path == ra.store_path
    assert find_repo(wt).git_dir != ra.git_dir
    alice.memfs(wt, "claude-code", "enable")
    bob.memfs(b, "claude-code", "enable")
    assert Path(str(settings_of(wt)["autoMemoryDirectory"])).relative_to(alice.mountpoint) == Path(
        str(settings_of(b)["autoMemoryDirectory"])
    ).relative_to(bob.mountpoint)


def test_enable_imports_without_loss_or_duplicates_and_disable_restores(
    machines: list[Machine],
) -> None:
    alice = machines[0]
    repo = make_repo(alice.base / "widgets", SSH)
    # Bob shared first: the store already holds his index and two memory files.
    store_path = find_repo(repo).store_path
    with open_store(alice.store_url) as store:
        store.write(
            f"{store_path}/MEMORY.md",
            b"# Memory\n- [Testing](testing.md) - run make test\n",
            author="bob",
            parents=True,
        )
        store.write(f"{store_path}/testing.md", b"make test\n", author="bob")
        store.write(f"{store_path}/style.md", b"bob's style\n", author="bob")
    # Alice's own memory: one line in common, one new; one equal file, one that differs,
    # one new (in a subdirectory).
    own = alice.default_memory(repo)
    (own / "notes").mkdir(parents=True)
    (own / "MEMORY.md").write_text(
        "# Memory\n- [Testing](testing.md) - run make test\n- [Role](user_role.md)\n\n"
    )
    (own / "testing.md").write_text("make test\n")
    (own / "style.md").write_text("alice's style\n")
    (own / "user_role.md").write_text("alice is a backend engineer\n")
    (own / "notes" / "deep.md").write_text("deep\n")
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    before = {"permissions": {"allow": ["Bash(make test)"]}, "model": "opus"}
    settings.write_text(json.dumps(before))

    out = alice.memfs(repo, "claude-code", "enable").stdout
    assert "2 new files, 1 line added to MEMORY.md, 1 already there" in out
    assert "Other work trees and clones on this machine: run" in out
    assert "claude-code disable" in out
    now = settings_of(repo)
    shared = Path(str(now.pop("autoMemoryDirectory")))
    assert now == before  # every other setting kept
    assert shared.is_relative_to(alice.mountpoint)
    assert (shared / "MEMORY.md").read_text() == (
        "# Memory\n- [Testing](testing.md) - run make test\n- [Role](user_role.md)\n"
    )
    assert (shared / "testing.md").read_text() == "make test\n"
    assert (shared / "style.md").read_text() == "bob's style\n"
    copies = [p.name for p in shared.iterdir() if p.name.startswith("style.conflict-")]
    assert len(copies) == 1 and (shared / copies[0]).read_text() == "alice's style\n"
    assert (shared / "notes" / "deep.md").read_text() == "deep\n"
    assert (own / "MEMORY.md").exists()  # the original is left as it was
    # The settings file stays out of git, without a committed .gitignore.
    assert git(repo, "status", "--porcelain") == ""

    # Again: nothing new, nothing doubled.
    listing = sorted(p.name for p in shared.rglob("*"))
    alice.memfs(repo, "claude-code", "enable")
    assert sorted(p.name for p in shared.rglob("*")) == listing
    assert (shared / "MEMORY.md").read_text().count("[Role]") == 1

    # Disable: the settings exactly as they were, the memory still in the store.
    settings_before_disable = settings.read_text()
    assert "autoMemoryDirectory" in settings_before_disable
    out = alice.memfs(repo, "claude-code", "disable").stdout
    assert f"Claude Code uses {own} again" in out
    assert json.loads(settings.read_text()) == before
    with open_store(alice.store_url) as store:
        assert store.read(f"{store_path}/user_role.md")[0] == b"alice is a backend engineer\n"
    shown = alice.memfs(repo, "claude-code", "status").stdout
    assert "Shared: no" in shown and str(own) in shown


def test_disable_puts_back_a_replaced_setting_and_removes_a_file_it_made(
    machines: list[Machine],
) -> None:
    alice, _ = machines
    repo = make_repo(alice.base / "widgets", HTTPS)
    alice.memfs(repo, "claude-code", "enable")
    assert settings_of(repo).keys() == {"autoMemoryDirectory"}
    alice.memfs(repo, "claude-code", "disable")
    assert not (repo / ".claude").exists()

    elsewhere = alice.base / "my-memory"
    elsewhere.mkdir()
    (elsewhere / "MEMORY.md").write_text("- [x](x.md)\n")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").write_text(
        json.dumps({"autoMemoryDirectory": str(elsewhere)})
    )
    out = alice.memfs(repo, "claude-code", "enable").stdout
    assert f"Imported {elsewhere}" in out
    alice.memfs(repo, "claude-code", "disable")
    assert settings_of(repo) == {"autoMemoryDirectory": str(elsewhere)}


def test_status_tells_unmounted_and_a_cut_index(machines: list[Machine]) -> None:
    alice, _ = machines
    repo = make_repo(alice.base / "widgets", HTTPS)
    alice.memfs(repo, "claude-code", "enable")
    shared = Path(str(settings_of(repo)["autoMemoryDirectory"]))
    (shared / "MEMORY.md").write_text("".join(f"- line {i}\n" for i in range(250)))
    shown = alice.memfs(repo, "claude-code", "status").stdout
    assert "MEMORY.md: 250 line(s)" in shown and "it is cut" in shown
    assert f"first {INDEX_MAX_LINES} lines" in shown
    alice.memfs(repo, "umount")
    shown = alice.memfs(repo, "claude-code", "status").stdout
    assert "Mounted: NO" in shown and "claude-code enable" in shown
    alice.memfs(repo, "claude-code", "enable")  # mounts again
    assert "Mounted: yes" in alice.memfs(repo, "claude-code", "status").stdout
    assert (shared / "MEMORY.md").read_text().count("\n") == 250


def test_refusals_are_one_line_and_change_nothing(machines: list[Machine]) -> None:
    alice, _ = machines
    plain = alice.base / "not-a-repo"
    plain.mkdir()
    done = alice.memfs(plain, "claude-code", "enable", check=False)
    assert done.returncode == 1
    assert "not in a git work tree" in done.stderr and len(done.stderr.splitlines()) == 1
    repo = make_repo(alice.base / "widgets", HTTPS)
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{broken")
    done = alice.memfs(repo, "claude-code", "enable", check=False)
    assert done.returncode == 1 and "is not valid JSON" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert settings.read_text() == "{broken"
    done = alice.memfs(repo, "claude-code", "disable", check=False)
    assert done.returncode == 1 and "not enabled" in done.stderr
    empty = alice.base / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    done = alice.memfs(empty, "claude-code", "enable", check=False)
    assert done.returncode == 1 and "no origin remote and no commit" in done.stderr


def test_repo_identity_prefers_origin() -> None:
    repo = Repo(Path("/r"), Path("/r/.git"), SSH, "abc")
    assert repo.identity == "github.com/acme/widgets"
    assert Repo(Path("/r"), Path("/r/.git"), None, "abc").identity == "commit-abc"
