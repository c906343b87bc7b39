"""One CLI convention, each item by its exact output and exit status, through the
installed command (or click's runner where the process does not matter): a closed
output pipe is quiet, Ctrl-C is 130, a new store is announced, a mountpoint memfs
already serves is no failure with --exist-ok, a path no operation ever touched is an
error, copy makes up no operation, summaries in --help are whole, and a sync mirror is
named as one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
from click.testing import CliRunner

from memfs.cli import COMMANDS, main, summary
from memfs.store import open_store
from memfs.sync import running
from tests.fixtures.mount import MountHandle
from tests.fixtures.waiting import wait_for

MEMFS = str(Path(sys.executable).with_name("memfs"))


def memfs(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFS, *args], capture_output=True, text=True, timeout=120, check=False,
        input=input, stdin=None if input is not None else subprocess.DEVNULL,
    )  # fmt: skip


def big_store(tmp_path: Path, files: int = 6000) -> str:
    """A store whose one operation lists (``log --files``) more than a pipe holds."""
    source = tmp_path / "source"
    source.mkdir()
    for i in range(files):
        (source / f"note-{i:05}.md").write_text(f"note {i}\n")
    url = f"sqlite://{tmp_path / 'big.db'}"
    assert memfs("import", str(source), "--store", url, "--quiet").returncode == 0
    return url


def test_a_closed_output_pipe_is_quiet(tmp_path: Path) -> None:
    url = big_store(tmp_path)
    reader = subprocess.Popen(
        [MEMFS, "log", "--files", "--store", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().startswith(b"1  ")
    reader.stdout.close()  # what `| head` does once it has its lines
    assert reader.wait(timeout=60) == 141
    assert reader.stderr.read() == b""
    reader.stderr.close()


def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    tool = subprocess.Popen(
        [MEMFS, "tool", "--root", str(tmp_path / "root")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell runs a background job with SIGINT ignored, and Python then leaves it
        # ignored: a suite started with `make test &` must not hand that on.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert tool.stdin is not None and tool.stdout is not None and tool.stderr is not None
    tool.stdin.write('{"command": "view", "path": "/memories"}\n')
    tool.stdin.flush()
    assert json.loads(tool.stdout.readline())["is_error"] is False  # running, reading stdin
    tool.send_signal(signal.SIGINT)
    assert tool.wait(timeout=60) == 130
    assert tool.stderr.read() == "\n"
    for stream in (tool.stdin, tool.stdout, tool.stderr):
        stream.close()


def test_a_new_store_is_announced_once(tmp_path: Path) -> None:
    store = tmp_path / "typo" / "dir" / "x.db"
    first = memfs("sync", str(tmp_path / "mirror"), "--once", "--store", f"sqlite://{store}")
    assert (first.returncode, first.stderr) == (
        0,
        f"Created a new store at {store}.\nCreated {tmp_path / 'mirror'}.\n",
    )
    again = memfs("sync", str(tmp_path / "mirror"), "--once", "--store", f"sqlite://{store}")
    assert (again.returncode, again.stderr) == (0, "")


def test_mount_exist_ok_on_a_served_mountpoint(memfs_mount: MountHandle) -> None:
    mp = memfs_mount.mountpoint
    refused = CliRunner().invoke(main, ["mount", str(mp), "--store", memfs_mount.store_url])
    assert refused.exit_code == 1 and "is already mounted by memfs" in refused.output
    result = CliRunner().invoke(main, ["mount", "--exist-ok", str(mp)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"{mp} is already mounted by memfs: {memfs_mount.store_url} (pid {memfs_mount.pid})."
    )


def test_log_of_a_path_no_operation_touched(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    with open_store(url) as store:
        store.write("notes/a.md", b"a\n", author="alice", parents=True)
    done = memfs("log", "notes/typo.md", "--follow", "--store", url)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "Error: no operation in this store ever touched 'notes/typo.md'; check the path"
        f" (`{MEMFS} log` lists them all)\n"
    )
    window = memfs("log", "notes/a.md", "--since", "2026-01-01T00:00", "--store", url)
    assert window.returncode == 0 and "alice" in window.stdout


def test_copy_makes_up_no_operation(tmp_path: Path) -> None:
    src = big_store(tmp_path, files=20)
    dst = f"sqlite://{tmp_path / 'copy.db'}"
    copied = memfs("copy", src, dst)
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout.startswith("Copied 20 changes, 20 files (")

    def summaries(url: str) -> list[tuple[str, str]]:
        ops = memfs("log", "--json", "--store", url).stdout.splitlines()
        return [(op["actor"], op["summary"]) for op in map(json.loads, ops)]

    assert summaries(dst) == summaries(src)
    assert len(summaries(dst)) == 1


def test_every_summary_in_help_is_whole() -> None:
    shown = CliRunner().invoke(main, ["--help"], terminal_width=80).output.split("Commands:")[1]
    assert [line for line in shown.splitlines() if line.endswith("...")] == []
    for name in COMMANDS:
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.help is not None
        first = summary(command.help)
        assert first.endswith("."), name
        assert " ".join(first.split()[:3]) in " ".join(shown.split()), name


def test_the_tool_names_a_sync_mirror_as_one(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    mirror = tmp_path / "mirror"
    syncing = subprocess.Popen(
        [MEMFS, "sync", str(mirror), "--store", url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: any(r.pid == syncing.pid for r in running.scan()[0]), what="the mirror")
        done = memfs(
            "tool", "--root", str(mirror), "--store", url,
            input='{"command": "view", "path": "/memories"}\n',
        )  # fmt: skip
        assert done.returncode == 0
        assert done.stderr == (
            f"memfs tool: not using --store: {mirror} is kept in sync with {url} by memfs sync"
            f" (pid {syncing.pid}), which carries every change there; work on the files"
            " without --store\n"
        )
    finally:
        syncing.send_signal(signal.SIGINT)
        syncing.wait(timeout=60)
    assert os.path.isdir(mirror)


def test_a_revision_is_rev_everywhere(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    with open_store(url) as store:
        revs = [store.write("a.md", f"v{i}\n".encode(), author="alice").rev for i in range(3)]
    shown = memfs("history", "a.md", "--rev", str(revs[0]), "--store", url)
    assert (shown.returncode, shown.stdout) == (0, "v0\n")
    assert memfs("history", "a.md", "--show", str(revs[0]), "--store", url).stdout == "v0\n"
    two = memfs("diff", "a.md", "--rev", str(revs[0]), "--rev", str(revs[1]), "--store", url)
    assert two.returncode == 0 and "-v0\n+v1\n" in two.stdout
    old_form = memfs("diff", "a.md", str(revs[0]), str(revs[1]), "--store", url)
    assert old_form.stdout == two.stdout
    one = memfs("diff", "a.md", "--rev", str(revs[0]), "--store", url)
    assert "-v0\n+v2\n" in one.stdout
    for command in ("history", "diff", "restore", "redact"):
        help_text = CliRunner().invoke(main, [command, "--help"]).output
        assert "--rev" in help_text and "--show" not in help_text, command


def test_who_acts_is_as_everywhere_it_is_set() -> None:
    for command in ("tool", "agent"):
        help_text = CliRunner().invoke(main, [command, "--help"]).output
        assert "--as NAME" in help_text and "--actor" not in help_text.split("(memfs log")[0]


def test_every_reporting_command_speaks_json_lines(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}"
    with open_store(url) as store:
        store.write("a.md", b"v0\n", author="alice")
        store.write("a.md", b"v1\n", author="alice")
    runs = {
        "history": memfs("history", "a.md", "--json", "--store", url),
        "diff": memfs("diff", "a.md", "--json", "--store", url),
        "export": memfs("export", str(tmp_path / "out"), "--json", "--store", url),
        "import": memfs(
            "import", str(tmp_path / "out"), "--json", "--store", f"sqlite://{tmp_path / 'i.db'}"
        ),
        "copy": memfs("copy", url, f"sqlite://{tmp_path / 'c.db'}", "--json"),
        "sync": memfs("sync", str(tmp_path / "mirror"), "--once", "--json", "--store", url),
        "search": memfs("search", "v1", "--json", "--store", url),
    }
    records = {}
    for name, done in runs.items():
        assert done.returncode == 0, (name, done.stderr)
        records[name] = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["rev"], r["author"], r["size"]) for r in records["history"]] == [
        (2, "alice", 3),
        (1, "alice", 3),
    ]
    assert records["diff"] == [
        {"path": "a.md", "diff": "--- a/a.md@1\n+++ b/a.md\n@@ -1 +1 @@\n-v0\n+v1\n"}
    ]
    assert records["export"][0]["files"] == records["import"][0]["files"] == 1
    assert records["copy"] == [
        {"store": f"sqlite://{tmp_path / 'c.db'}", "changes": 2, "files": 1, "bytes": 3}
    ]
    assert records["sync"] == [{"dir": str(tmp_path / "mirror"), "store": url, "synced": True}]
    assert [r["path"] for r in records["search"]] == ["a.md"]


def test_mount_json(mount_factory: Callable[..., MountHandle], tmp_path: Path) -> None:
    served = mount_factory()
    done = CliRunner().invoke(main, ["mount", "--exist-ok", "--json", str(served.mountpoint)])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {
        "mountpoint": str(served.mountpoint),
        "store": served.store_url,
        "pid": served.pid,
        "already_mounted": True,
    }


def test_a_store_that_cannot_be_used_is_said_in_one_place() -> None:
    # Every command's "cannot use this store ... give another --store URL" line comes
    # from the one error edge (memfs.cli.common.store_error), none writes its own.
    cli = Path(__file__).resolve().parent.parent / "memfs" / "cli"
    saying = sorted(p.name for p in cli.glob("*.py") if ".advice(" in p.read_text("utf-8"))
    assert saying == ["common.py"]
    from memfs.cli import stores

    assert not hasattr(stores, "message")
