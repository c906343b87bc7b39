"""``memfs status`` shows use against each cap: for one store (``--store URL``) and for
each mount of a capped store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import main
from memfs.store import open_store
from tests.fixtures.mount import MountHandle, sqlite_url, wait_for


def test_status_of_one_store_shows_use_against_its_caps(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "s.db") + "?max_files=10&max_tree_bytes=2048"
    with open_store(url) as store:
        store.write("d/a.md", b"x" * 1500, author="t", parents=True)
        store.write("b.md", b"y", author="t")
    shown = CliRunner().invoke(main, ["status", "--store", url])
    assert shown.exit_code == 0, shown.output
    assert shown.output == (
        f"{url}: 1 directory; caps: 2 of 10 files, 1.5 KiB of 2.0 KiB, at most 64.0 MiB a file\n"
    )
    plain = sqlite_url(tmp_path / "s.db")
    shown = CliRunner().invoke(main, ["status", "--store", plain])
    assert shown.output == (
        f"{plain}: 1 directory; caps: 2 files (no cap), 1.5 KiB (no cap), at most 64.0 MiB a file\n"
    )
    missing = CliRunner().invoke(main, ["status", "--store", sqlite_url(tmp_path / "no.db")])
    assert missing.exit_code == 1 and "Error: no store at " in missing.output
    assert not (tmp_path / "no.db").exists()


@pytest.mark.fuse
def test_status_shows_a_capped_mount_s_use(
    mount_factory: Callable[..., MountHandle], tmp_path: Path
) -> None:
    url = sqlite_url(tmp_path / "c.db") + "?max_files=3"
    m = mount_factory(store_url=url)
    (m.mountpoint / "a").write_text("hello")

    def caps_line() -> str | None:
        out = CliRunner().invoke(main, ["status"]).output.splitlines()
        found = [line for line in out if line.startswith(f"{m.mountpoint}: caps: ")]
        return found[0] if found and "1 of 3 files" in found[0] else None

    line = wait_for(caps_line, what="the caps line")
    assert line == f"{m.mountpoint}: caps: 1 of 3 files, 5 B (no cap), at most 64.0 MiB a file"
