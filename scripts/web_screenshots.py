"""Screenshots of memfs web's four main pages, for the README: the timeline, an
operation with its diff, a file in the tree, and a file's history.

    .venv/bin/python scripts/web_screenshots.py [--out docs] [--width 1100]

It builds a small store (an agent's notes, a person's edits, a recursive delete),
serves it with the installed ``memfs web`` on a free loopback port, drives Debian's
Chromium through Playwright and writes ``web-timeline.png``, ``web-operation.png``,
``web-file.png`` and ``web-history.png`` (plus ``web-phone.png`` at phone width).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from memfs.store import open_store

MEMFS = str(Path(sys.executable).with_name("memfs"))
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PLAN_1 = b"""# Q1 plan

- Ship the **sync** rewrite
- Migrate the billing jobs
- Hire two engineers
"""
PLAN_2 = b"""# Q1 plan

- Ship the **sync** rewrite (owner: Dana)
- Migrate the billing jobs to the new queue
- Hire two engineers
- Write the on-call guide
"""


def build(db: Path) -> None:
    with open_store(f"sqlite:///{db}") as store:
        store.write(
            "people/dana.md",
            b"# Dana\n\nPrefers async updates.\n",
            author="agent:planner",
            parents=True,
        )
        store.write("projects/plan.md", PLAN_1, author="vim (pid 812)", parents=True)
        with store.batch():
            for i in range(12):
                store.write(
                    f"scratch/run-{i:02}.log",
                    b"ok\n" * (i + 1),
                    author="agent:planner",
                    parents=True,
                )
        store.write("projects/plan.md", PLAN_2, author="agent:planner")
        store.write(
            "people/dana.md",
            b"# Dana\n\nPrefers async updates.\nTakes coffee black.\n",
            author="mcp:claude-code",
        )
        store.set_checkpoint("before-cleanup", author="web:alice")
        store.delete("scratch", author="rm (pid 2291)", recursive=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs"))
    parser.add_argument("--width", type=int, default=1100)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        build(db)
        server = subprocess.Popen(
            [MEMFS, "web", "--store", f"sqlite:///{db}", "--http", "127.0.0.1:0"],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            found = re.search(r"at (http://\S+?)/", line)
            if found is None:
                raise SystemExit(f"memfs web did not start: {line}")
            url = found.group(1)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                page = browser.new_page(viewport={"width": args.width, "height": 700})
                page.goto(url + "/")
                page.screenshot(path=str(args.out / "web-timeline.png"), full_page=True)
                page.get_by_role("link", name="agent:planner: edited projects/plan.md").click()
                page.screenshot(path=str(args.out / "web-operation.png"), full_page=True)
                page.goto(url + "/tree/projects/plan.md")
                page.screenshot(path=str(args.out / "web-file.png"), full_page=True)
                page.goto(url + "/history/projects/plan.md")
                page.screenshot(path=str(args.out / "web-history.png"), full_page=True)
                phone = browser.new_page(viewport={"width": 390, "height": 760})
                phone.goto(url + "/")
                phone.screenshot(path=str(args.out / "web-phone.png"), full_page=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(15)
    for name in ("timeline", "operation", "file", "history", "phone"):
        print(args.out / f"web-{name}.png")


if __name__ == "__main__":
    main()
