"""The mount's write path with no kernel: MemfsOperations called as libfuse calls it
(create, write with and without O_APPEND, read, truncate, fsync) on real stores, with
real programs as the callers. What is checked is what the store ends up holding.

See tests/fixtures/ops.py for the harness; the same rules through a real mount are in
tests/test_mount_ops.py, test_many_writers.py and test_mount_caps.py.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memfs.errors import NotFound
from memfs.store import open_store
from memfs.store.base import Change, Store
from tests.fixtures.mount import sqlite_url, wait_for
from tests.fixtures.ops import Kernel, actor
from tests.fixtures.postgres import PgCluster
from tests.fixtures.waiting import DEADLINE

FILE = stat.S_IFREG
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
APPEND = os.O_WRONLY | os.O_APPEND

MakeKernel = Callable[..., Kernel]
Program = Callable[[str], int]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str | None:
    """The store for the rules whose outcome rests on the backend's compare-and-set:
    None (the kernel fixture's SQLite file) or a fresh tree of the suite's PostgreSQL."""
    if request.param == "sqlite":
        return None
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.url()


def authors(store: Store, path: str) -> list[str]:
    """Who made each revision of ``path``, oldest first."""
    return [r.author for r in reversed(store.history(path))]


def save(k: Kernel, path: str, data: bytes, *, mode: int = 0o644) -> None:
    """What a program's ``open(O_CREAT|O_TRUNC)``, ``write``, ``fsync``, ``close`` sends
    in no-open mode."""
    fh = k.ops.create(path, FILE | mode, CREATE)
    k.ops.write(path, data, 0, fh, os.O_WRONLY)
    k.ops.fsync(path, 0, fh)


# --- buffering: one revision per save, per writer ---------------------------------------


def test_a_save_is_buffered_then_one_revision_by_its_program(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel()
    other = k.other()
    k.pid = vim = programs("vim")
    fh = k.ops.create("/notes.md", FILE | 0o640, CREATE)
    k.ops.write("/notes.md", b"hello ", 0, fh, os.O_WRONLY)
    k.ops.write("/notes.md", b"world\n", 6, fh, os.O_WRONLY)
    # Acknowledged and shown through the mount, but not a revision yet.
    attrs = k.ops.getattr("/notes.md")
    assert (attrs["st_size"], stat.S_IMODE(attrs["st_mode"])) == (12, 0o640)
    assert k.ops.read("/notes.md", 4096, 0, 0) == b"hello world\n"
    assert ("notes.md", FILE, 0) in k.ops.readdir("/", 0)
    with pytest.raises(NotFound):
        other.stat("notes.md")
    k.ops.fsync("/notes.md", 0, fh)
    data, entry = other.read("notes.md")
    assert (data, entry.mode) == (b"hello world\n", 0o640)
    assert authors(other, "notes.md") == [actor("vim")]
    # The process itself is named by the operation the change belongs to.
    assert {op.detail for op in other.operations(path="notes.md")} == {f"pid {vim}"}
    # The next save (truncate to nothing, write, fsync) is one more revision.
    k.ops.truncate("/notes.md", 0, None)
    k.ops.write("/notes.md", b"bye\n", 0, 0, os.O_WRONLY)
    k.ops.write("/notes.md", b"!\n", 4, 0, os.O_WRONLY)
    k.ops.fsync("/notes.md", 0, 0)
    assert other.read("notes.md")[0] == b"bye\n!\n"
    assert len(other.history("notes.md")) == 2
    assert k.ops.writes.pending_bytes == 0


def test_another_programs_write_commits_the_first_ones_save_first(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel()
    other = k.other()
    vim, cat = programs("vim"), programs("cat")
    k.pid = vim
    save(k, "/log.md", b"by vim\n")
    k.ops.write("/log.md", b"still vim\n", 7, 0, os.O_WRONLY)  # buffered, no fsync
    k.pid = cat
    k.ops.write("/log.md", b"cat was here\n", 17, 0, APPEND)
    k.ops.fsync("/log.md", 0, 0)
    assert other.read("log.md")[0] == b"by vim\nstill vim\ncat was here\n"
    # vim's change is a revision of its own, before cat's (queued behind it, as an
    # append: cat did not wait for it to land).
    assert authors(other, "log.md") == [actor("vim")] * 2 + [actor("cat")]
    vims = other.history("log.md")[1]
    assert other.read_revision("log.md", vims.rev) == b"by vim\nstill vim\n"


def test_another_programs_change_that_is_no_append_lands_the_first_ones_first(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel()
    other = k.other()
    vim, sed = programs("vim"), programs("sed")
    k.pid = vim
    save(k, "/log.md", b"by vim\n")
    k.ops.write("/log.md", b"still vim\n", 7, 0, os.O_WRONLY)  # buffered, no fsync
    k.pid = sed
    k.ops.write("/log.md", b"BY", 0, 0, os.O_WRONLY)  # in place: waits for vim's to land
    assert other.read("log.md")[0] == b"by vim\nstill vim\n"
    k.ops.fsync("/log.md", 0, 0)
    assert other.read("log.md")[0] == b"BY vim\nstill vim\n"
    assert authors(other, "log.md") == [actor("vim")] * 2 + [actor("sed")]


def test_an_mtime_set_after_a_write_lands_with_it_as_one_change(
    kernel: MakeKernel, programs: Program
) -> None:
    """tar -x: create, write, close, then utimens with the archive's time. One change
    holds the content and the time; no commit is forced and no attribute change follows."""
    k = kernel()
    other = k.other()
    k.pid = programs("tar")
    other.write("old.md", b"v1\n", author="someone")
    seq = other.last_seq()
    # Seen by the mount before it edits the file: seen after, another writer's change
    # to a file with pending writes lands them at once (commit_soon), as it should.
    assert k.ops.show_upto(seq, DEADLINE)
    fh = k.ops.create("/new.md", FILE | 0o644, CREATE)
    k.ops.write("/new.md", b"from the archive\n", 0, fh, os.O_WRONLY)
    k.ops.release("/new.md", fh)
    k.ops.utimens("/new.md", (0, 1_500_000_000_123_456_789))
    k.ops.truncate("/old.md", 0, None)
    k.ops.write("/old.md", b"v2\n", 0, 0, os.O_WRONLY)
    k.ops.utimens("/old.md", (0, 1_400_000_000_000_000_000))
    assert other.last_seq() == seq  # nothing in the store yet
    assert k.ops.getattr("/new.md")["st_mtime"] == 1_500_000_000_123_456_789
    assert k.ops.getattr("/old.md")["st_mtime"] == 1_400_000_000_000_000_000
    k.ops.fsync("/new.md", 0, 0)
    k.ops.fsync("/old.md", 0, 0)
    changes = other.changes(seq)
    assert [(c.path, c.kind) for c in changes] == [("new.md", "create"), ("old.md", "modify")]
    assert other.stat("new.md").mtime_ns == 1_500_000_000_123_456_789
    assert other.read("old.md")[0] == b"v2\n"
    assert other.stat("old.md").mtime_ns == 1_400_000_000_000_000_000
    assert k.ops.getattr("/new.md")["st_mtime"] == 1_500_000_000_123_456_789


def test_a_write_after_an_mtime_was_set_moves_it(kernel: MakeKernel, programs: Program) -> None:
    k = kernel()
    other = k.other()
    k.pid = programs("vim")
    fh = k.ops.create("/a.md", FILE | 0o644, CREATE)
    k.ops.write("/a.md", b"one\n", 0, fh, os.O_WRONLY)
    k.ops.utimens("/a.md", (0, 1_500_000_000_000_000_000))
    k.ops.write("/a.md", b"two\n", 4, fh, os.O_WRONLY)
    assert k.ops.getattr("/a.md")["st_mtime"] > 1_600_000_000_000_000_000
    k.ops.fsync("/a.md", 0, fh)
    data, entry = other.read("a.md")
    assert data == b"one\ntwo\n"
    assert entry.mtime_ns > 1_600_000_000_000_000_000
    assert len(other.history("a.md")) == 1


def test_threads_of_one_program_are_one_writer(kernel: MakeKernel) -> None:
    """libfuse reports the thread that wrote; the mount attributes it to its process."""
    k = kernel()
    other = k.other()
    ready, done = threading.Barrier(2), threading.Event()
    tids: list[int] = []

    def worker() -> None:
        tids.append(threading.get_native_id())
        ready.wait(timeout=10)
        done.wait(timeout=30)  # stay alive: /proc/<tid> must exist while it "writes"

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        ready.wait(timeout=10)
        k.pid = threading.get_native_id()
        save(k, "/a.md", b"one\n")
        k.ops.write("/a.md", b"two\n", 4, 0, os.O_WRONLY)
        k.pid = tids[0]
        k.ops.write("/a.md", b"three\n", 8, 0, os.O_WRONLY)
        k.ops.fsync("/a.md", 0, 0)
    finally:
        done.set()
        thread.join(timeout=10)
    assert other.read("a.md")[0] == b"one\ntwo\nthree\n"
    assert len(other.history("a.md")) == 2  # the save, then both threads' writes as one
    assert authors(other, "a.md")[-1] == actor(
        Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    )


def test_a_truncate_to_the_size_the_file_has_changes_nothing(kernel: MakeKernel) -> None:
    k = kernel()
    other = k.other()
    other.write("a.md", b"12345", author="someone")
    k.ops.truncate("/a.md", 5, None)
    assert k.ops.writes.get("a.md") is None
    k.ops.truncate("/a.md", 8, None)  # grown with zeros, as a local disk does
    k.ops.fsync("/a.md", 0, 0)
    assert other.read("a.md")[0] == b"12345\0\0\0"
    assert len(other.history("a.md")) == 2


# --- O_APPEND: at the true end, whatever offset the kernel computed ---------------------


def test_o_append_goes_at_the_true_end_when_the_kernels_offset_is_stale(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.write("log.md", b"one\n", author="someone")
    assert k.ops.getattr("/log.md")["st_size"] == 4  # what the kernel now caches
    other.write("log.md", b"one\ntwo\n", author="another mount")
    k.pid = programs("sh")
    # The kernel puts an O_APPEND write at the size it cached: 4.
    assert k.ops.write("/log.md", b"three\n", 4, 0, APPEND) == 6
    assert k.ops.getattr("/log.md")["st_size"] == 14
    k.ops.fsync("/log.md", 0, 0)
    assert other.read("log.md")[0] == b"one\ntwo\nthree\n"
    # Without O_APPEND the offset is the program's own (pwrite): it is kept.
    other.write("plain.md", b"one\n", author="someone")
    k.ops.getattr("/plain.md")
    other.write("plain.md", b"one\ntwo\n", author="another mount")
    k.ops.write("/plain.md", b"TWO\n", 4, 0, os.O_WRONLY)
    k.ops.fsync("/plain.md", 0, 0)
    assert other.read("plain.md")[0] == b"one\nTWO\n"


def test_the_kernel_is_told_to_forget_a_size_an_append_made_wrong(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel()
    other = k.other()
    other.write("log.md", b"one\n", author="someone")
    k.ops.getattr("/log.md")
    other.write("log.md", b"one\ntwo\n", author="another mount")
    k.ops.show_upto(other.last_seq(), 10)  # as another door asks after its change
    k.told.clear()
    k.pid = programs("sh")
    k.ops.write("/log.md", b"three\n", 4, 0, APPEND)
    wait_for(lambda: "/log.md" in k.told, 5, what="the kernel told to forget log.md")


# --- a commit that lands on a base another writer moved ---------------------------------


def test_appends_are_rebased_onto_another_writers_append(
    kernel: MakeKernel, programs: Program, backend: str | None
) -> None:
    k = kernel(backend, start=False)
    other = k.other()
    first = other.write("log.md", b"a\n", author="someone")
    k.pid = programs("sh")
    k.ops.write("/log.md", b"mine\n", 2, 0, APPEND)
    other.write("log.md", b"a\ntheirs\n", author="other mount", expected_rev=first.rev)
    k.ops.fsync("/log.md", 0, 0)
    assert other.read("log.md")[0] == b"a\ntheirs\nmine\n"
    assert authors(other, "log.md") == ["someone", "other mount", actor("sh")]
    # The mount shows what was committed, not the buffer it was built from.
    assert k.ops.getattr("/log.md")["st_size"] == len(b"a\ntheirs\nmine\n")
    assert k.ops.read("/log.md", 4096, 0, 0) == b"a\ntheirs\nmine\n"
    assert k.ops.writes.health.conflicts == ()


def test_a_change_seen_on_the_feed_rebases_pending_writes_at_once(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel()  # the committer and the follower run; nothing is due for an hour
    other = k.other()
    first = other.write("log.md", b"a\n", author="someone")
    k.pid = programs("sh")
    k.ops.write("/log.md", b"mine\n", 2, 0, APPEND)
    other.write("log.md", b"a\ntheirs\n", author="other mount", expected_rev=first.rev)
    wait_for(
        lambda: other.read("log.md")[0] == b"a\ntheirs\nmine\n",
        10,
        what="the pending append rebased without an fsync",
    )
    wait_for(lambda: "/log.md" in k.told, 5, what="the kernel told to forget log.md")


@pytest.mark.parametrize(
    ("theirs", "result", "copied"),
    [
        # A line added since the base: merged with the rewrite.
        (b"old plan\ntheir line\n", b"new plan\ntheir line\n", False),
        # The rewritten line changed since the base: the rewrite lands, theirs is a copy.
        (b"their plan\n", b"new plan\n", True),
    ],
    ids=["merged", "copy"],
)
def test_a_whole_rewrite_lands_on_what_changed_since_its_base(
    kernel: MakeKernel,
    programs: Program,
    backend: str | None,
    theirs: bytes,
    result: bytes,
    copied: bool,
) -> None:
    k = kernel(backend, start=False)
    other = k.other()
    first = other.write("plan.md", b"old plan\n", author="someone")
    k.pid = programs("vim")
    k.ops.truncate("/plan.md", 0, None)
    k.ops.write("/plan.md", b"new plan\n", 0, 0, os.O_WRONLY)
    replaced = other.write("plan.md", theirs, author="ann (ed)", expected_rev=first.rev)
    k.ops.fsync("/plan.md", 0, 0)
    assert other.read("plan.md")[0] == result
    if not copied:
        assert k.ops.writes.health.conflicts == ()
        return
    (conflict,) = k.ops.writes.health.conflicts
    path, _, copy = conflict.partition(" -> ")
    assert path == "plan.md" and copy.startswith("plan.conflict-") and copy.endswith("-ann-ed.md")
    assert other.read(copy)[0] == theirs
    assert other.read_revision("plan.md", replaced.rev) == theirs


def test_after_a_save_merged_with_another_writers_change_the_kernel_drops_its_pages(
    kernel: MakeKernel, programs: Program, backend: str | None
) -> None:
    """The kernel's pages of a saved file hold what its writer wrote. When the save
    lands merged with another writer's change, the next open must drop them: kept,
    they served the editor its own save again as the merged revision, and its next
    save, built on that, undid the other writer's lines (two savers on two mounts,
    thousands of lines; the bench_many_writers savers' row)."""
    k = kernel(backend, start=False)
    other = k.other()
    first = other.write("notes.md", b"one\n", author="someone")
    k.pid = programs("vim")
    fh = k.ops.open_file("/notes.md", os.O_RDONLY).fh  # vim reads it
    assert k.ops.read("/notes.md", 4096, 0, fh) == b"one\n"
    k.ops.release("/notes.md", fh)
    other.write("notes.md", b"one\ntheirs\n", author="ann (ed)", expected_rev=first.rev)
    fh = k.ops.open_file("/notes.md", os.O_WRONLY | os.O_TRUNC).fh  # and saves it whole
    k.ops.write("/notes.md", b"one\nmine\n", 0, fh, os.O_WRONLY)
    k.ops.fsync("/notes.md", 0, fh)
    k.ops.release("/notes.md", fh)
    merged, entry = other.read("notes.md")
    assert sorted(merged.splitlines()) == [b"mine", b"one", b"theirs"]
    again = k.ops.open_file("/notes.md", os.O_RDONLY)
    assert not again.keep_cache  # the pages hold "one\nmine\n", not the merge
    assert k.ops.read("/notes.md", 4096, 0, again.fh) == merged
    k.ops.release("/notes.md", again.fh)
    # A save landed as written: its pages are the revision, and stay.
    fh = k.ops.open_file("/notes.md", os.O_WRONLY | os.O_TRUNC).fh
    k.ops.write("/notes.md", merged + b"more\n", 0, fh, os.O_WRONLY)
    k.ops.fsync("/notes.md", 0, fh)
    k.ops.release("/notes.md", fh)
    assert other.read("notes.md")[0] == merged + b"more\n"
    assert k.ops.open_file("/notes.md", os.O_RDONLY).keep_cache
    assert entry.rev < other.stat("notes.md").rev


def test_a_save_after_ones_own_merged_save_merges_against_what_one_wrote(
    kernel: MakeKernel, programs: Program, backend: str | None
) -> None:
    """vim saves, the save lands merged with another writer's line, and vim saves
    again from what it holds (its own first save) without reading the file anew: the
    second save merges against that. Against the revision vim read first, its own
    first line counted as added on both sides and came twice (two savers on two mounts
    doubled thousands of lines); against the merged revision, the other writer's line
    would go."""
    k = kernel(backend, start=False)
    other = k.other()
    first = other.write("notes.md", b"one\n", author="someone")
    k.pid = programs("vim")
    fh = k.ops.open_file("/notes.md", os.O_RDONLY).fh
    assert k.ops.read("/notes.md", 4096, 0, fh) == b"one\n"
    k.ops.release("/notes.md", fh)
    for content, theirs in ((b"one\nmine\n", True), (b"one\nmine\nmore\n", False)):
        fh = k.ops.open_file("/notes.md", os.O_WRONLY | os.O_TRUNC).fh
        k.ops.write("/notes.md", content, 0, fh, os.O_WRONLY)
        if theirs:
            other.write("notes.md", b"one\ntheirs\n", author="ann (ed)", expected_rev=first.rev)
        k.ops.fsync("/notes.md", 0, fh)
        k.ops.release("/notes.md", fh)
    lines = other.read("notes.md")[0].splitlines()
    assert sorted(lines) == [b"mine", b"more", b"one", b"theirs"]
    assert k.ops.writes.health.conflicts == ()


def test_edits_of_one_line_are_kept_as_a_conflict_copy_named_in_the_health(
    kernel: MakeKernel, programs: Program, backend: str | None
) -> None:
    k = kernel(backend, start=False)
    other = k.other()
    first = other.write("notes.md", b"title: draft\nbody\n", author="someone")
    k.pid = programs("vim")
    k.ops.write("/notes.md", b"final", 7, 0, os.O_WRONLY)  # title: final
    other.write("notes.md", b"title: shipped\nbody\n", author="other mount", expected_rev=first.rev)
    k.ops.fsync("/notes.md", 0, 0)
    assert other.read("notes.md")[0] == b"title: shipped\nbody\n"  # theirs stays
    (conflict,) = k.ops.writes.health.conflicts
    path, _, copy = conflict.partition(" -> ")
    assert path == "notes.md"
    assert copy.startswith("notes.conflict-") and copy.endswith("-vim.md")  # the program
    assert other.read(copy)[0] == b"title: final\nbody\n"  # ours, beside it
    assert k.health[-1].conflicts == (conflict,)  # published to `memfs status`
    assert (copy, FILE, 0) in k.ops.readdir("/", 0)
    assert k.ops.read("/notes.md", 4096, 0, 0) == b"title: shipped\nbody\n"


def test_edits_of_different_lines_both_land(kernel: MakeKernel, programs: Program) -> None:
    k = kernel(start=False)
    other = k.other()
    first = other.write("notes.md", b"title: draft\nbody\n", author="someone")
    k.pid = programs("vim")
    k.ops.write("/notes.md", b"BODY", 13, 0, os.O_WRONLY)
    other.write("notes.md", b"title: shipped\nbody\n", author="other mount", expected_rev=first.rev)
    k.ops.fsync("/notes.md", 0, 0)
    assert other.read("notes.md")[0] == b"title: shipped\nBODY\n"
    assert k.ops.writes.health.conflicts == ()


def test_a_file_deleted_under_its_writer_is_saved_again(
    kernel: MakeKernel, programs: Program
) -> None:
    k = kernel(start=False)
    other = k.other()
    other.write("draft.md", b"start\n", author="someone")
    k.pid = programs("vim")
    k.ops.write("/draft.md", b"more\n", 6, 0, APPEND)
    other.delete("draft.md", author="other mount")
    k.ops.fsync("/draft.md", 0, 0)
    assert other.read("draft.md")[0] == b"start\nmore\n"


# --- caps: refused by the call that would pass them -------------------------------------


def test_past_max_file_bytes_a_write_or_truncate_is_efbig(
    kernel: MakeKernel, tmp_path: Path
) -> None:
    k = kernel(sqlite_url(tmp_path / "capped.db") + "?max_file_bytes=1000")
    other = k.other()
    fh = k.ops.create("/big.bin", FILE | 0o600, CREATE)
    k.ops.write("/big.bin", b"x" * 900, 0, fh, os.O_WRONLY)
    calls: list[Callable[[], object]] = [
        lambda: k.ops.write("/big.bin", b"y" * 200, 900, fh, os.O_WRONLY),
        lambda: k.ops.write("/big.bin", b"y" * 200, 0, fh, APPEND),
        lambda: k.ops.truncate("/big.bin", 5000, fh),
    ]
    for call in calls:
        with pytest.raises(OSError) as refused:
            call()
        assert refused.value.errno == errno.EFBIG
    k.ops.write("/big.bin", b"y" * 100, 900, fh, os.O_WRONLY)  # up to the cap is fine
    k.ops.fsync("/big.bin", 0, fh)
    assert other.read("big.bin")[0] == b"x" * 900 + b"y" * 100


def _edquot(call: Callable[[], object]) -> None:
    with pytest.raises(OSError) as refused:
        call()
    assert refused.value.errno == errno.EDQUOT, refused.value


def test_past_max_files_a_create_is_edquot_counting_what_is_pending(
    kernel: MakeKernel, tmp_path: Path
) -> None:
    k = kernel(sqlite_url(tmp_path / "capped.db") + "?max_files=2")
    other = k.other()
    other.write("a.md", b"a", author="someone")
    k.ops.create("/b.md", FILE | 0o600, CREATE)  # pending: counted, not yet stored
    _edquot(lambda: k.ops.create("/c.md", FILE | 0o600, CREATE))
    k.ops.mkdir("/dir", 0o700)  # directories are not counted
    k.ops.symlink("/link", "a.md")  # nor symlinks
    k.ops.unlink("/b.md")  # never stored: room at once
    k.ops.create("/c.md", FILE | 0o600, CREATE)
    k.ops.fsync("/c.md", 0, 0)
    assert sorted(e.path for e in other.walk() if e.is_file) == ["a.md", "c.md"]


def test_past_max_tree_bytes_growth_is_edquot_and_shrinking_goes_through(
    kernel: MakeKernel, tmp_path: Path
) -> None:
    k = kernel(sqlite_url(tmp_path / "capped.db") + "?max_tree_bytes=100")
    other = k.other()
    other.write("a.md", b"a" * 60, author="someone")
    fh = k.ops.create("/b.md", FILE | 0o600, CREATE)
    k.ops.write("/b.md", b"b" * 30, 0, fh, os.O_WRONLY)
    _edquot(lambda: k.ops.write("/b.md", b"b" * 20, 30, fh, os.O_WRONLY))
    _edquot(lambda: k.ops.truncate("/b.md", 50, fh))
    k.ops.truncate("/b.md", 10, fh)
    k.ops.write("/b.md", b"b" * 30, 10, fh, os.O_WRONLY)  # 60 + 40: exactly the cap
    k.ops.fsync("/b.md", 0, fh)
    assert other.usage().bytes == 100
    with open_store(sqlite_url(tmp_path / "capped.db")) as uncapped:  # a door without the cap
        uncapped.write("a.md", b"a" * 70, author="someone")
    k.ops.truncate("/b.md", 5, None)  # shrinking an over-cap tree goes through
    k.ops.fsync("/b.md", 0, 0)
    assert other.read("b.md")[0] == b"b" * 5


def test_a_commit_refused_for_a_cap_after_the_write_is_kept_and_retried(
    kernel: MakeKernel, tmp_path: Path
) -> None:
    k = kernel(sqlite_url(tmp_path / "capped.db") + "?max_tree_bytes=100", start=False)
    other = k.other()
    fh = k.ops.create("/b.md", FILE | 0o600, CREATE)
    k.ops.write("/b.md", b"b" * 40, 0, fh, os.O_WRONLY)  # acknowledged: 40 of 100
    other.write("c.md", b"c" * 70, author="another host")  # the store fills meanwhile
    _edquot(lambda: k.ops.fsync("/b.md", 0, fh))
    health = k.ops.writes.health
    assert health.unsaved == ("b.md",)
    kept = k.journal / "recovered" / "b.md"
    assert kept.read_bytes() == b"b" * 40  # a copy a person can read
    _edquot(lambda: k.ops.write("/b.md", b"more", 40, fh, os.O_WRONLY))  # the file is stuck
    assert k.ops.read("/b.md", 100, 0, 0) == b"b" * 40  # and still readable
    other.delete("c.md", author="another host")
    k.ops.fsync("/b.md", 0, fh)  # room again: the retry saves it
    assert other.read("b.md")[0] == b"b" * 40
    assert k.ops.writes.health.unsaved == () and not kept.exists()


def test_on_a_pushing_store_the_follower_reads_the_feed_only_for_others_changes(
    kernel: MakeKernel, programs: Program, pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    k = kernel(pg_cluster.url())
    k.pid = programs("vim")
    reads: list[int] = []
    changes_of = k.store.changes

    def counted(*args: Any, **kwargs: Any) -> list[Change]:
        reads.append(1)
        return changes_of(*args, **kwargs)

    monkeypatch.setattr(k.store, "changes", counted)
    for i in range(5):
        save(k, f"mine{i}.md", b"mine\n")
    assert k.ops.show_upto(k.store.last_seq(), 5)  # followed up to its own last change
    assert reads == [] and k.told == []
    # Another writer's change is read, and the kernel told of it.
    k.other().write("theirs.md", b"theirs\n", author="someone")
    wait_for(lambda: "/theirs.md" in k.told, 5, what="the other writer's change told")
    assert reads != []
