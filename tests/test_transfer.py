"""``memfs export`` and ``memfs import``: round trips through every form (CliRunner on
exact output, once through the installed command), the SDK tool's folder, hostile
sources refused with nothing written, caps, conflicts and 10,000 files."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfs.cli import main
from memfs.history.author import user_name
from memfs.store import Store, open_store

AUTHOR = f"memfs import (user {user_name()})"
T1 = 1_577_934_245_123_456_789  # 2020-01-02T03:04:05.123456789Z
T2 = 1_600_000_000_987_654_321

# Names the path gate allows that trip up naive tools.
ODD = {
    "with space.md": b"spaces\n",
    ".leading-dot": b"hidden\n",
    "ünïcödé 日本語.md": "unicode ✓\n".encode(),
    'quote\'s "and" #hash & 100%.txt': b"punctuation\n",
    "emoji 🎉/deep/er/file.bin": bytes(range(256)) * 4,
    "empty-file": b"",
    "dir with spaces/.dot dir/note.md": b"nested\n",
}
EMPTY_DIRS = ["empty", "dir with spaces/also empty"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def snapshot(store: Store) -> dict[str, tuple[object, ...]]:
    """Everything a round trip must keep, per path."""
    out: dict[str, tuple[object, ...]] = {}
    for entry in store.walk():
        data = store.read(entry.path)[0] if entry.is_file else None
        out[entry.path] = (entry.kind, entry.mode, entry.mtime_ns, data)
    return out


def fill(store: Store) -> None:
    for path, data in ODD.items():
        store.write(path, data, author="alice", parents=True, mode=0o640)
        store.set_attrs(path, author="alice", mtime_ns=T1)
    for path in EMPTY_DIRS:
        store.mkdir(path, author="alice", parents=True, mode=0o750)
    for entry in list(store.walk()):
        if entry.is_dir:
            store.set_attrs(entry.path, author="alice", mtime_ns=T2)


@pytest.fixture
def src_db(tmp_path: Path) -> Path:
    db = tmp_path / "src.db"
    with open_store(db) as store:
        fill(store)
    return db


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("out", "directory"), ("out.tar", "tar"), ("out.tar.gz", "tar.gz"), ("out.tgz", "tar.gz"),
     ("out.zip", "zip")],
)  # fmt: skip
def test_round_trip_keeps_bytes_names_modes_mtimes_and_empty_dirs(
    tmp_path: Path, src_db: Path, name: str, fmt: str
) -> None:
    dest, dst_db = tmp_path / name, tmp_path / "dst.db"
    exported = run("export", str(dest), "--store", str(src_db))
    assert (exported.exit_code, exported.output) == (
        0,
        f"exported 7 files, 7 directories (1,069 bytes) to {dest} ({fmt})\n",
    )
    imported = run("import", str(dest), "--store", str(dst_db))
    kind = "directory" if fmt == "directory" else fmt
    assert (imported.exit_code, imported.output) == (
        0,
        f"Created a new store at {dst_db}.\n"  # on standard error
        f"imported 7 files, 7 new directories (1,069 bytes) from {dest} ({kind}) into {dst_db}\n",
    )
    with open_store(src_db) as src, open_store(dst_db) as dst:
        assert snapshot(dst) == snapshot(src)
        assert {r.author for r in dst.history("with space.md")} == {AUTHOR}
    again = run("import", str(dest), "--store", str(dst_db))
    assert again.output.splitlines()[1] == "replaced 0, already there unchanged 7"


def test_a_directory_export_is_plain_files_with_their_mtimes(tmp_path: Path, src_db: Path) -> None:
    dest = tmp_path / "plain"
    dest.mkdir()  # an empty directory is taken over
    assert run("export", str(dest), "--store", str(src_db)).exit_code == 0
    for path, data in ODD.items():
        st = (dest / path).stat()
        assert (dest / path).read_bytes() == data
        assert (st.st_mtime_ns, st.st_mode & 0o777) == (T1, 0o640)
    assert (dest / "empty").stat().st_mtime_ns == T2
    assert list((dest / "dir with spaces/also empty").iterdir()) == []


def test_export_refuses_a_destination_in_the_way(tmp_path: Path, src_db: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    (tmp_path / "t.tar").write_text("mine")
    full = run("export", str(tmp_path / "full"), "--store", str(src_db))
    assert (full.exit_code, full.output) == (
        1,
        f"Error: cannot export to {tmp_path / 'full'}: the directory is not empty\n",
    )
    tar = run("export", str(tmp_path / "t.tar"), "--store", str(src_db))
    assert tar.output == (
        f"Error: cannot export to {tmp_path / 't.tar'}: it exists (memfs never overwrites one)\n"
    )
    assert (tmp_path / "t.tar").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "src.db", "t.tar"]


def test_prefix_exports_a_subtree_and_imports_below_a_directory(
    tmp_path: Path, src_db: Path
) -> None:
    dest, dst_db = tmp_path / "sub.zip", tmp_path / "dst.db"
    assert (
        run("export", str(dest), "--store", str(src_db), "--prefix", "dir with spaces").exit_code
        == 0
    )
    result = run("import", str(dest), "--store", str(dst_db), "--prefix", "/memories/old/x")
    assert result.exit_code == 0, result.output
    with open_store(dst_db) as dst:
        assert dst.read("old/x/.dot dir/note.md")[0] == b"nested\n"
        assert dst.stat("old/x/also empty").is_dir


def test_the_installed_command_round_trips_a_tgz(tmp_path: Path, src_db: Path) -> None:
    memfs = Path(sys.executable).parent / "memfs"
    dest, dst_db = tmp_path / "o.tgz", tmp_path / "dst.db"
    for args, said in (
        (["export", str(dest), "--store", str(src_db)], ""),
        (["import", str(dest), "--store", str(dst_db)], f"Created a new store at {dst_db}.\n"),
    ):
        done = subprocess.run([memfs, *args], capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stderr) == (0, said), done.stdout
    assert done.stdout.startswith("imported 7 files, 7 new directories")
    with open_store(src_db) as src, open_store(dst_db) as dst:
        assert snapshot(dst) == snapshot(src)


# --- the SDK's folder ------------------------------------------------------------------


def sdk_folder(base: Path) -> None:
    from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

    tool = BetaLocalFilesystemMemoryTool(str(base))
    for path, text in (("/memories/prefs.md", "coffee: black\n"),
                       ("/memories/projects/memfs notes.md", "ship it\n")):  # fmt: skip
        tool.call({"command": "create", "path": path, "file_text": text})
    tool.call({"command": "str_replace", "path": "/memories/prefs.md",
               "old_str": "black", "new_str": "black, no sugar"})  # fmt: skip
    # What the tool's atomic write leaves when it dies before its rename.
    (base / "memories" / ".tmp-4242-0f8fad5b-d9cb-469f-a165-70867728950e").write_text("half")


@pytest.mark.parametrize("given", ["base", "memories"])
def test_the_sdk_tools_folder_moves_over_in_one_command(tmp_path: Path, given: str) -> None:
    base, db = tmp_path / "memory", tmp_path / "m.db"
    sdk_folder(base)
    src = base if given == "base" else base / "memories"
    result = run("import", str(src), "--store", str(db))
    assert (result.exit_code, result.output) == (
        0,
        f"Created a new store at {db}.\n"  # on standard error
        f"imported 2 files, 1 new directory (32 bytes) from {src} (SDK memory folder)"
        f" into {db}\n"
        "skipped 1 temporary file the SDK's tool left behind:"
        " .tmp-4242-0f8fad5b-d9cb-469f-a165-70867728950e\n",
    )
    with open_store(db) as store:
        assert [e.path for e in store.walk()] == [
            "prefs.md", "projects", "projects/memfs notes.md"
        ]  # fmt: skip
        assert store.read("prefs.md")[0] == b"coffee: black, no sugar\n"
        mtime = (base / "memories" / "prefs.md").stat().st_mtime_ns
        assert store.stat("prefs.md").mtime_ns == mtime


# --- refused sources -------------------------------------------------------------------


def tar_with(path: Path, *members: tuple[str, bytes, str]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            data = b"evil" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def assert_refused(result: Result, db: Path, problems: list[str]) -> None:
    n = len(problems)
    assert result.exit_code == 1
    assert result.stderr == "".join(f"  {p}\n" for p in problems) + (
        f"Error: import refused, nothing was imported: {n} entr{'y' if n == 1 else 'ies'}"
        " memfs would refuse\n"
    )
    with open_store(db) as store:
        assert (store.last_seq(), list(store.walk())) == (0, [])


def test_a_hostile_tar_is_refused_whole_and_writes_nothing(tmp_path: Path) -> None:
    archive, db = tmp_path / "evil.tar", tmp_path / "m.db"
    tar_with(
        archive,
        ("fine.md", tarfile.REGTYPE, ""),
        ("../escape.md", tarfile.REGTYPE, ""),
        ("/etc/abs.md", tarfile.REGTYPE, ""),
        ("a/../../up.md", tarfile.REGTYPE, ""),
        ("link", tarfile.SYMTYPE, "/etc/passwd"),
        ("hard", tarfile.LNKTYPE, "fine.md"),
        ("fifo", tarfile.FIFOTYPE, ""),
        ("fine.md", tarfile.REGTYPE, ""),
        (".memfs-journal", tarfile.REGTYPE, ""),
        ("con.txt", tarfile.REGTYPE, ""),
        ("bad\x01name", tarfile.REGTYPE, ""),
    )
    result = run("import", str(archive), "--store", str(db))
    gate = "the path gate refuses it:"
    assert_refused(result, db, [
        "../escape.md: a '..' segment would climb out of the tree",
        "/etc/abs.md: an absolute name (an archive must name paths inside it)",
        "a/../../up.md: a '..' segment would climb out of the tree",
        "link: a link (import never follows links)",
        "hard: a link (import never follows links)",
        "fifo: not a regular file or directory",
        "fine.md: the archive holds it twice",
        f".memfs-journal: {gate} names starting with '.memfs' are reserved for memfs",
        f"con.txt: {gate} 'con.txt' is a reserved device name",
        f"bad\\x01name: {gate} it contains the control or invisible character U+0001",
    ])  # fmt: skip
    assert not (tmp_path.parent / "escape.md").exists()


def test_a_hostile_zip_is_refused(tmp_path: Path) -> None:
    archive, db = tmp_path / "evil.zip", tmp_path / "m.db"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok.md", b"ok")
        zf.writestr("..\\win.md", b"x")
        zf.writestr("../up.md", b"x")
        link = zipfile.ZipInfo("ln")
        link.create_system, link.external_attr = 3, (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    result = run("import", str(archive), "--store", str(db))
    assert_refused(result, db, [
        "..\\win.md: the path gate refuses it: it contains a backslash",
        "../up.md: a '..' segment would climb out of the tree",
        "ln: a link (import never follows links)",
    ])  # fmt: skip


def test_a_directory_with_links_out_is_refused_never_followed(tmp_path: Path) -> None:
    src, db = tmp_path / "src", tmp_path / "m.db"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "ok.md").write_text("ok")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key").write_text("hunter2")
    (src / "out").symlink_to(tmp_path / "secret")
    (src / "sub" / "passwd").symlink_to("/etc/passwd")
    os.mkfifo(src / "pipe")
    (src / "tail.").write_text("x")
    result = run("import", str(src), "--store", str(db))
    assert_refused(result, db, [
        "out: a link (import never follows links)",
        "pipe: not a regular file or directory",
        "sub/passwd: a link (import never follows links)",
        "tail.: the path gate refuses it: a name cannot end with a space or a dot",
    ])  # fmt: skip


def test_an_import_past_a_cap_is_refused_whole(tmp_path: Path) -> None:
    src, db = tmp_path / "src", tmp_path / "m.db"
    src.mkdir()
    for i in range(5):
        (src / f"f{i}.md").write_text("x")
    result = run("import", str(src), "--store", f"sqlite://{db}?max_files=3")
    assert (result.exit_code, result.output) == (
        1,
        "Error: import refused, nothing was imported: creating 'f3.md' would make 4 files;"
        " this store's limit is 3 files\n",
    )
    with open_store(db) as store:
        assert (store.usage().files, store.last_seq()) == (0, 0)


def test_conflicts_are_refused_and_overwrite_makes_new_revisions(tmp_path: Path) -> None:
    src, db = tmp_path / "src", tmp_path / "m.db"
    src.mkdir()
    (src / "a.md").write_text("new a")
    (src / "b.md").write_text("same b")
    (src / "c.md").write_text("new c")
    with open_store(db) as store:
        store.write("a.md", b"old a", author="alice")
        store.write("b.md", b"same b", author="alice")
        seq = store.last_seq()
    refused = run("import", str(src), "--store", str(db))
    assert (refused.exit_code, refused.stderr) == (1, (
        "  a.md: 'a.md' exists with other content (--overwrite replaces)\n"
        "Error: import refused, nothing was imported: 1 entry memfs would refuse\n"
    ))  # fmt: skip
    with open_store(db) as store:
        assert store.last_seq() == seq
    done = run("import", str(src), "--store", str(db), "--overwrite")
    assert done.output == (
        f"imported 2 files, 0 new directories (10 bytes) from {src} (directory) into {db}\n"
        "replaced 1, already there unchanged 1\n"
    )
    with open_store(db) as store:
        assert [(r.author, store.read_revision("a.md", r.rev)) for r in store.history("a.md")] == [
            (AUTHOR, b"new a"),
            ("alice", b"old a"),
        ]
        assert [r.author for r in store.history("b.md")] == ["alice"]


def test_ten_thousand_files_round_trip(tmp_path: Path) -> None:
    src, db, back = tmp_path / "src", tmp_path / "m.db", tmp_path / "m2.db"
    for d in range(100):
        (src / f"dir {d:02d}").mkdir(parents=True)
        for f in range(100):
            (src / f"dir {d:02d}" / f"ü note {f:03d}.md").write_bytes(
                b"%05d\n" % (d * 100 + f) * 300
            )
    result = run("import", str(src), "--store", str(db), "--quiet")
    assert result.stdout.startswith("imported 10,000 files, 100 new directories (18,000,000 bytes)")
    assert run("export", str(tmp_path / "all.tgz"), "--store", str(db)).exit_code == 0
    assert run("import", str(tmp_path / "all.tgz"), "--store", str(back)).exit_code == 0
    with open_store(db) as one, open_store(back) as two:
        assert snapshot(one) == snapshot(two)
        assert (
            two.stat("dir 42/ü note 007.md").mtime_ns
            == (src / "dir 42" / "ü note 007.md").stat().st_mtime_ns
        )


def test_an_import_is_one_operation_of_one_change_per_entry(tmp_path: Path) -> None:
    archive, db = tmp_path / "a.tar", tmp_path / "m.db"
    with tarfile.open(archive, "w") as tar:
        for name, data in (("d/", None), ("d/x.md", b"x"), ("top.md", b"top")):
            info = tarfile.TarInfo(name.rstrip("/"))
            info.mtime = T2 // 10**9
            if data is None:
                info.type = tarfile.DIRTYPE
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data or b""))
    assert run("import", str(archive), "--store", str(db)).exit_code == 0
    with open_store(db) as store:
        # The archive's times go on with the content: no attribute change per file.
        assert [(c.kind, c.path) for c in store.changes()] == [
            ("mkdir", "d"),
            ("create", "d/x.md"),
            ("create", "top.md"),
            ("attr", "d"),
        ]
        assert len(store.operations()) == 1
        assert {store.stat(p).mtime_ns for p in ("d", "d/x.md", "top.md")} == {T2 // 10**9 * 10**9}


def test_a_file_then_a_directory_of_the_same_name_is_refused(tmp_path: Path) -> None:
    archive, db = tmp_path / "a.tar", tmp_path / "m.db"
    tar_with(archive, ("a", tarfile.REGTYPE, ""), ("a/b.md", tarfile.REGTYPE, ""))
    assert_refused(
        run("import", str(archive), "--store", str(db)),
        db,
        ["a: the store has a file where a directory goes"],
    )
