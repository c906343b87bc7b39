"""The documentation: the site builds strictly, its CLI reference is generated from the
commands, and the README is short and links only to what exists.

`mkdocs build --strict` fails on a broken link or anchor between pages, a page left out
of the nav, and a CLI reference mkdocs-click cannot generate; the README is not part of
the site, so its links are checked here, anchors included.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from memfs.cli import COMMANDS

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"

# Pages other branches add (issue 26's Claude Code page): the README links to them
# before they land. Drop a name once its page is in docs/.
PAGES_ADDED_ELSEWHERE: set[str] = set()

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc (and GitHub) gives a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text.strip())


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


def test_the_site_builds_strictly_with_every_command_in_its_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reference = (site / "cli" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f'id="memfs-{name}"' not in reference]
    assert missing == [], f"commands missing from the generated CLI reference: {missing}"
    assert "Sentinel" not in reference


def test_the_cli_reference_is_generated_not_written() -> None:
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert "::: mkdocs-click" in page
    assert ":module: memfs.cli" in page
    assert "Usage:" not in page  # nothing copied from --help by hand


def test_every_page_in_docs_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert [p for p in pages if p not in nav] == []


def test_the_readme_is_read_in_five_minutes() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert 100 <= len(lines) <= 220, len(lines)
    # The two set-up commands, as printed.
    assert (
        "make run     # installs what is missing, mounts the default store at ~/memories"
    ) in lines
    assert "make test    # installs what is missing, runs the test suite" in lines


def test_every_link_of_the_readme_leads_somewhere() -> None:
    broken = []
    for target in LINK.findall(README.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://", target):
            continue  # the outside world is not this test's to reach
        path, _, anchor = target.partition("#")
        if path in PAGES_ADDED_ELSEWHERE:
            continue
        page = (REPO / path) if path else README
        if not page.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in _anchors(page):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def test_the_anchor_rule_matches_the_site() -> None:
    # The slug rule above is the one the built site uses; spot-check a hard heading.
    assert _slug("## Without FUSE: `memfs sync DIR`") == "without-fuse-memfs-sync-dir"
    assert _slug("Export and import: `memfs export DEST`, `memfs import SRC`") == (
        "export-and-import-memfs-export-dest-memfs-import-src"
    )
