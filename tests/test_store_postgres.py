"""What the PostgreSQL store adds to the shared contract: trees kept apart, the schema's
version, the feed's order across connections, URLs and one-line connection errors."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from memfs.errors import (
    AlreadyExists,
    Conflict,
    NoSuchTree,
    NotFound,
    ReadOnlyStore,
    StoreUnavailable,
)
from memfs.store import Store, list_trees, open_store, postgres, postgres_schema
from memfs.store.base import Entry
from memfs.store.engine import SqlStore
from memfs.store.postgres_schema import SCHEMA_VERSION
from tests.fixtures.mount import wait_for
from tests.fixtures.postgres import DATABASE, PASSWORD, PASSWORD_USER, SUPERUSER, PgCluster
from tests.store_contract.common import A, tree


@pytest.fixture
def stores(pg_cluster: PgCluster) -> Iterator[Callable[..., Store]]:
    opened: list[Store] = []

    def make(url: str | None = None, **options: object) -> Store:
        store = open_store(url or pg_cluster.url(), **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def _everything(store: Store) -> object:
    """All a store shows of its tree, history and feed."""
    files = {e.path: store.history(e.path) for e in store.walk() if e.is_file}
    return (tree(store), files, store.changes(), store.usage(), store.checkpoints())


def test_trees_in_one_database_never_see_each_other(
    pg_cluster: PgCluster, stores: Callable[..., Store]
) -> None:
    a, b = stores(), stores()
    b.write("shared/name.md", b"b's secret", author="b", parents=True)
    b.set_checkpoint("b-point", author="b")
    before = _everything(b)
    secret = hashlib.sha256(b"b's secret").hexdigest()
    # A is empty whatever B holds, for every read.
    assert tree(a) == {} and a.changes() == [] and a.last_seq() == 0
    assert a.usage().files == 0 and a.checkpoints() == [] and a.unused(2**62) == []
    for read in (
        lambda: a.stat("shared"),
        lambda: a.read("shared/name.md"),
        lambda: a.listdir("shared"),
        lambda: list(a.walk("shared")),
        lambda: a.history("shared/name.md"),
        lambda: a.read_revision("shared/name.md", b.stat("shared/name.md").rev),
        lambda: a.read_blob(secret),
    ):
        with pytest.raises(NotFound):
            read()
    assert a.subtree_extent("") == (0, 0)
    # Every mutation of A, at B's very names, leaves B as it was.
    a.write("shared/name.md", b"a's own", author=A, parents=True)
    a.write("shared/other.md", b"x", author=A)
    a.truncate("shared/other.md", 0, author=A)
    a.set_attrs("shared/name.md", author=A, mode=0o644)
    a.symlink("shared/link", "name.md", author=A)
    a.mkdir("d", author=A)
    a.rename("shared/other.md", "d/moved.md", author=A)
    a.mark_used(["shared/name.md"])
    with a.batch():
        a.write("in-batch.md", b"1", author=A)
    a.set_checkpoint("b-point", author=A)  # the same name, another tree
    a.delete_checkpoint("b-point")
    a.write("shared/name.md", b"a's newer", author=A)
    a.redact("shared/name.md", a.history("shared/name.md")[1].rev, author=A)
    a.delete("shared", author=A, recursive=True)
    assert a.wait_for_changes(a.last_seq(), 0.05) is False
    assert _everything(b) == before
    assert b.read("shared/name.md")[0] == b"b's secret" and b.read_blob(secret) == b"b's secret"
    # Same revision numbers in both trees: each tree counts its own.
    assert b.stat("shared/name.md").rev <= b.last_seq()
    # Opening B's tree again finds it; a new name is a new, empty tree.
    again = stores(b.url)
    assert tree(again) == tree(b)
    assert tree(stores(pg_cluster.url("brand-new"))) == {}


def test_a_follower_never_skips_a_seq_committed_late(stores: Callable[..., Store]) -> None:
    writer_stores = [stores() for _ in range(1)]
    url = writer_stores[0].url
    writers = [stores(url) for _ in range(6)]
    follower = stores(url)
    seen: list[int] = []
    done = threading.Event()

    def follow() -> None:
        cursor = 0
        while True:
            finished = done.is_set()
            for change in follower.changes(since=cursor):
                seen.append(change.seq)
                cursor = change.seq
            if finished:
                return
            follower.wait_for_changes(cursor, 0.05)

    def write(store: Store, n: int) -> None:
        for i in range(40):
            store.write(f"w{n}/f{i % 4}", b"%d" % i, author=f"w{n}", parents=True)

    reader = threading.Thread(target=follow)
    reader.start()
    threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    done.set()
    reader.join(60)
    last = follower.last_seq()
    # Every number from 1 to the last, each once, in order: none was passed over.
    assert seen == list(range(1, last + 1)) and last >= 6 * 40


def test_a_newer_schema_is_refused_in_one_line(pg_cluster: PgCluster) -> None:
    pg_cluster.psql("DROP DATABASE IF EXISTS newer", db="postgres")
    pg_cluster.psql("CREATE DATABASE newer", db="postgres")
    url = pg_cluster.url(db="newer")
    open_store(url).close()
    pg_cluster.psql(
        f"UPDATE memfs.meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'",
        db="newer",
    )
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    message = str(caught.value)
    assert f"schema {SCHEMA_VERSION + 1}" in message and "upgrade memfs" in message
    assert "\n" not in message


def test_connection_problems_say_what_to_do(pg_cluster: PgCluster) -> None:
    sock = pg_cluster.socket_dir
    cases = {
        f"postgresql://{PASSWORD_USER}:wrong@/{DATABASE}?host={sock}": "refused the password",
        f"postgresql://{PASSWORD_USER}@/{DATABASE}?host={sock}": "wants a password",
        f"postgresql://{SUPERUSER}@/nosuchdb?host={sock}": "createdb nosuchdb",
        f"postgresql://ghost@/{DATABASE}?host={sock}": "createuser ghost",
        f"postgresql://{SUPERUSER}@/{DATABASE}?host={sock}/missing": "no PostgreSQL server",
        f"postgresql:///{DATABASE}?host={sock}&nosuchparam=1": "not a valid PostgreSQL URL",
    }
    env = {k: os.environ.pop(k) for k in ("PGPASSWORD", "PGPASSFILE") if k in os.environ}
    try:
        for url, expected in cases.items():
            with pytest.raises(StoreUnavailable) as caught:
                open_store(url)
            message = str(caught.value)
            assert expected in message and "\n" not in message, (url, message)
            assert "wrong" not in message  # never the password
    finally:
        os.environ.update(env)


def test_password_pgpass_and_pg_environment_are_honoured(
    pg_cluster: PgCluster, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    sock = pg_cluster.socket_dir
    with_password = f"postgresql://{PASSWORD_USER}:{PASSWORD}@/{DATABASE}?host={sock}&tree=pw"
    store = open_store(with_password)
    try:
        store.write("f", b"1", author=A)
        assert PASSWORD not in store.url and "tree=pw" in store.url
    finally:
        store.close()
    pgpass = Path(str(tmp_path)) / "pgpass"
    pgpass.write_text(f"*:*:*:{PASSWORD_USER}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    monkeypatch.setenv("PGHOST", str(sock))
    monkeypatch.setenv("PGUSER", PASSWORD_USER)
    with open_store(f"postgresql:///{DATABASE}?tree=pw") as same:
        assert same.read("f")[0] == b"1"


def _fresh_database(pg_cluster: PgCluster, name: str) -> None:
    pg_cluster.psql(f"DROP DATABASE IF EXISTS {name}", db="postgres")
    pg_cluster.psql(f"CREATE DATABASE {name}", db="postgres")


def test_read_only_never_creates_the_schema_or_a_tree(pg_cluster: PgCluster) -> None:
    _fresh_database(pg_cluster, "rodb")
    url = pg_cluster.url("tema", db="rodb")
    with pytest.raises(NoSuchTree) as caught:
        open_store(url, readonly=True)
    assert "holds no memory trees yet" in str(caught.value) and caught.value.trees == []
    assert pg_cluster.psql("SELECT to_regnamespace('memfs') IS NULL", db="rodb").strip() == "t"
    for name in ("team", "archive"):
        with open_store(pg_cluster.url(name, db="rodb")) as store:
            store.write("f.md", name.encode(), author=A)
    with pytest.raises(NoSuchTree) as caught:
        open_store(url, readonly=True)
    message = str(caught.value)
    assert "has no tree 'tema' (its trees: archive, team)" in message and "\n" not in message
    assert caught.value.trees == ["archive", "team"]
    assert [t.name for t in list_trees(url)] == ["archive", "team"]  # none was made
    with open_store(pg_cluster.url("team", db="rodb"), readonly=True) as store:
        assert store.read("f.md")[0] == b"team"
        with pytest.raises(ReadOnlyStore):
            store.write("g.md", b"x", author=A)


def test_read_only_refuses_an_older_schema_without_touching_it(pg_cluster: PgCluster) -> None:
    _fresh_database(pg_cluster, "rodb_old")
    url = pg_cluster.url("t", db="rodb_old")
    open_store(url).close()
    pg_cluster.psql("UPDATE memfs.meta SET value = '2' WHERE key = 'schema_version'", db="rodb_old")
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url, readonly=True)
    message = str(caught.value)
    assert (
        "from an older memfs (schema 2" in message and "open it once with write access" in message
    )
    version = "SELECT value FROM memfs.meta WHERE key = 'schema_version'"
    assert pg_cluster.psql(version, db="rodb_old").strip() == "2"


def test_a_mutation_is_two_round_trips_and_a_foreseen_write_one(
    pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutation reads what its checks need in one round trip and sends its changes
    with the commit in the next (one more when it finds history due for sweeping). A
    write whose reads the store foresees (the file it wrote before, nothing wider
    changed since; a create-only write of a name never used in a directory it wrote
    in) sends its guesses, its changes and the commit in one.

    Counted where the store must wait for the server, whatever the timing: in pipeline
    mode statements are sent without waiting, so a round trip is each first read of a
    result after statements were sent, and the commit of what was sent after the last
    (whose results, the foreseen reads among them, come back with it)."""
    from memfs.store.postgres_conn import PgConnections, PgCursor, PgPending

    store = open_store(pg_cluster.url())
    try:
        store.write("d/a.md", b"first\n", author=A, parents=True)
        # Statements sent, the number sent when the store last waited, each pending
        # result's number, and how many times the store waited.
        count = {"sent": 0, "waited_at": 0, "waits": 0}
        numbers: dict[int, int] = {}

        def sending(real: Callable[..., Any]) -> Callable[..., Any]:
            def send(*args: Any) -> Any:
                count["sent"] += 1
                result = real(*args)
                if isinstance(result, PgPending):
                    numbers[id(result)] = count["sent"]
                return result

            return send

        def reading(real: Callable[..., Any]) -> Callable[..., Any]:
            def read(pending: PgPending) -> Any:
                # Its result is there already if it was sent before the last wait.
                if numbers.get(id(pending), 0) > count["waited_at"]:
                    count["waits"] += 1
                    count["waited_at"] = count["sent"]
                return real(pending)

            return read

        for name in ("ask", "run", "many"):
            monkeypatch.setattr(PgCursor, name, sending(getattr(PgCursor, name)))
        for name in ("one", "all"):
            monkeypatch.setattr(PgPending, name, reading(getattr(PgPending, name)))
        writing = PgConnections.writing

        @contextlib.contextmanager
        def committing(self: PgConnections) -> Iterator[PgCursor]:
            with writing(self) as cursor:
                yield cursor
            # The commit waits for whatever was sent after the last wait.
            count["waits"] += count["sent"] > count["waited_at"]
            count["waited_at"] = count["sent"]

        monkeypatch.setattr(PgConnections, "writing", committing)
        made: list[Entry] = []

        def round_trips() -> int:
            return count["waits"]

        for name, mutation, expected in (
            ("a modify", lambda: store.write("d/a.md", b"second\n", author=A), 1),
            ("a create", lambda: made.append(store.write("d/b.md", b"new\n", author=A)), 2),
            ("a modify again", lambda: store.write("d/a.md", b"third\n", author=A), 1),
            (
                "a compare-and-set",
                lambda: store.write("d/b.md", b"newer\n", author=A, expected_rev=made[0].rev),
                1,
            ),
            # A create-only write of a name never used, in a directory written in.
            ("a new name", lambda: store.write("d/n.md", b"n\n", author=A, expected_rev=0), 1),
            ("a rename", lambda: store.rename("d/b.md", "d/c.md", author=A), 2),
            ("a delete", lambda: store.delete("d/n.md", author=A), 2),
            # The name has a history now: what the write finds there is read first, and
            # it finds the delete's tombstone due (one more to read what to sweep).
            ("the name again", lambda: store.write("d/n.md", b"m\n", author=A, expected_rev=0), 3),
            ("a delete", lambda: store.delete("d/c.md", author=A), 2),
            # The next mutation finds the tombstone due: one more to read what to sweep.
            ("a sweeping write", lambda: store.write("d/e.md", b"e\n", author=A), 3),
            ("a recursive delete", lambda: store.delete("d", author=A, recursive=True), 2),
            ("a mkdir", lambda: store.mkdir("x", author=A), 2),  # mkdir never sweeps
            ("another sweeping write", lambda: store.write("x/f.md", b"f\n", author=A), 3),
            ("a set_attrs", lambda: store.set_attrs("x", author=A, mode=0o755), 2),
        ):
            count.update(sent=0, waited_at=0, waits=0)
            mutation()
            assert round_trips() == expected, (name, count)
        # No guess missed: what the store foresaw was the store's state each time.
        assert isinstance(store, SqlStore) and store._foresight is not None
        assert store._foresight.misses == 0 and store._foresight.hits > 0
        store.delete("x", author=A, recursive=True)
        assert tree(store) == {}
    finally:
        store.close()


