"""The trees one PostgreSQL database holds, for ``memfs trees`` (read only: listing
creates no schema and no tree)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

import psycopg

from memfs.store.base import Usage
from memfs.store.postgres_url import connect_error, parse


def list_trees(url: str, options: Mapping[str, object]) -> list[tuple[str, str, Usage, int, int]]:
    """``(name, url, usage, last_seq, created_ns)`` of every tree, by name."""
    opts = parse(url, {k: v for k, v in options.items() if k != "tree"})
    try:
        db = psycopg.connect(opts.conninfo, autocommit=True, application_name="memfs")
    except psycopg.Error as e:
        raise connect_error(e, opts) from e
    try:
        found = db.execute("SELECT to_regclass('memfs.trees') IS NOT NULL").fetchone()
        if not found or not found[0]:
            return []
        rows = db.execute(
            "SELECT name, files, dirs, bytes, seq, created_ns FROM memfs.trees ORDER BY name"
        ).fetchall()
    finally:
        db.close()
    base = opts.url.rsplit("tree=", 1)[0].rstrip("&?")
    joiner = "&" if "?" in base else "?"
    return [
        (
            name,
            f"{base}{joiner}{urlencode({'tree': name})}",
            Usage(files=int(files), dirs=int(dirs), bytes=int(size)),
            int(seq),
            int(created),
        )
        for name, files, dirs, size, seq, created in rows
    ]
