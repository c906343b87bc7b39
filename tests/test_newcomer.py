"""A newcomer's path, as the README prints it: from an empty HOME, the install block
(`pipx install .`, then `memfs --version`), then the quick starts marked for it (the
mount, the memory tool, the mirror), each run as written with the installed `memfs`;
and the other install the getting-started page gives, `uv tool install .`.

The blocks are read from the README (after a ``<!-- newcomer: NAME -->`` line), so a
command the README gets wrong fails here. The install is a real pipx install of a copy
of the clone (setuptools would leave build/ in the clone itself) into that HOME; the
environment carries nothing of this machine's memfs: no MEMFS_* or XDG_* variable.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfs import __version__, host
from tests.fixtures.mount import in_ci, require_fuse
from tests.fixtures.waiting import wait_for

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
GETTING_STARTED = REPO / "docs" / "getting-started.md"


def block(name: str, page: Path = README) -> str:
    """The first ```sh block after the ``<!-- newcomer: NAME -->`` line of ``page``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"<!-- newcomer: {name} -->")
    opening = lines.index("```sh", start)
    assert opening == start + 1, f"the {name} block must follow its marker line"
    closing = lines.index("```", opening)
    return "\n".join(lines[opening + 1 : closing]) + "\n"


class Newcomer:
    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.work = root / "work"
        self.src = root / "src"
        for d in (self.home, self.work):
            d.mkdir()
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{self.home}/.local/bin:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }

    def run(
        self, name: str, cwd: Path | None = None, page: Path = README
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block(name, page)],
            cwd=cwd or self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"{page.name}'s {name} block failed:\n{done.stderr}"
        return done

    def stop_mounts(self) -> None:
        """Whatever a failed block left: every daemon the records name, and the mount."""
        records = self.home / ".local" / "state" / "memfs" / "mounts"
        for record in records.glob("*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                pid = int(json.loads(record.read_text())["pid"])
                os.kill(pid, signal.SIGTERM)
                wait_for(_gone(pid), timeout=10, what=f"daemon {pid} gone")
        mountpoint = self.home / "memories"
        if host.mount_entry(mountpoint) is not None:
            subprocess.run(["fusermount3", "-uz", str(mountpoint)], check=False)


def _gone(pid: int) -> Callable[[], bool]:
    return lambda: not _alive(pid)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def newcomer(tmp_path: Path) -> Iterator[Newcomer]:
    if shutil.which("pipx") is None:
        if in_ci():
            pytest.fail("pipx is required in CI (make system-deps installs it)", pytrace=False)
        pytest.skip("pipx is not installed (make system-deps installs it)")
    person = Newcomer(tmp_path)
    person.src.mkdir()
    shutil.copytree(
        REPO / "memfs", person.src / "memfs", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, person.src / name)
    yield person
    person.stop_mounts()


def test_the_readme_install_and_quick_start_work_from_an_empty_home(newcomer: Newcomer) -> None:
    installed = newcomer.run("install", cwd=newcomer.src)
    assert installed.stdout.endswith(f"memfs, version {__version__}\n"), installed.stdout
    assert (newcomer.home / ".local" / "bin" / "memfs").exists()

    tool = newcomer.run("tool")
    answers = [json.loads(line) for line in tool.stdout.splitlines()]
    assert answers[0] == {
        "content": "File created successfully at: /memories/a.md",
        "is_error": False,
    }
    assert not answers[1]["is_error"] and "/memories/a.md" in answers[1]["content"]
    assert (newcomer.work / "notes" / "a.md").read_text() == "hello\n"

    require_fuse()
    mounted = newcomer.run("mount")
    store = newcomer.home / ".local" / "share" / "memfs" / "memory.db"
    assert f"Created a new store at {store}." in mounted.stderr
    assert "preferences.md" in mounted.stdout  # memfs log names the write
    assert host.mount_entry(newcomer.home / "memories") is None  # the block unmounted

    synced = newcomer.run("sync")
    mirror = newcomer.work / "mirror"
    assert (mirror / "preferences.md").read_text() == "- Coffee: black\n"
    assert synced.stdout == f"Synced {mirror} with sqlite://{store}.\n"


def test_uv_tool_install_puts_memfs_on_path_from_an_empty_home(newcomer: Newcomer) -> None:
    # uv comes with the test extras (PyPI's uv); only it is put on the newcomer's PATH,
    # from a directory of its own, so `memfs` can be found only where uv installed it.
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    tools = newcomer.home.parent / "tools"
    tools.mkdir()
    (tools / "uv").symlink_to(uv)
    newcomer.env["PATH"] = f"{newcomer.env['PATH']}:{tools}"
    # The machine's trust store for PyPI's certificate (pip reads it from pip.conf).
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        if name in os.environ:
            newcomer.env[name] = os.environ[name]
    installed = newcomer.run("uv-install", cwd=newcomer.src, page=GETTING_STARTED)
    assert installed.stdout.endswith(f"memfs, version {__version__}\n"), installed.stdout
    memfs = newcomer.home / ".local" / "bin" / "memfs"
    assert memfs.exists()
    done = subprocess.run(
        [memfs, "tool", "--root", str(newcomer.work), "--as", "me"],
        input='{"command": "create", "path": "/memories/a.md", "file_text": "hi\\n"}\n',
        env=newcomer.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (newcomer.work / "a.md").read_text() == "hi\n"