def test_a_schema_2_database_migrates_with_its_trees(pg_cluster: PgCluster) -> None:
    """A database as the memfs of schema 2 left it (its statement triggers counting),
    opened by this one: row triggers replace them and every tree reads and counts on."""
    _fresh_database(pg_cluster, "v2db")
    conninfo = f"host={pg_cluster.socket_dir} user={SUPERUSER} dbname=v2db"
    with psycopg.connect(conninfo, autocommit=True) as db, db.transaction():
        db.execute("CREATE SCHEMA memfs")
        db.execute("CREATE TABLE memfs.meta (key text PRIMARY KEY, value text NOT NULL)")
        db.execute("INSERT INTO memfs.meta VALUES ('schema_version', '2')")
        for step in postgres_schema.MIGRATIONS[:2]:
            step(db)
        row = db.execute(
            "INSERT INTO memfs.trees (name, created_ns, rev, seq) VALUES ('old', 1, 2, 2)"
            " RETURNING id"
        ).fetchone()
        assert row is not None
        tree = row[0]
        content = b"written by schema 2\n"
        digest = hashlib.sha256(content).hexdigest()
        add = (
            "INSERT INTO memfs.entries (tree, path, parent, kind, size, mode, mtime_ns,"
            " ctime_ns, rev) VALUES (%s, %s, %s, %s, %s, %s, 1, 1, %s)"
        )
        db.execute(add, (tree, "", None, "dir", 0, 0o700, 0))
        db.execute(add, (tree, "d", "", "dir", 0, 0o700, 1))
        db.execute(add, (tree, "d/f.md", "d", "file", len(content), 0o600, 2))
        db.execute("INSERT INTO memfs.blobs VALUES (%s, %s, %s)", (tree, digest, content))
        db.execute(
            "INSERT INTO memfs.revisions (tree, path, rev, author, time_ns, size, sha256)"
            " VALUES (%s, 'd/f.md', 2, 'old memfs', 1, %s, %s)",
            (tree, len(content), digest),
        )
        for seq, kind, path, rev in ((1, "mkdir", "d", 1), (2, "create", "d/f.md", 2)):
            db.execute(
                "INSERT INTO memfs.changes (tree, seq, kind, path, author, time_ns, rev)"
                " VALUES (%s, %s, %s, %s, 'old memfs', 1, %s)",
                (tree, seq, kind, path, rev),
            )
    url = pg_cluster.url("old", db="v2db")
    with open_store(url, history=0) as store:
        assert store.read("d/f.md")[0] == content
        assert (store.usage().files, store.usage().dirs, store.usage().bytes) == (1, 1, 20)
        assert store.last_seq() == 2 and store.history("d/f.md")[0].author == "old memfs"
        store.write("d/f.md", b"new\n", author=A)  # history=0: the old revision goes
        store.write("d/g.md", b"g\n", author=A)
        assert (store.usage().files, store.usage().bytes) == (2, 6)
        with pytest.raises(NotFound):
            store.read_blob(digest)  # the blob went with its last revision
        store.delete("d", author=A, recursive=True)
        assert (store.usage().files, store.usage().dirs, store.usage().bytes) == (0, 0, 0)
    version = "SELECT value FROM memfs.meta WHERE key = 'schema_version'"
    assert pg_cluster.psql(version, db="v2db").strip() == str(SCHEMA_VERSION)
    triggers = (
        "SELECT string_agg(tgname, ',' ORDER BY tgname) FROM pg_trigger WHERE NOT tgisinternal"
    )
    # the engine counts files, dirs and bytes itself now; only the blob sweeps are
    # triggers (a revision's blob, and the base a removed blob continued)
    got = pg_cluster.psql(triggers, db="v2db").strip()
    assert got == "blob_removed,revision_removed"


