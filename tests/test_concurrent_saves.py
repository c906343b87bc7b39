"""Two mounts of one store, written at once as people and agents write: every save keeps
both writers' changes.

- Appenders that start before the file exists (``>>``, a logger: O_APPEND|O_CREAT, one
  line, close, in a loop) on two or three mounts, one or two processes a mount, and one
  process writing through two mounts: every acknowledged line is there exactly once.
- Whole-file saves (read, think, write back whole, as every editor and agent tool
  saves; also through a temporary file renamed over the file) made on two mounts from
  the same revision: a line each adds at a different place survives; a line both
  rewrite is a conflict, the save lands and the other's content is kept as a copy
  that ``memfs status`` names.
- An open file reads the revision it opened whole while another mount renames a new
  content over it; a ``sed -i`` on one mount racing the memory tool's ``str_replace``
  on the other ends with both edits, or one kept as a conflict copy, never a doubled
  line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.mount import MountHandle, wait_for
from tests.fixtures.postgres import PgCluster

MEMFS = str(Path(sys.executable).with_name("memfs"))
MakeMount = Callable[..., MountHandle]

# Each appender runs this long: enough for thousands of lines and many commits racing.
APPEND_SECONDS = 1.5

APPENDER = textwrap.dedent(
    """
    import os, sys, time
    tag, seconds, paths = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        fd = os.open(paths[n % len(paths)], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{tag} {n}\\n".encode())
        finally:
            os.close(fd)
        n += 1
    print(n)
    """
)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str | None:
    """The store the mounts share: None for a fresh SQLite file, else a fresh tree in
    the suite's PostgreSQL cluster (two mounts there are two hosts' daemons)."""
    if request.param == "sqlite":
        return None
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.url(f"saves-{uuid.uuid4().hex[:8]}")


def mounts(mount_factory: MakeMount, count: int, url: str | None = None) -> list[MountHandle]:
    first = mount_factory("m0", store_url=url)
    return [first] + [mount_factory(f"m{i}", store_url=first.store_url) for i in range(1, count)]


def lines_in_store(m: MountHandle, path: str) -> list[str]:
    return m.store().read(path)[0].decode().splitlines()


@pytest.mark.parametrize(
    ("n_mounts", "per_mount", "through_both"),
    [(2, 1, False), (2, 2, False), (3, 1, False), (2, 1, True)],
    ids=["2-mounts-1-proc", "2-mounts-2-procs", "3-mounts-1-proc", "1-proc-via-2-mounts"],
)
def test_appenders_that_create_the_file_lose_no_line(
    mount_factory: MakeMount, backend: str | None, n_mounts: int, per_mount: int,
    through_both: bool,
) -> None:  # fmt: skip
    ms = mounts(mount_factory, n_mounts, backend)
    procs: list[tuple[str, subprocess.Popen[str]]] = []
    if through_both:
        paths = [str(m.mountpoint / "shared.log") for m in ms]
        procs.append(("w0", _appender("w0", paths)))
    else:
        for i, m in enumerate(ms):
            for j in range(per_mount):
                tag = f"w{i}.{j}"
                procs.append((tag, _appender(tag, [str(m.mountpoint / "shared.log")])))
    acknowledged: dict[str, int] = {}
    for tag, proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        acknowledged[tag] = int(out)
    for m in ms:
        m.stop()
    ms[0].start()
    got = (ms[0].mountpoint / "shared.log").read_text().splitlines()
    for tag, n in acknowledged.items():
        mine = [line for line in got if line.split(" ")[0] == tag]
        if through_both:
            # Each mount's lines in their order; across mounts, as their commits met.
            for k in range(n_mounts):
                seq = [line for line in mine if int(line.split(" ")[1]) % n_mounts == k]
                assert seq == [f"{tag} {i}" for i in range(k, n, n_mounts)], f"{tag}@m{k}"
        else:
            assert mine == [f"{tag} {i}" for i in range(n)], f"{tag}: {n} acknowledged"
    assert len(got) == sum(acknowledged.values())


def _appender(tag: str, paths: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", APPENDER, tag, str(APPEND_SECONDS), *paths],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


SAVER = textwrap.dedent(
    """
    import os, sys, time
    path, think, where, line, how = sys.argv[1:6]
    with open(path) as f:
        text = f.read()
    print("read", flush=True)
    sys.stdin.readline()  # the test says when to save
    time.sleep(float(think))
    if where == "top":
        text = line + "\\n" + text
    elif where == "end":
        text = text + line + "\\n"
    else:  # where is a line to rewrite as line
        text = text.replace(where + "\\n", line + "\\n")
    if how == "rename":
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    else:
        with open(path, "w") as f:
            f.write(text)
    """
)


def _saver(path: Path, think: float, where: str, line: str, how: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(path), str(think), where, line, how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "read\n"
    return proc


def _both_save(a: subprocess.Popen[str], b: subprocess.Popen[str]) -> None:
    for p in (a, b):
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in (a, b):
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err


@pytest.mark.parametrize("how", ["whole", "rename"])
@pytest.mark.parametrize("places", [("top", "end"), ("end", "end")])
def test_two_whole_saves_from_one_revision_keep_both_lines(
    mount_factory: MakeMount, backend: str | None, how: str, places: tuple[str, str]
) -> None:
    a, b = mounts(mount_factory, 2, backend)
    index = a.mountpoint / "MEMORY.md"
    index.write_text("# Memory\n- one\n- two\n")
    os.sync()
    wait_for(lambda: (b.mountpoint / "MEMORY.md").exists(), 10, what="b sees the index")
    slow = _saver(index, 1.0, places[0], "- from a", how)
    fast = _saver(b.mountpoint / "MEMORY.md", 0.3, places[1], "- from b", how)
    _both_save(slow, fast)

    def both_there(m: MountHandle) -> bool:
        text = (m.mountpoint / "MEMORY.md").read_text()
        return "- from a\n" in text and "- from b\n" in text

    wait_for(lambda: both_there(a) and both_there(b), 10, what="both lines on both mounts")
    text = (a.mountpoint / "MEMORY.md").read_text()
    assert text.count("- one\n") == text.count("- two\n") == 1
    assert not [p for p in a.mountpoint.iterdir() if "conflict" in p.name]


def test_a_line_both_rewrite_lands_the_last_save_and_keeps_the_other_as_a_copy(
    mount_factory: MakeMount, backend: str | None
) -> None:
    a, b = mounts(mount_factory, 2, backend)
    notes = a.mountpoint / "n.md"
    notes.write_text("alpha\nbeta\ngamma\n")
    os.sync()
    wait_for(lambda: (b.mountpoint / "n.md").exists(), 10, what="b sees n.md")
    procs = [
        _saver(a.mountpoint / "n.md", 0.8, "beta", "beta-from-a", "whole"),
        _saver(b.mountpoint / "n.md", 0.1, "beta", "beta-from-b", "whole"),
    ]
    _both_save(procs[0], procs[1])

    def copies() -> list[Path]:
        return [p for p in a.mountpoint.iterdir() if p.name.startswith("n.conflict-")]

    wait_for(lambda: len(copies()) == 1, 10, what="one conflict copy")
    assert (a.mountpoint / "n.md").read_text() == "alpha\nbeta-from-a\ngamma\n"
    (copy,) = copies()
    assert copy.read_text() == "alpha\nbeta-from-b\ngamma\n"
    # Named after the saving program: the interpreter's name as it was started.
    assert copy.name.endswith(f"-{Path(sys.executable).name}.md")
    status = subprocess.run(
        [MEMFS, "status", "--json"], capture_output=True, text=True, timeout=60, check=True
    )
    reported = json.dumps(json.loads(status.stdout.splitlines()[0]))
    assert copy.name in reported
    log = subprocess.run(
        [MEMFS, "log", "--store", a.store_url], capture_output=True, text=True, timeout=60
    )
    assert log.returncode == 0, log.stderr
    assert f"kept a conflict copy {copy.name}" in log.stdout


def test_an_open_file_reads_the_revision_it_opened_while_another_mount_replaces_it(
    mount_factory: MakeMount, backend: str | None, tmp_path: Path
) -> None:
    a, b = mounts(mount_factory, 2, backend)
    old = "alpha\nbeta\ngamma\n"
    (b.mountpoint / "n.md").write_text(old)
    os.sync()
    wait_for(lambda: (a.mountpoint / "n.md").exists(), 10, what="a sees n.md")
    with open(b.mountpoint / "n.md", "rb", buffering=0) as f:
        head = f.read(6)
        new = tmp_path / "new.md"
        new.write_text("alpha\nBETA-FROM-THE-OTHER-WRITER\nGAMMA\n")
        tmp = a.mountpoint / ".n.md.tmp"
        tmp.write_bytes(new.read_bytes())
        os.replace(tmp, a.mountpoint / "n.md")
        os.sync()
        wait_for(
            lambda: "BETA" in (b.mountpoint / "n.md").read_text(),
            10,
            what="a new open on b sees the new content",
        )
        rest = f.read()
    assert (head + rest).decode() == old
    # Closed: what the old handle read into the page cache is not served to new opens.
    assert "BETA" in (b.mountpoint / "n.md").read_text()


def _children(pid: int) -> list[str]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return [
            c for t in tasks for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()
        ]
    except OSError:
        return []


def test_sed_i_racing_the_memory_tool_keeps_both_edits_or_a_copy(
    mount_factory: MakeMount,
) -> None:
    a, b = mounts(mount_factory, 2)
    (b.mountpoint / "n.md").write_text("alpha\nbeta\ngamma\n")
    os.sync()
    wait_for(lambda: (a.mountpoint / "n.md").exists(), 10, what="a sees n.md")
    sed = subprocess.Popen(
        ["sed", "-i", "-e", "1{e sleep 1", "-e", "}", "-e", "s/^beta$/beta-person/", "n.md"],
        cwd=b.mountpoint,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # sed has read its first line when it runs its `e sleep 1`: the tool edits meanwhile.
    wait_for(lambda: _children(sed.pid), 10, what="sed paused after its first line")
    command = {
        "command": "str_replace",
        "path": "/memories/n.md",
        "old_str": "gamma",
        "new_str": "gamma-model",
    }
    tool = subprocess.run(
        [MEMFS, "tool", "--root", str(a.mountpoint)],
        input=json.dumps(command) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tool.returncode == 0 and '"is_error": false' in tool.stdout, tool.stdout + tool.stderr
    _, err = sed.communicate(timeout=60)
    assert sed.returncode == 0, err

    def settled() -> bool:
        text = (a.mountpoint / "n.md").read_text()
        return "beta-person" in text or any("conflict" in p.name for p in a.mountpoint.iterdir())

    wait_for(settled, 10, what="sed's save landed")
    text = (a.mountpoint / "n.md").read_text()
    copies = [p for p in a.mountpoint.iterdir() if "conflict" in p.name]
    assert text.count("gamma") == 1, text
    if copies:
        kept = copies[0].read_text()
        assert {"beta-person" in text + kept, "gamma-model" in text + kept} == {True}
    else:
        assert text == "alpha\nbeta-person\ngamma-model\n"


def test_the_models_create_over_a_file_it_viewed_merges_with_a_line_added_since(
    tmp_path: Path,
) -> None:
    from memfs.handler import MemoryHandler
    from memfs.store import open_store
    from tests.fixtures.mount import sqlite_url

    root = tmp_path / "root"
    root.mkdir()
    with open_store(sqlite_url(tmp_path / "s.db")) as store:
        store.write("MEMORY.md", b"# Memory\n- one\n", author="ann")
        handler = MemoryHandler(root, store=store, overwrite=True)
        assert not handler.view("/memories/MEMORY.md").is_error
        store.write("MEMORY.md", b"# Memory\n- one\n- from ann\n", author="ann")
        result = handler.create("/memories/MEMORY.md", "# Memory\n- one\n- from the model\n")
        assert not result.is_error, result
        assert store.read("MEMORY.md")[0] == b"# Memory\n- one\n- from ann\n- from the model\n"
        # Not viewed: the create replaces what is there (the last writer wins).
        store.write("other.md", b"old\n", author="ann")
        assert not handler.create("/memories/other.md", "new\n").is_error
        assert store.read("other.md")[0] == b"new\n"
