"""Credentials are never shown (#17.4): a password in a store URL is not printed by
``memfs mount`` or ``memfs status``, is not on the daemon's command line, and is only in
files its owner can read (state directory 0700, records, logs and journal labels
0600); libpq's own ways to give a password work: ``PGPASSWORD``, ``PGPASSFILE``
(``~/.pgpass``) and service files. Against the suite's PostgreSQL cluster, through a
real FUSE mount and the installed ``memfs`` command."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memfs.mount import state
from memfs.private import private_dir, write_private
from tests.fixtures.mount import require_fuse
from tests.fixtures.postgres import DATABASE, PASSWORD, PASSWORD_USER, PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))


def memfs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _url(cluster: PgCluster, password: str | None, tree: str) -> str:
    auth = PASSWORD_USER if password is None else f"{PASSWORD_USER}:{password}"
    return f"postgresql://{auth}@/{DATABASE}?host={cluster.socket_dir}&tree={tree}"


def test_a_mount_never_shows_its_password(
    pg_cluster: PgCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_fuse()
    state_dir = tmp_path / "state"  # made by memfs: its mode is memfs's choice
    monkeypatch.setenv(state.STATE_DIR_ENV, str(state_dir))
    url = _url(pg_cluster, PASSWORD, "creds")
    mnt = tmp_path / "mnt"
    umask = os.umask(0o022)  # a common umask: files would be 0644 unless memfs says otherwise
    mounted = memfs("mount", str(mnt), "--store", url)
    os.umask(umask)
    try:
        assert mounted.returncode == 0, mounted.stderr
        assert PASSWORD not in mounted.stdout + mounted.stderr
        assert f"postgresql://{PASSWORD_USER}:***@/{DATABASE}" in mounted.stdout
        (record,) = state.records()
        cmdline = Path(f"/proc/{record.pid}/cmdline").read_bytes().decode()
        assert PASSWORD not in cmdline and "postgresql" not in cmdline
        (mnt / "note.md").write_text("kept\n")
        status = memfs("status")
        assert status.returncode == 0 and PASSWORD not in status.stdout + status.stderr
        assert _mode(state_dir) == 0o700
        files = [p for p in state_dir.rglob("*") if p.is_file()]
        assert files and {_mode(p) for p in files} == {0o600}, {str(p): _mode(p) for p in files}
        assert {_mode(p) for p in state_dir.rglob("*") if p.is_dir()} <= {0o700}
    finally:
        stopped = memfs("umount", str(mnt))
    assert stopped.returncode == 0, stopped.stderr
    assert PASSWORD not in stopped.stdout + stopped.stderr


def test_a_state_directory_left_open_is_tightened(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    private_dir(loose)
    assert _mode(loose) == 0o700
    private_dir(tmp_path / "a" / "b")
    assert (_mode(tmp_path / "a"), _mode(tmp_path / "a" / "b")) == (0o700, 0o700)
    write_private(loose / "r.json", "{}")
    assert _mode(loose / "r.json") == 0o600


def test_pgpassword_is_libpqs_to_use(pg_cluster: PgCluster) -> None:
    url = _url(pg_cluster, None, "via-env")
    without = memfs("trees", "--store", url)
    assert without.returncode == 1 and without.stderr.count("\n") == 1
    assert "Traceback" not in without.stderr
    done = memfs("trees", "--store", url, env={"PGPASSWORD": PASSWORD})
    assert done.returncode == 0, done.stderr


def test_a_password_file_is_libpqs_to_use(pg_cluster: PgCluster, tmp_path: Path) -> None:
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:{DATABASE}:{PASSWORD_USER}:{PASSWORD}\n")
    passfile.chmod(0o600)  # libpq ignores a password file others can read
    done = memfs("trees", "--store", _url(pg_cluster, None, "via-file"),
                 env={"PGPASSFILE": str(passfile)})  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_service_file_is_libpqs_to_use(pg_cluster: PgCluster, tmp_path: Path) -> None:
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[memfs-team]\nhost={pg_cluster.socket_dir}\ndbname={DATABASE}\n"
        f"user={PASSWORD_USER}\npassword={PASSWORD}\n"
    )
    services.chmod(0o600)
    url = "postgresql:///?service=memfs-team&tree=via-service"
    done = memfs("trees", "--store", url, env={"PGSERVICEFILE": str(services)})
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout
