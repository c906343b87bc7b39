"""Schema steps written once for every backend.

Each backend keeps the migrations it had before this module (SQLite's schemas 1 to 5,
PostgreSQL's 1 to 3) and then applies :data:`STEPS` in order, each in the same
transaction as the rest of its migration, so a step is written once and every store,
file or server, gets it. A step is a function from a :class:`Ddl` (the dialect's words
for column types and the tree key) to the statements it runs, with the table names the
engine uses (PostgreSQL runs them with ``search_path`` set to its ``memfs`` schema).

To add a table of the tree and a column to the change records::

    def _operations(ddl: Ddl) -> list[str]:
        return [
            f"CREATE TABLE operations ({ddl.tree_key}id {ddl.integer} NOT NULL,"
            f" author {ddl.text} NOT NULL, PRIMARY KEY ({ddl.tree_column}id))",
            f"ALTER TABLE changes ADD COLUMN op {ddl.integer}",
        ]

    STEPS.append(_operations)  # append only: a step's place is its schema version

then let the engine read and write them (:mod:`memfs.store.statements`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Ddl:
    """A dialect's words for table definitions."""

    integer: str  # a 64-bit integer column
    text: str
    blob: str  # bytes
    # The first column of a table kept per tree, with its key (and "" in a file that
    # holds one tree); and the same column at the head of a key's column list.
    tree_key: str
    tree_column: str


Step = Callable[[Ddl], list[str]]

SQLITE = Ddl(integer="INTEGER", text="TEXT", blob="BLOB", tree_key="", tree_column="")
POSTGRES = Ddl(
    integer="bigint",
    text="text",
    blob="bytea",
    tree_key="tree integer NOT NULL REFERENCES trees (id) ON DELETE CASCADE, ",
    tree_column="tree, ",
)

# STEPS[i] is every backend's next migration after its own; append only.
STEPS: list[Step] = []
