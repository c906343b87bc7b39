"""The mount's namespace and attribute operations with no kernel: getattr, readdir,
mkdir, rmdir, unlink, symlink, readlink, rename with flags, link, chmod, chown,
utimens and statfs, called on MemfsOperations as libfuse calls them, on a real SQLite
store (tests/fixtures/ops.py). Each refusal is checked for its errno and for leaving
the store as it was.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import threading
from collections.abc import Callable

import pytest

from memfs.errors import NotFound
from memfs.mount import meta
from memfs.mount.namespace import RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT
from memfs.store.base import Store
from tests.fixtures.ops import Kernel

FILE, DIR, LINK = stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC

MakeKernel = Callable[..., Kernel]


def refused(code: int, call: Callable[[], object]) -> None:
    with pytest.raises(OSError) as caught:
        call()
    assert caught.value.errno == code, f"{caught.value!r}, wanted {errno.errorcode[code]}"


def tree(store: Store) -> dict[str, str]:
    """Every entry of the store and its kind: what a refusal must leave as it was."""
    return {e.path: e.kind for e in store.walk()}


def names(k: Kernel, path: str) -> list[tuple[str, int]]:
    return [(name, mode) for name, mode, _ in k.ops.readdir(path, 0)]


@pytest.fixture
def k(kernel: MakeKernel) -> Kernel:
    return kernel(start=False)


def stats_asked(k: Kernel, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the operations ask the store about from here on, in order."""
    asked: list[str] = []
    stat_of = k.store.stat

    def counted(path: str) -> object:
        asked.append(path)
        return stat_of(path)

    monkeypatch.setattr(k.store, "stat", counted)
    return asked


# --- lookups and listings ---------------------------------------------------------------


def test_getattr_of_each_kind_and_of_nothing(k: Kernel) -> None:
    other = k.other()
    other.mkdir("dir", author="someone", mode=0o750)
    other.write("dir/a.md", b"hello", author="someone", mode=0o640)
    other.symlink("link", "dir/a.md", author="someone")
    root = k.ops.getattr("/")
    assert stat.S_ISDIR(root["st_mode"])
    d = k.ops.getattr("/dir")
    assert (stat.S_IFMT(d["st_mode"]), stat.S_IMODE(d["st_mode"])) == (DIR, 0o750)
    f = k.ops.getattr("/dir/a.md")
    assert (stat.S_IFMT(f["st_mode"]), stat.S_IMODE(f["st_mode"])) == (FILE, 0o640)
    assert (f["st_size"], f["st_uid"], f["st_gid"]) == (5, os.getuid(), os.getgid())
    assert stat.S_IFMT(k.ops.getattr("/link")["st_mode"]) == LINK
    refused(errno.ENOENT, lambda: k.ops.getattr("/missing"))
    refused(errno.ENOENT, lambda: k.ops.getattr("/dir/a.md/below"))
    # A name the gate refuses cannot exist; one past its limits is too long to.
    refused(errno.ENOENT, lambda: k.ops.getattr("/CON"))
    refused(errno.ENAMETOOLONG, lambda: k.ops.getattr("/" + "n" * 256))


def test_readdir_lists_the_store_and_what_is_not_committed_yet(k: Kernel) -> None:
    other = k.other()
    other.mkdir("dir", author="someone")
    other.write("a.md", b"a", author="someone")
    other.symlink("link", "a.md", author="someone")
    k.ops.create("/new.md", FILE | 0o600, CREATE)
    assert names(k, "/") == [
        (".", DIR),
        ("..", DIR),
        ("a.md", FILE),
        ("dir", DIR),
        ("link", LINK),
        ("new.md", FILE),
    ]
    assert names(k, "/dir") == [(".", DIR), ("..", DIR)]
    refused(errno.ENOTDIR, lambda: k.ops.readdir("/a.md", 0))
    refused(errno.ENOENT, lambda: k.ops.readdir("/missing", 0))


