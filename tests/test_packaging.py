"""The project builds without deprecation warnings from its build backend (the
``project.license`` table form made setuptools print one, three times per install)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_wheel_builds_without_a_license_warning(tmp_path: Path) -> None:
    # Built from a copy: setuptools leaves build/ and *.egg-info in the tree it builds.
    source = tmp_path / "source"
    shutil.copytree(REPO / "memfs", source / "memfs", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    wheels = tmp_path / "wheels"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "project.license" not in output and "License classifiers" not in output, output
    # The distribution is memfs-tree (the command and the import stay memfs).
    (wheel,) = wheels.glob("memfs_tree-*.whl")
    # The package data the code reads at run time, e.g. the session templates.
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for name in ("progress.md", "features.md", "startup.md"):
        assert f"memfs/agent/templates/{name}" in names
