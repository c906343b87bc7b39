"""Real WebDAV clients against a real ``memfs webdav``: rclone copies a tree in and out
with every byte compared; davfs2 (the kernel-mounted client) edits through it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfs.store import open_store
from tests.fixtures.waiting import wait_for
from tests.fixtures.webdav import MEMFS, DavProcess

RCLONE = shutil.which("rclone")
MOUNT_DAVFS = shutil.which("mount.davfs") or (
    "/usr/sbin/mount.davfs" if Path("/usr/sbin/mount.davfs").exists() else None
)

Server = Callable[..., DavProcess]


def _tree(root: Path) -> None:
    for i in range(20):
        where = root / f"dir{i % 4}" / ("deep" if i % 2 else "")
        where.mkdir(parents=True, exist_ok=True)
        (where / f"note{i}.md").write_text(f"note {i}\n" + "line\n" * i)
    (root / "bin.dat").write_bytes(bytes(range(256)) * 64)


def _rclone(dav: DavProcess, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    assert RCLONE is not None
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "RCLONE_CONFIG": str(home / "rclone.conf"),
        "RCLONE_CONFIG_DAV_TYPE": "webdav",
        "RCLONE_CONFIG_DAV_URL": dav.url + "/",
        "RCLONE_CONFIG_DAV_VENDOR": "other",
    }
    return subprocess.run(
        [RCLONE, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_rclone_copies_a_tree_in_and_out_byte_for_byte(
    webdav_server: Server, tmp_path: Path
) -> None:
    if RCLONE is None:
        pytest.fail("rclone is missing: make system-deps installs Debian's rclone")
    store_url = str(tmp_path / "memory.db")
    source, back = tmp_path / "source", tmp_path / "back"
    _tree(source)
    dav = webdav_server(store_url)
    for args in (
        ("copy", str(source), "dav:tree"),
        ("check", "--download", str(source), "dav:tree"),
        ("copy", "dav:tree", str(back)),
    ):
        done = _rclone(dav, *args, home=tmp_path)
        assert done.returncode == 0, done.stderr
    assert subprocess.run(["diff", "-r", str(source), str(back)]).returncode == 0
    with open_store(store_url) as store:
        assert store.read("tree/dir1/deep/note1.md")[0] == b"note 1\nline\n"
        authors = {r.author for r in store.history("tree/bin.dat")}
    assert len(authors) == 1 and authors.pop().startswith("webdav:")


@pytest.fixture
def davfs_mount(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    mounted: list[Path] = []
    caches: list[Path] = []

    def mount(url: str) -> Path:
        if MOUNT_DAVFS is None or os.geteuid() != 0:
            if os.geteuid() != 0:
                pytest.skip("mount.davfs needs root here (CI runs as root)")
            pytest.fail("davfs2 is missing: make system-deps installs Debian's davfs2")
        # mount.davfs drops to its own user to make its cache: a directory that user
        # can reach (tmp_path's parents are private to root).
        cache = Path(tempfile.mkdtemp(prefix="memfs-davfs-"))
        caches.append(cache)
        cache.chmod(0o777)
        secrets = tmp_path / "davfs-secrets"
        secrets.write_text(f"{url} tester nothing\n")
        secrets.chmod(0o600)
        conf = tmp_path / "davfs.conf"
        conf.write_text(f"secrets {secrets}\ncache_dir {cache}\ndelay_upload 0\nuse_locks 1\n")
        point = tmp_path / "davmnt"
        point.mkdir()
        done = subprocess.run(
            [MOUNT_DAVFS, url, str(point), "-o", f"conf={conf}"],
            stdin=subprocess.DEVNULL,
            timeout=60,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], capture_output=True, timeout=120, check=False)
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)


def test_davfs2_edits_land_as_operations(
    webdav_server: Server, davfs_mount: Callable[[str], Path], tmp_path: Path
) -> None:
    store_url = str(tmp_path / "memory.db")
    dav = webdav_server(store_url)
    point = davfs_mount(dav.url + "/")
    (point / "a.md").write_text("one\ntwo\n")
    subprocess.run(["sed", "-i", "s/two/TWO/", str(point / "a.md")], check=True, timeout=60)
    os.rename(point / "a.md", point / "b.md")
    shutil.copyfile(tmp_path / "davfs.conf", point / "copied.conf")
    (point / "sub").mkdir()
    (point / "sub" / "c.md").write_text("c\n")
    try:
        os.listdir(point)
    except OSError as exc:
        # davfs2 1.6.1 answers every readdir with EINVAL on some kernels (6.18 here),
        # even of an empty directory and against other servers (rclone serve webdav
        # too): rm -rf, cp -r, tar and git need it.
        readdir = f"readdir fails ({exc.strerror})"
    else:
        readdir = ""
    subprocess.run(["umount", str(point)], check=True, timeout=120, capture_output=True)
    with open_store(store_url) as store:
        assert store.read("b.md")[0] == b"one\nTWO\n"
        assert store.read("sub/c.md")[0] == b"c\n"
        assert "a.md" not in {e.name for e in store.listdir("")}
    log = subprocess.run(
        [MEMFS, "log", "--store", store_url], capture_output=True, text=True, timeout=60
    )
    assert log.returncode == 0 and "webdav:" in log.stdout, log.stdout + log.stderr
    if readdir:
        pytest.xfail(f"davfs2 on this kernel: {readdir}; the tree workflows were not run")


@pytest.fixture
def rclone_mount(tmp_path: Path) -> Iterator[Callable[[DavProcess], Path]]:
    """The server mounted by rclone's FUSE client, the Linux WebDAV mount that lists
    directories on this kernel (davfs2 does not: see above); unmounted in the end."""
    started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def mount(dav: DavProcess) -> Path:
        if RCLONE is None:
            pytest.fail("rclone is missing: make system-deps installs Debian's rclone")
        point = tmp_path / "rclone-mnt"
        point.mkdir()
        # Writes go to the server when the file is closed (write-back 0 s), and what
        # the server changed is listed again after a second.
        proc = subprocess.Popen(
            [RCLONE, "mount", ":webdav:", str(point), "--webdav-url", dav.url + "/",
             "--vfs-cache-mode", "writes", "--vfs-write-back", "0s", "--dir-cache-time",
             "1s", "--cache-dir", str(tmp_path / "rclone-cache"), "--config", "/dev/null"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started.append((proc, point))
        wait_for(lambda: os.path.ismount(point), 30, what="rclone mount")
        return point

    yield mount
    for proc, point in started:
        subprocess.run(["fusermount3", "-u", str(point)], capture_output=True, check=False)
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
        subprocess.run(["fusermount3", "-uz", str(point)], capture_output=True, check=False)


def test_tree_workflows_through_a_mounted_client_land_as_operations(
    webdav_server: Server, rclone_mount: Callable[[DavProcess], Path], tmp_path: Path
) -> None:
    # Not sed -i nor git: rclone 1.60 uploads a file renamed while its upload is queued
    # under its old name and sends no MOVE (sed's temporary file stays as it is), and
    # keeps a renamed-away lock file in its cache (git's next O_EXCL create of
    # index.lock fails with EEXIST). davfs2 covers sed -i above.
    store_url = str(tmp_path / "memory.db")
    dav = webdav_server(store_url)
    point = rclone_mount(dav)
    source = tmp_path / "source"
    _tree(source)

    def run(*argv: str, cwd: Path = point) -> None:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{argv}: {done.stderr}"

    run("cp", "-r", str(source), "tree")
    run("mv", "tree/dir0", "tree/moved")
    with open_store(store_url) as store:
        # rclone uploads a closed file in the background and then takes the server's
        # times: tar must read settled files ("file changed as we read it" otherwise).
        wait_for(
            lambda: {"tree/bin.dat", "tree/moved/note0.md"} <= {e.path for e in store.walk("")},
            60,
            what="the copy's uploads",
        )
    # rclone may still move a file's time under tar when it takes the server's: tar's
    # warning and exit 1 for that alone; the bytes are compared after the extraction.
    packed = subprocess.run(
        ["tar", "-cf", str(tmp_path / "out.tar"), "tree"],
        cwd=point,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert packed.returncode == 0 or all(
        "file changed as we read it" in line for line in packed.stderr.splitlines()
    ), packed.stderr
    run("mkdir", "untarred")
    run("tar", "-xf", str(tmp_path / "out.tar"), "-C", "untarred")
    run("rm", "-rf", "tree/dir2")
    with open_store(store_url) as store:

        def landed() -> bool:
            # rclone uploads a closed file in the background: wait for the last one.
            return "untarred/tree/bin.dat" in {e.path for e in store.walk("")}

        wait_for(landed, 60, what="the client's uploads")
        assert store.read("tree/moved/note0.md")[0] == b"note 0\n"
        assert store.read("untarred/tree/bin.dat")[0] == bytes(range(256)) * 64
        names = {e.path for e in store.walk("")}
        assert "tree/dir0/note0.md" not in names and not any(
            n.startswith("tree/dir2") for n in names
        )
    log = subprocess.run(
        [MEMFS, "log", "--store", store_url], capture_output=True, text=True, timeout=60
    )
    assert log.returncode == 0, log.stderr
    assert "webdav:" in log.stdout and "(DELETE /tree/dir2" in log.stdout, log.stdout