def test_maintenance_analyzes_a_tree_that_grew_fast(
    pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Until a table is analyzed its tree's rows are guessed at 0.5% of it, and a lookup
    # by path is planned as a scan of the tree; the daemon's maintenance analyzes it.
    db = "stats_" + os.urandom(4).hex()
    pg_cluster.psql(f"CREATE DATABASE {db}", db="postgres")
    with open_store(pg_cluster.url(db=db)) as store:
        for table in ("entries", "revisions", "changes", "gone", "operations"):
            pg_cluster.psql(f"ALTER TABLE memfs.{table} SET (autovacuum_enabled = false)", db=db)
        with store.batch():
            for i in range(1000):
                store.write(f"d{i % 10}/f{i}.md", b"x\n", author=A, parents=True)

        def analyzed() -> int:
            return int(
                pg_cluster.psql(
                    "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'entries'",
                    db=db,
                )
            )

        assert analyzed() == 0
        monkeypatch.setattr(postgres, "STATS_LOOK_S", 0.0)

        store.maintain()
        wait_for(lambda: analyzed() == 1, 10, what="the entries table analyzed")
        store.maintain()  # the statistics are fresh now: not again
        assert analyzed() == 1
        for i in range(1000, 1100):  # grown, but not to twice what was analyzed
            store.write(f"d{i % 10}/f{i}.md", b"x\n", author=A)
        store.maintain()
        assert analyzed() == 1
        with store.batch():
            for i in range(1100, 2600):
                store.write(f"d{i % 10}/f{i}.md", b"x\n", author=A)
        store.maintain()  # more than doubled: again
        wait_for(lambda: analyzed() == 2, 10, what="the entries table analyzed again")


def test_a_tree_growing_past_its_statistics_is_planned_once_per_statement(
    pg_cluster: PgCluster,
) -> None:
    # With statistics taken when the tree was empty, a custom plan of a rename's lookup
    # took the tree's prefix of an index and filtered every row of the tree, after
    # planning longer than it ran; generic plans do not depend on the tree's numbers.
    db = "plans_" + os.urandom(4).hex()
    pg_cluster.psql(f"CREATE DATABASE {db}", db="postgres")
    with open_store(pg_cluster.url(db=db)) as store:
        for table in ("entries", "revisions", "changes", "gone", "operations"):
            pg_cluster.psql(f"ALTER TABLE memfs.{table} SET (autovacuum_enabled = false)", db=db)
        pg_cluster.psql("ANALYZE", db=db)  # statistics of an empty tree
        with store.batch():
            for i in range(500):
                store.write(f"d/f{i}.md", b"x\n", author=A, parents=True)
        for i in range(30):
            store.write(f"d/t{i}", b"y\n", author=A)
            store.rename(f"d/t{i}", f"d/f{i}.md", author=A, overwrite=True)
        assert isinstance(store, SqlStore) and isinstance(store.backend, postgres.PgBackend)
        rows = store.backend.all(
            "SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)"
            " FROM pg_prepared_statements"
        )
        generic, custom = (int(n) for n in rows[0])
        assert generic > 0 and custom == 0, (generic, custom)
        assert store.read("d/f7.md")[0] == b"y\n"


def test_a_mutation_that_fails_after_sending_its_writes_leaves_nothing(
    pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lone mutation is the pipeline's implicit transaction, which the Sync at its end
    # would commit: a failure once its writes are sent must roll them back first.
    from memfs.store import retention

    with open_store(pg_cluster.url()) as store:
        store.write("d/a.md", b"one\n", author=A, parents=True)
        before = (tree(store), store.last_seq(), store.read("d/a.md")[0])
        sweep = retention.sweep

        def failing(*args: Any) -> None:
            raise RuntimeError("failed after its writes were sent")

        monkeypatch.setattr(retention, "sweep", failing)
        for mutation in (
            lambda: store.write("d/a.md", b"two\n", author=A),
            lambda: store.write("d/b.md", b"new\n", author=A),
            lambda: store.rename("d/a.md", "d/c.md", author=A),
        ):
            with pytest.raises(RuntimeError):
                mutation()
            assert (tree(store), store.last_seq(), store.read("d/a.md")[0]) == before
        monkeypatch.setattr(retention, "sweep", sweep)
        # A batch's savepoints make its block explicit; a failure inside undoes it all.
        with pytest.raises(RuntimeError), store.batch():
            store.write("d/e.md", b"e\n", author=A)
            raise RuntimeError("the batch fails")
        assert (tree(store), store.last_seq()) == before[:2]
        store.write("d/a.md", b"three\n", author=A)  # the connection is sound after
        assert store.read("d/a.md")[0] == b"three\n"


def test_a_wrong_guess_is_written_again_from_what_is_read(
    stores: Callable[..., Store], pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another host (a second store on the same tree) changes a file between two writes
    of this one: the guess it sends is wrong, the server refuses it, and the write is
    made again from what is there. Every guess misses here (no pause after a miss), so
    the statements psycopg prepares inside aborted pipelines are met too."""
    from memfs.store import foresight

    monkeypatch.setattr(foresight, "PAUSE_AFTER_MISS", 0)
    url = pg_cluster.url()
    here, there = stores(url), stores(url)
    assert isinstance(here, SqlStore) and here._foresight is not None
    entry = here.write("f.md", b"0", author=A)
    for i in range(1, 16):
        other = there.write("f.md", b"%d" % i, author="other", expected_rev=entry.rev)
        # Foreseen: the file at the revision this store wrote. Read: the other's.
        entry = here.write("f.md", b"%d." % i, author=A)
        assert entry.rev > other.rev and here.read("f.md")[0] == b"%d." % i
    assert here._foresight.misses == 15
    assert [r.author for r in here.history("f.md")] == [A, "other"] * 15 + [A]
    # Checked against what is read, not against the guess: the guess has this store's
    # own revision current, where the other's is.
    other = there.write("f.md", b"theirs", author="other")
    here.write("f.md", b"mine", author=A, expected_rev=other.rev)
    there.write("f.md", b"last", author="other")
    with pytest.raises(Conflict):
        here.write("f.md", b"stale", author=A, expected_rev=other.rev)
    assert here.read("f.md")[0] == b"last"


def test_a_name_wrongly_guessed_new_is_refused_from_what_is_read(
    stores: Callable[..., Store], pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create-only write guesses that a name in a directory this store wrote in is
    new. Where it is not (the store forgot it made it; another host took it), the
    server refuses the guess and the write is refused as what is read says: the file
    there is never written over."""
    from memfs.store import foresight

    monkeypatch.setattr(foresight, "PAUSE_AFTER_MISS", 0)
    url = pg_cluster.url()
    here, there = stores(url), stores(url)
    assert isinstance(here, SqlStore)
    # Room for one path: the next write makes this store forget it wrote d/a.md.
    here._foresight = seen = foresight.Foresight(kept_paths=1)
    here.write("d/a.md", b"a", author=A, parents=True)
    here.write("d/b.md", b"b", author=A)
    assert seen.new_name("d/a.md", "d")  # wrong: the counters alone are right
    hits = seen.hits
    with pytest.raises(AlreadyExists):
        here.write("d/a.md", b"over", author=A, expected_rev=0)
    assert (seen.misses, seen.hits, here.read("d/a.md")[0]) == (1, hits, b"a")
    here.write("d/c.md", b"c", author=A, expected_rev=0)  # read: the miss forgot d
    here.write("d/e.md", b"e", author=A, expected_rev=0)  # guessed again
    assert (seen.misses, seen.hits) == (1, hits + 1)
    there.write("d/f.md", b"theirs", author="other")
    with pytest.raises(AlreadyExists):
        here.write("d/f.md", b"mine", author=A, expected_rev=0)
    assert seen.misses == 2 and here.read("d/f.md")[0] == b"theirs"
    assert [e.path for e in here.listdir("d")] == [f"d/{n}.md" for n in "abcef"]


def test_a_batch_leaves_no_directory_known_to_write_new_names_in(
    stores: Callable[..., Store],
) -> None:
    """A batch's later mutations may remove what its earlier ones wrote in: after it, a
    create-only write reads before it guesses again."""
    store = stores()
    assert isinstance(store, SqlStore) and store._foresight is not None
    with store.batch():
        store.write("d/x.md", b"x", author=A, parents=True)
        store.delete("d", author=A, recursive=True)
    assert not store._foresight.new_name("d/y.md", "d")
    with pytest.raises(NotFound):
        store.write("d/y.md", b"y", author=A, expected_rev=0)
    assert store._foresight.misses == 0


def test_two_hosts_creating_the_same_new_names_make_one_winner_each(
    stores: Callable[..., Store], pg_cluster: PgCluster
) -> None:
    """Two stores on one tree (two hosts), each guessing the names new in a directory
    both wrote in, race to create the same names: each name has exactly one winner,
    the loser is told AlreadyExists, and the file holds the winner's bytes."""
    url = pg_cluster.url()
    hosts = [stores(url), stores(url)]
    for i, store in enumerate(hosts):
        store.write(f"d/seed-{i}.md", b"seed", author=A, parents=True)
    names = [f"d/n{i}.md" for i in range(60)]
    won: list[dict[str, bytes]] = [{}, {}]
    lost: list[list[str]] = [[], []]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def create(i: int) -> None:
        try:
            start.wait(timeout=30)
            for name in names:
                data = b"host %d" % i
                try:
                    hosts[i].write(name, data, author=f"host-{i}", expected_rev=0)
                    won[i][name] = data
                except AlreadyExists:
                    lost[i].append(name)
        except BaseException as e:  # reported below: a thread cannot fail the test
            errors.append(e)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    assert sorted([*won[0], *won[1]]) == sorted(names)
    assert sorted([*lost[0], *lost[1]]) == sorted(names)
    for name in names:
        assert hosts[0].read(name)[0] == {**won[0], **won[1]}[name]


def _blob_rows(store: Store, where: str = "true") -> int:
    assert isinstance(store, SqlStore)
    sql = store.d.render(f"SELECT count(*) FROM blobs WHERE tree = :tree AND {where}")
    row = store.backend.one(sql, {})
    assert row is not None
    return int(row[0])


def test_a_growing_file_stores_what_each_revision_added_and_lets_it_all_go(
    stores: Callable[..., Store],
) -> None:
    from memfs.store.deltas import MAX_TAIL
    from memfs.store.rules import SWEEP_ROWS

    store = stores(history=1000, deleted_history_days=0)
    base = b"# the log\n" * 600
    lines = 2 * MAX_TAIL // 44
    store.write("log.md", base, author=A)
    data = base
    for i in range(lines):
        data += f"appended line {i:05d}, about forty bytes of it\n".encode()
        store.write("log.md", data, author=A)
    assert _blob_rows(store, "base IS NOT NULL") >= lines - 4
    assert _blob_rows(store, "base IS NULL") <= 4
    assert store.read("log.md")[0] == data
    # A base whose own revision goes stays while rows continue it, then goes with them.
    store.delete("log.md", author=A)
    now = time.time_ns() + 2 * 86_400 * 10**9
    assert isinstance(store, SqlStore)
    store.clock = lambda: now
    for _ in range(lines // SWEEP_ROWS + 2):
        store.write("other.md", b"x", author=A)
    assert _blob_rows(store) == 1
