"""The store table of the documentation (docs/stores.md, moved there from the README)
says what the URL options do, in the words of :mod:`memfs.store.sqlite_options`, and the
store does what both say."""

from __future__ import annotations

import re
from pathlib import Path

from memfs.store import open_store, sqlite_options

STORES = Path(__file__).resolve().parent.parent / "docs" / "stores.md"


def _history_row() -> str:
    rows = [line for line in STORES.read_text(encoding="utf-8").splitlines() if "?history=" in line]
    assert len(rows) == 1, rows
    return rows[0].split("|")[2].strip()


def _documented_history() -> str:
    doc = sqlite_options.__doc__ or ""
    match = re.search(r"``history``: (.*?) \(default", doc, re.S)
    assert match, "sqlite_options no longer documents the history option"
    return " ".join(match.group(1).split())


def test_the_store_table_says_what_history_counts() -> None:
    assert _documented_history() == "previous revisions kept per file besides the current one"
    assert _history_row().startswith(_documented_history() + ",")


def test_history_2_keeps_the_current_revision_and_two_previous(tmp_path: Path) -> None:
    with open_store(f"sqlite://{tmp_path}/m.db?history=2") as store:
        for i in range(5):
            store.write("a.md", f"v{i}\n".encode(), author="t")
        kept = [store.read_revision("a.md", r.rev) for r in store.history("a.md")]
    assert kept == [b"v4\n", b"v3\n", b"v2\n"]
