"""How a ``postgresql://`` URL names a server, a database and a tree, and its options.

``postgresql://USER@HOST:PORT/DB?tree=NAME`` (``postgres://`` too). Everything libpq
understands is libpq's: the URL's parts, its query parameters other than memfs's own
(``sslmode``, ``host=/run/postgresql`` for a Unix socket, ``connect_timeout``, ...),
the ``PG*`` environment variables (``PGHOST``, ``PGUSER``, ``PGPASSWORD``, ...) and
``~/.pgpass``: the conninfo is handed to libpq as given, so ``postgresql:///memfs`` on a
machine with ``PGHOST`` set works as ``psql memfs`` would.

memfs's options (URL query or keyword arguments to ``open_store``):

- ``tree``: which memory tree of the database (default ``default``); one database
  holds any number of trees, nothing of one is visible from another;
- ``max_file_bytes``, ``history``, ``deleted_history_days``: as for the SQLite store
  (:mod:`memfs.store.sqlite_options`);
- ``max_tree_bytes``, ``max_files``: caps on the whole tree (default: none);
- ``readonly``: read only: never creates the schema or the tree (a tree that is not
  there is :class:`~memfs.errors.NoSuchTree`, naming those that are), and every
  mutation raises ReadOnlyStore.

A problem connecting (no server, wrong password, no such database or role) becomes one
:class:`~memfs.errors.StoreUnavailable` line saying what to do: :func:`connect_error`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memfs.errors import StoreUnavailable
from memfs.store.rules import LIMIT_OPTIONS, Limits, parse_limits

DEFAULT_TREE = "default"
# Seconds libpq waits for a server that does not answer (libpq's own default waits
# forever); a URL's connect_timeout wins.
DEFAULT_CONNECT_TIMEOUT = 5
OURS = ("tree", *LIMIT_OPTIONS)
_TREE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")


@dataclass(frozen=True, slots=True)
class PgOptions:
    tree: str = DEFAULT_TREE
    limits: Limits = field(default_factory=Limits)
    # What goes to libpq: the URL without memfs's options, plus its other parameters.
    conninfo: str = ""
    # The URL that opens this tree again, without a password (logs, state file names).
    url: str = ""
    where: str = field(default="", compare=False)  # "host:port/db" for messages


def tree_name_problem(name: str) -> str | None:
    if not _TREE_NAME.match(name):
        return (
            f"the tree name {name!r} is not allowed: 1 to 100 letters, digits and . _ @ + -,"
            " starting with a letter or digit"
        )
    return None


def parse(url: str, options: Mapping[str, object]) -> PgOptions:
    """Split ``options`` into memfs's and libpq's and check both (libpq parses the URL)."""
    libpq = {name: str(value) for name, value in options.items() if name not in OURS}
    tree = DEFAULT_TREE
    if "tree" in options:
        tree = str(options["tree"])
        problem = tree_name_problem(tree)
        if problem:
            raise StoreUnavailable(problem)
    limits = parse_limits(options)
    base = "postgresql://" + url.split("://", 1)[1] if "://" in url else url
    try:
        params = conninfo_to_dict(base)
        params.update(libpq)
        conninfo = make_conninfo("", **params)
        conninfo_to_dict(conninfo)  # libpq refuses unknown parameters here
    except psycopg.ProgrammingError as e:
        detail = str(e).strip().splitlines()[0] if str(e).strip() else "malformed"
        raise StoreUnavailable(
            f"the store URL {display(base)!r} is not a valid PostgreSQL URL ({detail});"
            f" memfs's own options are {', '.join(OURS)}, the rest go to libpq"
        ) from e
    if "connect_timeout" not in params and not os.environ.get("PGCONNECT_TIMEOUT"):
        conninfo = make_conninfo(conninfo, connect_timeout=DEFAULT_CONNECT_TIMEOUT)
    shown = {k: v for k, v in libpq.items() if k != "password"}
    query = urlencode([*sorted(shown.items()), ("tree", tree)])
    return PgOptions(tree, limits, conninfo, f"{display(base)}?{query}", _where(params))


def display(url: str) -> str:
    """``url`` without its password, for messages and as the store's name."""
    parts = urlsplit(url)
    if parts.password is None:
        return url.split("?", 1)[0]
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit((parts.scheme, f"{user}@{netloc}", parts.path, "", ""))


def _where(params: Mapping[str, object]) -> str:
    host = params.get("host") or os.environ.get("PGHOST") or "the local socket"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    db = params.get("dbname") or os.environ.get("PGDATABASE") or _user(params)
    return f"{host}:{port}/{db}"


def _user(params: Mapping[str, object]) -> str:
    if params.get("user") or os.environ.get("PGUSER"):
        return str(params.get("user") or os.environ["PGUSER"])
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "?"


def user_of(conninfo: str) -> str:
    return _user(conninfo_to_dict(conninfo))


def connect_error(e: psycopg.Error, options: PgOptions) -> StoreUnavailable:
    """One line for a failed connection attempt: what is wrong and what to do."""
    text = " ".join(str(e).split())
    low = text.lower()
    where = options.where
    user = user_of(options.conninfo)
    db = where.rsplit("/", 1)[-1]
    if "password authentication failed" in low:
        return StoreUnavailable(
            f"PostgreSQL at {where} refused the password of role {user!r}",
            remedy="fix it in ~/.pgpass or $PGPASSWORD",
        )
    if "no password supplied" in low:
        return StoreUnavailable(
            f"PostgreSQL at {where} wants a password for role {user!r} and none was given",
            remedy="add a line host:port:db:user:password to ~/.pgpass, set $PGPASSWORD",
        )
    if "does not exist" in low and "database" in low:
        return StoreUnavailable(
            f"the database {db!r} does not exist on the PostgreSQL server at {where}",
            remedy=f"create it (createdb {db})",
        )
    if "does not exist" in low and "role" in low:
        return StoreUnavailable(
            f"the role {user!r} does not exist on the PostgreSQL server at {where}",
            remedy=f"create it (createuser {user}), name another user in the URL",
        )
    if "no pg_hba.conf entry" in low:
        return StoreUnavailable(
            f"the PostgreSQL server at {where} does not let role {user!r} in from here",
            remedy="ask its admin for a pg_hba.conf entry",
        )
    if any(
        s in low
        for s in (
            "no such file or directory",
            "connection refused",
            "could not translate host name",
            "timeout expired",
            "the database system is starting up",
            "the database system is shutting down",
            "is the server running",
        )
    ):
        return StoreUnavailable(
            f"no PostgreSQL server answers at {where} ({_short(text)})",
            remedy="start it, fix the URL's host and port",
        )
    return StoreUnavailable(f"cannot connect to PostgreSQL at {where}: {_short(text)}", remedy="")


def _short(text: str) -> str:
    # libpq's messages repeat "connection to server ... failed:"; keep the reason.
    reason = text.rsplit("failed:", 1)[-1].strip()
    return reason[:200] or text[:200]