def test_names_a_directory_lacks_are_answered_without_the_store_and_never_hide_one(
    kernel: MakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    k = kernel()  # the follower runs: other writers' names arrive on the feed
    other = k.other()
    other.write("d/a.md", b"a\n", author="someone", parents=True)
    # Its name on the feed first: a change arriving later would rightly forget the listing.
    assert k.ops.show_upto(other.last_seq(), 5)
    asked = stats_asked(k, monkeypatch)
    k.ops.getattr("/d")
    refused(errno.ENOENT, lambda: k.ops.getattr("/d/.tmp-1"))  # the directory is read whole
    asked.clear()
    # An atomic save's lookups: the temporary name, the file, both answered here.
    refused(errno.ENOENT, lambda: k.ops.getattr("/d/.tmp-2"))
    refused(errno.ENOENT, lambda: k.ops.getattr("/d/b.md"))
    assert k.ops.getattr("/d/a.md")["st_size"] == 2
    assert asked == []
    # Made here: found at once, committed or not, and after a rename.
    fh = k.ops.create("/d/.tmp-2", FILE | 0o600, CREATE)
    k.ops.write("/d/.tmp-2", b"b\n", 0, fh, os.O_WRONLY)
    k.ops.fsync("/d/.tmp-2", 0, fh)
    assert k.ops.getattr("/d/.tmp-2")["st_size"] == 2
    k.ops.rename("/d/.tmp-2", "/d/b.md", 0)
    assert k.ops.getattr("/d/b.md")["st_size"] == 2
    refused(errno.ENOENT, lambda: k.ops.getattr("/d/.tmp-2"))
    # Made by another writer: found once the feed has it.
    other.write("d/c.md", b"c\n", author="someone")
    assert k.ops.show_upto(other.last_seq(), 5)
    assert k.ops.getattr("/d/c.md")["st_size"] == 2
    # A directory moved over: its names are the new ones.
    other.write("e/x.md", b"x\n", author="someone", parents=True)
    assert k.ops.show_upto(other.last_seq(), 5)
    refused(errno.ENOENT, lambda: k.ops.getattr("/e/y.md"))
    other.write("f/y.md", b"y\n", author="someone", parents=True)
    other.delete("e/x.md", author="someone")
    other.delete("e", author="someone")
    other.rename("f", "e", author="someone")
    assert k.ops.show_upto(other.last_seq(), 5)
    assert k.ops.getattr("/e/y.md")["st_size"] == 2


def test_a_directory_too_big_to_keep_whole_is_listed_once_not_per_lookup(
    kernel: MakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(meta, "MAX_NAMES", 3)
    k = kernel()
    other = k.other()
    for i in range(5):
        other.write(f"big/f{i}.md", b"x", author="someone", parents=True)
    assert k.ops.show_upto(other.last_seq(), 5)
    listed: list[str] = []
    listdir_of = k.store.listdir

    def counted(path: str) -> object:
        listed.append(path)
        return listdir_of(path)

    monkeypatch.setattr(k.store, "listdir", counted)
    k.ops.getattr("/big")
    for i in range(4):
        # An atomic save: its temporary name looked up, then made (and the directory's
        # cached listing forgotten).
        refused(errno.ENOENT, functools.partial(k.ops.getattr, f"/big/.tmp-{i}"))
        fh = k.ops.create(f"/big/.tmp-{i}", FILE | 0o600, CREATE)
        k.ops.fsync(f"/big/.tmp-{i}", 0, fh)
        assert stat.S_ISREG(k.ops.getattr(f"/big/.tmp-{i}")["st_mode"])
    assert listed == ["big"]


def test_a_directory_keeps_its_cached_entry_with_the_times_its_changes_gave_it(
    k: Kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = k.other()
    other.mkdir("d", author="someone")
    before = k.ops.getattr("/d")["st_mtime"]
    asked = stats_asked(k, monkeypatch)
    fh = k.ops.create("/d/new.md", FILE | 0o600, CREATE)
    k.ops.write("/d/new.md", b"x\n", 0, fh, os.O_WRONLY)
    k.ops.fsync("/d/new.md", 0, fh)
    k.ops.rename("/d/new.md", "/d/moved.md", 0)
    k.ops.mkdir("/d/sub", 0o755)
    attrs = k.ops.getattr("/d")
    assert "d" not in asked  # the kernel asks after every create: answered here
    stored = other.stat("d")
    assert (attrs["st_mtime"], attrs["st_ctime"]) == (stored.mtime_ns, stored.ctime_ns)
    assert attrs["st_mtime"] > before


def test_a_save_renamed_into_place_is_read_back_without_the_store(
    kernel: MakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model's edit through the mount: it holds the file open (its lock) while it saves
    # a temporary file and renames it over; then it views the result.
    k = kernel()  # the follower runs: another writer's change must not be served stale
    other = k.other()
    asked: list[str] = []
    for name in ("stat", "read", "listdir"):
        real = getattr(k.store, name)

        def counted(path: str, _real: Callable[[str], object] = real, _name: str = name) -> object:
            asked.append(f"{_name} {path}")
            return _real(path)

        monkeypatch.setattr(k.store, name, counted)
    k.ops.mkdir("/d", 0o755)
    k.ops.chmod("/d", 0o700)  # the handler's own mode, whatever the umask
    for i, text in enumerate((b"first\n", b"second\n", b"third\n")):
        tmp = f"/d/.tmp-{i}"  # the handler's temporary names are new each time
        refused(errno.ENOENT, functools.partial(k.ops.getattr, tmp))
        fh = k.ops.create(tmp, FILE | 0o600, CREATE)
        k.ops.write(tmp, text, 0, fh, os.O_WRONLY)
        k.ops.fsync(tmp, 0, fh)
        k.ops.rename(tmp, "/d/notes.md", 0)
        attrs = k.ops.getattr("/d/notes.md")
        assert k.ops.read("/d/notes.md", 4096, 0, 0) == text
        stored = other.stat("d/notes.md")
        assert (attrs["st_size"], attrs["st_mtime"], attrs["st_ctime"]) == (
            stored.size,
            stored.mtime_ns,
            stored.ctime_ns,
        )
    assert asked == [], asked
    # Another writer's change: its content, never the one kept from the save.
    other.write("d/notes.md", b"theirs\n", author="someone")
    assert k.ops.show_upto(other.last_seq(), 5)
    assert k.ops.read("/d/notes.md", 4096, 0, 0) == b"theirs\n"
    # The entry first (its size decides between a whole read and one by range), then
    # the content.
    assert asked == ["stat d/notes.md", "read d/notes.md"], asked


def test_directories_are_not_files(k: Kernel) -> None:
    other = k.other()
    other.mkdir("dir", author="someone")
    refused(errno.EISDIR, lambda: k.ops.open("/dir", os.O_RDONLY))
    refused(errno.ENOENT, lambda: k.ops.open("/missing", os.O_RDONLY))
    refused(errno.EISDIR, lambda: k.ops.read("/dir", 10, 0, 0))
    refused(errno.EISDIR, lambda: k.ops.write("/dir", b"x", 0, 0, os.O_WRONLY))
    refused(errno.ENOENT, lambda: k.ops.read("/missing", 10, 0, 0))


# --- making and removing names ----------------------------------------------------------


def test_create_and_mkdir_need_a_directory_to_make_the_name_in(k: Kernel) -> None:
    other = k.other()
    other.write("file", b"x", author="someone")
    k.ops.mkdir("/dir", DIR | 0o750)
    assert other.stat("dir").mode == 0o750
    refused(errno.EEXIST, lambda: k.ops.mkdir("/dir", 0o700))
    refused(errno.EEXIST, lambda: k.ops.mkdir("/file", 0o700))
    refused(errno.ENOENT, lambda: k.ops.mkdir("/missing/dir", 0o700))
    refused(errno.ENOTDIR, lambda: k.ops.mkdir("/file/dir", 0o700))
    refused(errno.ENOTDIR, lambda: k.ops.create("/file/new", FILE | 0o600, CREATE))
    refused(errno.ENOENT, lambda: k.ops.create("/missing/new", FILE | 0o600, CREATE))
    assert tree(other) == {"dir": "dir", "file": "file"}


@pytest.mark.parametrize(
    "name",
    [
        "CON",  # a device name Windows reserves
        ".memfs-journal",  # memfs's own prefix
        "zero\u200bwidth",  # an invisible character
        "dots.",  # a trailing dot, which Windows drops
        "%2e%2e",  # ".." once percent-decoded
        "\uff0e\uff0e",  # ".." once NFKC-folded
        "bad\udcff",  # bytes that are not UTF-8, as libfuse hands them over
    ],
)
def test_names_the_gate_refuses_are_einval_and_nothing_is_made(k: Kernel, name: str) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    before = tree(other)
    for call in (
        lambda: k.ops.create("/" + name, FILE | 0o600, CREATE),
        lambda: k.ops.mkdir("/" + name, 0o700),
        lambda: k.ops.symlink("/" + name, "a.md"),
        lambda: k.ops.rename("/a.md", "/" + name),
    ):
        refused(errno.EINVAL, call)
    k.ops.shutdown()
    assert tree(other) == before


def test_a_name_past_the_gates_limits_is_enametoolong(k: Kernel) -> None:
    other = k.other()
    deep = "/" + "/".join(["d"] * 20)
    for i in range(1, 21):
        k.ops.mkdir("/" + "/".join(["d"] * i), 0o700)
    before = tree(other)
    refused(errno.ENAMETOOLONG, lambda: k.ops.create("/" + "n" * 256, FILE | 0o600, CREATE))
    refused(errno.ENAMETOOLONG, lambda: k.ops.mkdir(deep + "/one-too-deep", 0o700))
    refused(errno.ENAMETOOLONG, lambda: k.ops.symlink("/" + "n" * 256, "x"))
    assert tree(other) == before


def test_rmdir_refuses_a_directory_with_a_file_not_committed_yet(k: Kernel) -> None:
    other = k.other()
    k.ops.mkdir("/dir", 0o700)
    k.ops.create("/dir/pending.md", FILE | 0o600, CREATE)
    k.ops.write("/dir/pending.md", b"kept", 0, 0, os.O_WRONLY)
    refused(errno.ENOTEMPTY, lambda: k.ops.rmdir("/dir"))
    # The store decided with the pending file in view: it was committed, not lost.
    assert other.read("dir/pending.md")[0] == b"kept"
    other.write("file", b"x", author="someone")
    refused(errno.ENOTDIR, lambda: k.ops.rmdir("/file"))
    refused(errno.ENOENT, lambda: k.ops.rmdir("/missing"))
    k.ops.unlink("/dir/pending.md")
    k.ops.rmdir("/dir")
    assert tree(other) == {"file": "file"}


def test_a_file_created_and_removed_before_its_commit_never_reaches_the_store(
    k: Kernel,
) -> None:
    other = k.other()
    seq = other.last_seq()
    fh = k.ops.create("/4913", FILE | 0o600, CREATE)  # vim's probe
    k.ops.write("/4913", b"probe", 0, fh, os.O_WRONLY)
    k.ops.unlink("/4913")
    refused(errno.ENOENT, lambda: k.ops.getattr("/4913"))
    k.ops.shutdown()
    assert other.last_seq() == seq  # not even a change record


def test_unlink_removes_a_file_and_refuses_a_directory(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    other.mkdir("dir", author="someone")
    k.ops.unlink("/a.md")
    with pytest.raises(NotFound):
        other.stat("a.md")
    assert other.changes(since=other.last_seq() - 1)[0].kind == "delete"
    refused(errno.EISDIR, lambda: k.ops.unlink("/dir"))
    refused(errno.ENOENT, lambda: k.ops.unlink("/a.md"))


def test_a_created_file_unlinked_while_open_lives_on_in_its_handle(k: Kernel) -> None:
    other = k.other()
    fh = k.ops.create("/tmpfile", FILE | 0o600, CREATE)
    k.ops.write("/tmpfile", b"scratch", 0, fh, os.O_WRONLY)
    k.ops.unlink("/tmpfile")
    # libfuse (hard_remove) passes no path for it any more: the handle finds the data.
    assert k.ops.read(None, 100, 0, fh) == b"scratch"
    k.ops.write(None, b" space", 7, fh, os.O_WRONLY)
    k.ops.truncate(None, 9, fh)
    assert k.ops.getattr(None, fh)["st_size"] == 9
    assert k.ops.read(None, 100, 0, fh) == b"scratch s"
    k.ops.fsync(None, 0, fh)
    k.ops.release(None, fh)
    refused(errno.ESTALE, lambda: k.ops.read(None, 100, 0, fh))
    k.ops.shutdown()
    assert tree(other) == {}


def test_symlink_and_readlink(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    k.ops.symlink("/link", "../outside/never/followed")
    assert k.ops.readlink("/link") == "../outside/never/followed"
    assert other.stat("link").target == "../outside/never/followed"
    refused(errno.EEXIST, lambda: k.ops.symlink("/link", "elsewhere"))
    refused(errno.EINVAL, lambda: k.ops.readlink("/a.md"))
    refused(errno.ENOENT, lambda: k.ops.readlink("/missing"))


def test_hard_links_are_refused(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    refused(errno.EPERM, lambda: k.ops.link("/b.md", "/a.md"))
    assert tree(other) == {"a.md": "file"}


# --- rename ------------------------------------------------------------------------------


def test_rename_moves_a_file_with_its_pending_writes(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"one\n", author="someone")
    k.ops.write("/a.md", b"two\n", 4, 0, os.O_WRONLY)  # pending
    k.ops.rename("/a.md", "/b.md", 0)
    assert other.read("b.md")[0] == b"one\ntwo\n"
    with pytest.raises(NotFound):
        other.stat("a.md")
    assert k.ops.read("/b.md", 100, 0, 0) == b"one\ntwo\n"
    refused(errno.ENOENT, lambda: k.ops.rename("/b.md", "/missing/c.md", 0))
    refused(errno.ENOENT, lambda: k.ops.rename("/gone.md", "/c.md", 0))


def test_an_editors_save_is_a_temp_file_renamed_over_the_file(k: Kernel) -> None:
    other = k.other()
    other.write("notes.md", b"old\n", author="someone", mode=0o640)
    fh = k.ops.create("/.notes.md.swp", FILE | 0o600, CREATE)
    k.ops.write("/.notes.md.swp", b"new\n", 0, fh, os.O_WRONLY)
    k.ops.chmod("/.notes.md.swp", 0o640)
    k.ops.rename("/.notes.md.swp", "/notes.md", 0)
    data, entry = other.read("notes.md")
    assert (data, entry.mode) == (b"new\n", 0o640)
    assert [other.read_revision("notes.md", r.rev) for r in other.history("notes.md")] == [
        b"new\n",
        b"old\n",
    ]
    assert tree(other) == {"notes.md": "file"}


def save(k: Kernel, tmp: str, dst: str, data: bytes, *, fsync: bool = False) -> None:
    """A save through a temporary file, as sed -i or the memory tool's handler on a
    mount does it; the kernel looks the destination up before it renames."""
    with contextlib.suppress(OSError):
        k.ops.getattr(dst)
    fh = k.ops.create(tmp, FILE | 0o644, CREATE)
    k.ops.write(tmp, data, 0, fh, os.O_WRONLY)
    if fsync:
        k.ops.fsync(tmp, 0, fh)
    k.ops.rename(tmp, dst, 0)


def test_a_save_whose_temporary_file_never_reached_the_store_is_one_write(k: Kernel) -> None:
    other = k.other()
    other.mkdir("d", author="someone")
    other.write("d/notes.md", b"old\n", author="someone", mode=0o644)
    names(k, "/d")  # the directory's names are known: a new name needs no query
    before, seq = other.stat("d"), other.last_seq()
    save(k, "/d/.notes.md.tmp", "/d/notes.md", b"new\n")
    save(k, "/d/.new.md.tmp", "/d/new.md", b"fresh\n")
    # Nothing of the temporary files: one record per save, at the file saved.
    changes = [(c.kind, c.path, c.old_path) for c in other.changes(seq)]
    assert changes == [("modify", "d/notes.md", None), ("create", "d/new.md", None)]
    assert [other.read_revision("d/notes.md", r.rev) for r in other.history("d/notes.md")] == [
        b"new\n",
        b"old\n",
    ]
    assert other.read("d/new.md")[0] == b"fresh\n"
    assert tree(other) == {"d": "dir", "d/new.md": "file", "d/notes.md": "file"}
    # The directory's times moved, as a rename moves them.
    assert other.stat("d").mtime_ns > before.mtime_ns
    assert [name for name, _ in names(k, "/d")] == [".", "..", "new.md", "notes.md"]
    assert k.ops.read("/d/notes.md", 100, 0, 0) == b"new\n"


def test_a_save_that_a_write_cannot_stand_for_is_a_rename(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"old\n", author="someone", mode=0o600)  # not the new file's mode
    seq = other.last_seq()
    save(k, "/.a.tmp", "/a.md", b"new\n")
    save(k, "/.b.tmp", "/b.md", b"made\n", fsync=True)  # in the store before the rename
    kinds = [(c.kind, c.path) for c in other.changes(seq)]
    assert kinds == [
        ("create", ".a.tmp"),
        ("rename", "a.md"),
        ("create", ".b.tmp"),
        ("rename", "b.md"),
    ]
    assert (other.read("a.md")[0], other.stat("a.md").mode) == (b"new\n", 0o644)
    assert tree(other) == {"a.md": "file", "b.md": "file"}


def test_another_users_new_file_renamed_keeps_every_owner_as_it_is(k: Kernel) -> None:
    # pjdfstest rename/04.t: the directories were made by root and given away, the file
    # made by their new owner. A rename that is no save must leave the kernel seeing
    # each directory's owner as it is now (an early version put back an entry the
    # thread's previous change had left: the directory still root's, so EACCES).
    other = k.other()
    for d in ("/n1", "/n2"):
        k.ops.mkdir(d, 0o755)

    def give_away() -> None:  # on another FUSE thread, as the kernel may send it
        for d in ("/n1", "/n2"):
            k.ops.chown(d, 65534, 65534)

    thread = threading.Thread(target=give_away)
    thread.start()
    thread.join(10)
    k.ids = (65534, 65534)
    k.ops.create("/n1/a", FILE | 0o644, CREATE)
    k.ops.rename("/n1/a", "/n2/b", 0)
    for d in ("/n1", "/n2"):
        attrs = k.ops.getattr(d)
        assert (attrs["st_uid"], attrs["st_gid"]) == (65534, 65534), d
    entry = other.stat("n2/b")
    assert (entry.uid, entry.gid) == (65534, 65534)


def test_rsyncs_temporary_file_keeps_the_time_set_before_its_rename(k: Kernel) -> None:
    """rsync -a writes .name.XXXXXX, sets its mtime, then renames it over the name: one
    write, with that mtime."""
    other = k.other()
    other.write("notes.md", b"old\n", author="someone", mode=0o644)
    seq = other.last_seq()
    k.ops.getattr("/notes.md")  # the kernel looks the destination up before the rename
    k.ops.create("/.notes.md.Ab12Cd", FILE | 0o644, CREATE)
    k.ops.write("/.notes.md.Ab12Cd", b"new\n", 0, 0, os.O_WRONLY)
    k.ops.utimens("/.notes.md.Ab12Cd", (0, 1_500_000_000_000_000_000))
    k.ops.rename("/.notes.md.Ab12Cd", "/notes.md")
    assert [(c.kind, c.path) for c in other.changes(seq)] == [("modify", "notes.md")]
    data, entry = other.read("notes.md")
    assert (data, entry.mtime_ns) == (b"new\n", 1_500_000_000_000_000_000)


def test_rename_noreplace_refuses_an_existing_destination(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    other.write("b.md", b"b", author="someone")
    refused(errno.EEXIST, lambda: k.ops.rename("/a.md", "/b.md", RENAME_NOREPLACE))
    k.ops.create("/pending.md", FILE | 0o600, CREATE)  # exists, though not in the store
    refused(errno.EEXIST, lambda: k.ops.rename("/a.md", "/pending.md", RENAME_NOREPLACE))
    k.ops.rename("/a.md", "/c.md", RENAME_NOREPLACE)
    assert other.read("c.md")[0] == b"a" and other.read("b.md")[0] == b"b"


@pytest.mark.parametrize("flag", [RENAME_EXCHANGE, RENAME_WHITEOUT])
def test_rename_flags_the_store_cannot_honour_are_einval(k: Kernel, flag: int) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    other.write("b.md", b"b", author="someone")
    refused(errno.EINVAL, lambda: k.ops.rename("/a.md", "/b.md", flag))
    assert (other.read("a.md")[0], other.read("b.md")[0]) == (b"a", b"b")


def test_rename_of_a_directory_takes_what_is_below(k: Kernel) -> None:
    other = k.other()
    k.ops.mkdir("/dir", 0o700)
    k.ops.mkdir("/dir/sub", 0o700)
    k.ops.create("/dir/sub/a.md", FILE | 0o600, CREATE)
    k.ops.write("/dir/sub/a.md", b"deep", 0, 0, os.O_WRONLY)
    k.ops.getattr("/dir/sub")  # cached under its old name
    k.ops.rename("/dir", "/moved", 0)
    assert other.read("moved/sub/a.md")[0] == b"deep"
    assert k.ops.read("/moved/sub/a.md", 100, 0, 0) == b"deep"
    refused(errno.ENOENT, lambda: k.ops.getattr("/dir/sub"))
    refused(errno.EINVAL, lambda: k.ops.rename("/moved", "/moved/sub/inside", 0))
    k.ops.mkdir("/full", 0o700)
    k.ops.symlink("/full/x", "y")
    refused(errno.ENOTEMPTY, lambda: k.ops.rename("/moved", "/full", 0))
    assert other.read("moved/sub/a.md")[0] == b"deep"


# --- attributes --------------------------------------------------------------------------


def test_chmod_of_a_file_not_committed_goes_into_its_one_commit(k: Kernel) -> None:
    other = k.other()
    fh = k.ops.create("/a.md", FILE | 0o600, CREATE)
    k.ops.write("/a.md", b"a", 0, fh, os.O_WRONLY)
    seq = other.last_seq()
    k.ops.chmod("/a.md", FILE | 0o644)
    assert other.last_seq() == seq  # nothing in the store yet
    assert stat.S_IMODE(k.ops.getattr("/a.md")["st_mode"]) == 0o644
    k.ops.fsync("/a.md", 0, fh)
    assert other.stat("a.md").mode == 0o644
    assert [c.kind for c in other.changes(since=seq)] == ["create"]


def test_chmod_and_chown_of_a_stored_file_change_no_content(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    k.ops.write("/a.md", b"b", 1, 0, os.O_WRONLY)  # pending: a mode change need not commit it
    k.ops.chmod("/a.md", FILE | 0o604)
    assert other.read("a.md")[0] == b"a"
    k.ops.chown("/a.md", 1234, -1)  # -1: leave the group as it is
    entry = other.stat("a.md")
    assert (entry.mode, entry.uid, entry.gid) == (0o604, 1234, None)
    assert other.read("a.md")[0] == b"ab"  # chown commits the pending write first
    attrs = k.ops.getattr("/a.md")
    assert (attrs["st_uid"], attrs["st_gid"]) == (1234, os.getgid())


def test_chown_of_a_new_file_joins_its_commit_and_to_its_owner_changes_nothing(
    k: Kernel,
) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    seq = other.last_seq()
    # Seen before the write: seen after, it lands the pending write at once (commit_soon).
    assert k.ops.show_upto(seq, 5)
    k.ops.write("/a.md", b"b", 1, 0, os.O_WRONLY)
    k.ops.chown("/a.md", os.getuid(), os.getgid())  # tar -x as its user: the owner it has
    assert other.last_seq() == seq  # no commit forced, no attribute change
    k.ops.create("/new.md", FILE | 0o600, CREATE)
    k.ops.write("/new.md", b"new", 0, 0, os.O_WRONLY)
    k.ops.chown("/new.md", 1234, -1)
    assert other.last_seq() == seq  # the owner waits for the content's commit
    attrs = k.ops.getattr("/new.md")
    assert (attrs["st_uid"], attrs["st_gid"]) == (1234, os.getgid())
    k.ops.shutdown()
    data, entry = other.read("new.md")
    assert (data, entry.uid, entry.gid) == (b"new", 1234, None)
    assert other.read("a.md")[0] == b"ab"


def test_another_users_new_entries_are_theirs(k: Kernel) -> None:
    """With --allow-other the caller's ids come from the request's context."""
    other = k.other()
    k.ids = (1234, 5678)
    k.ops.mkdir("/theirs", 0o700)
    k.ops.create("/theirs/a.md", FILE | 0o600, CREATE)
    k.ops.symlink("/theirs/link", "a.md")
    k.ops.shutdown()
    for path in ("theirs", "theirs/a.md", "theirs/link"):
        entry = other.stat(path)
        assert (entry.uid, entry.gid) == (1234, 5678), path


def test_utimens_sets_the_mtime_and_an_access_time_alone_changes_nothing(k: Kernel) -> None:
    other = k.other()
    other.write("a.md", b"a", author="someone")
    k.ops.utimens("/a.md", (0, 1_500_000_000_123_456_789))
    assert other.stat("a.md").mtime_ns == 1_500_000_000_123_456_789
    assert k.ops.getattr("/a.md")["st_mtime"] == 1_500_000_000_123_456_789
    seq = other.last_seq()
    k.ops.utimens("/a.md", (1_600_000_000_000_000_000, None))  # UTIME_OMIT for mtime
    assert other.last_seq() == seq


def test_a_directorys_mtime_set_after_writing_its_files_stays(k: Kernel) -> None:
    """rsync -a writes a directory's files, then sets its mtime: a file committed later
    must not move it."""
    other = k.other()
    k.ops.mkdir("/dir", 0o700)
    k.ops.create("/dir/a.md", FILE | 0o600, CREATE)
    k.ops.write("/dir/a.md", b"a", 0, 0, os.O_WRONLY)
    k.ops.utimens("/dir", (0, 1_500_000_000_000_000_000))
    k.ops.shutdown()
    assert other.read("dir/a.md")[0] == b"a"
    assert other.stat("dir").mtime_ns == 1_500_000_000_000_000_000


def test_statfs_counts_the_tree(k: Kernel) -> None:
    other = k.other()
    other.mkdir("dir", author="someone")
    other.write("dir/a.md", b"a" * 5000, author="someone")
    st = k.ops.statfs("/")
    assert st["f_namemax"] == 255
    assert st["f_files"] - st["f_ffree"] == 2  # one file and one directory
    assert st["f_blocks"] - st["f_bfree"] == 2  # 5,000 bytes in 4 KiB blocks
    assert st["f_bavail"] == st["f_bfree"] > 0
