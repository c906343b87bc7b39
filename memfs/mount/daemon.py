"""The mount daemon's life: check, start (in the background by default), stop, report.

``start`` validates everything a person can get wrong before anything changes, recovers
a mount left behind by a killed daemon, then runs ``python -m memfs.mount.daemon`` as a
detached child (new session, stdin from /dev/null, output to a log in the state
directory) and returns once the kernel shows the mount. The child tells its parent it is
ready through a pipe; its record in :mod:`memfs.mount.state` is written by the serving
process itself, so the record exists exactly while a daemon serves.

Only :mod:`memfs.mount.fuse` touches libfuse; this module talks to the kernel through
:mod:`memfs.host` (mountinfo, statfs, ``fusermount3``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfs import host, procs
from memfs.errors import MemfsError, MountError
from memfs.mount import control, spawn, state
from memfs.mount.health import Health
from memfs.mount.spawn import reap as reap  # re-exported: callers reap daemons they killed
from memfs.mount.state import MountRecord
from memfs.private import write_private
from memfs.program import command

if TYPE_CHECKING:
    from memfs.mount.ops import MountOptions

Note = Callable[[str], None]

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
# How long `memfs umount` waits for a daemon that is still busy committing.
BUSY_LIMIT = 600.0


@dataclass(frozen=True, slots=True)
class MountStatus:
    record: MountRecord
    alive: bool
    mounted: bool
    files: int | None = None
    dirs: int | None = None
    bytes: int | None = None
    problem: str | None = None
    # The store's caps (None: no cap), for `memfs status` to show use against them.
    max_files: int | None = None
    max_tree_bytes: int | None = None
    max_file_bytes: int | None = None


def _ignore(_: str) -> None:
    pass


# --- starting ------------------------------------------------------------------------


def _check_store(store_url: str) -> str:
    """Open the store once (so a bad URL or a corrupt file fails here, before anything
    changes) and return its canonical URL, which no longer depends on the current
    directory; query options are kept since the canonical form drops them."""
    from memfs.store import open_store

    store = open_store(store_url)
    try:
        canonical = getattr(store, "url", None) or store_url
    finally:
        store.close()
    if "://" in store_url and not store_url.lower().startswith("sqlite://"):
        # A server's URL names the same store from any directory; kept as given, with
        # the options (and any password) the canonical form leaves out.
        return store_url
    if "://" in store_url and "?" in store_url:
        canonical += "?" + store_url.split("?", 1)[1]
    return canonical


def _prepare(mountpoint: Path, store_url: str, on_note: Note) -> str:
    """Every check and repair before a daemon may mount ``mountpoint``; returns the
    store's canonical URL."""
    problem = host.fuse_problem()
    if problem:
        raise MountError(problem)
    record = state.lookup(mountpoint, include_stale=True)
    if record is not None and Path(record.mountpoint) != mountpoint:
        record = None
    if record is not None and record.alive:
        raise MountError(
            f"{mountpoint} is already mounted by memfs (pid {record.pid}, store "
            f"{record.store_url}); unmount it first with: {command('umount', mountpoint)}"
        )
    entry = host.mount_entry(mountpoint)
    if entry is not None and not (record is not None or entry.is_memfs):
        raise MountError(
            f"{mountpoint} is already a mount point ({entry.fstype} from {entry.source}); "
            "choose an empty directory instead."
        )
    if entry is not None and not host.is_dead(mountpoint):
        # A daemon started with auto_unmount and killed a moment ago is unmounted by its
        # fusermount3: the entry read above may be gone by now, and statfs answered for
        # the directory.
        entry = host.mount_entry(mountpoint)
        if entry is not None and not host.is_dead(mountpoint):
            raise MountError(
                f"{mountpoint} is already mounted by a memfs daemon this state directory"
                f" does not know; unmount it first with: {command('umount', mountpoint)}"
            )
    if entry is None and mountpoint.exists() and not mountpoint.is_dir():
        raise MountError(f"{mountpoint} is not a directory; choose a directory to mount on.")
    canonical = _check_store(store_url)
    if entry is not None:
        host.fusermount(mountpoint, lazy=True)
        on_note(f"Recovered a stale memfs mount at {mountpoint} (its daemon had died).")
    if record is not None:
        state.remove(mountpoint, pid=record.pid)
    try:
        mountpoint.mkdir(parents=True, exist_ok=True)
        nonempty = any(mountpoint.iterdir())
    except OSError as exc:
        raise MountError(
            f"Cannot create or read the mountpoint {mountpoint}: {exc.strerror}; "
            "choose a directory you can write to."
        ) from exc
    if nonempty and (record is None or record.store_url != canonical):
        raise MountError(
            f"{mountpoint} is not empty; mount on an empty directory so no files are hidden "
            "under the mount, or put what it holds into the store first: "
            f"{command('import', mountpoint)} (for a Claude Code memory directory: "
            f"{command('claude-code', 'enable')} in the repository imports and mounts it)."
        )
    return canonical


def _save_leftovers(mountpoint: Path, store_url: str, subtree: str, on_note: Note) -> None:
    """Save files written into a former mountpoint of this store while nothing was
    mounted there (memfs.mount.leftovers), so the mount neither refuses nor hides them."""
    from memfs.mount import leftovers

    found = leftovers.find(mountpoint)
    if not found.files and not found.dirs:
        return
    moved = leftovers.save(
        mountpoint, store_url, subtree, state.journal_dir(store_url) / "recovered"
    )
    files = f"{len(found.files)} file{'' if len(found.files) == 1 else 's'}"
    on_note(
        f"Saved {files} written into {mountpoint} while it was not "
        f"mounted to the store as one operation (memfs undo takes it back); the originals"
        f" are in {moved}."
    )


def _make_subtree(store_url: str, subtree: str) -> None:
    """Create the directory a ``--subtree`` mount serves (with its parents), so a new
    project's memory can be mounted before anything is in it; MountError if a file is
    in the way."""
    from memfs.errors import StoreError
    from memfs.history.author import author_for
    from memfs.store import open_store

    with open_store(store_url) as store:
        try:
            store.mkdir(subtree, author=author_for("mount"), parents=True, exist_ok=True)
        except StoreError as exc:
            raise MountError(
                f"cannot mount the store's {subtree!r} as the root: {exc}; "
                "name a directory of the store (or a path where one can be made)"
            ) from exc


def start(
    mountpoint: str | os.PathLike[str],
    store_url: str,
    *,
    foreground: bool = False,
    debug: bool = False,
    options: MountOptions | None = None,
    on_note: Note = _ignore,
    on_ready: Callable[[MountRecord], None] | None = None,
    timeout: float = START_TIMEOUT,
    subtree: str | None = None,
) -> MountRecord:
    """Mount ``store_url`` at ``mountpoint``.

    In the background (default) return once the mount is up. In the foreground serve in
    this process until unmounted or signalled, calling ``on_ready`` once it is up.
    ``on_note`` receives things a person should be told that are not errors.
    ``subtree``: the store directory to serve as the mount's root (made if missing).
    """
    from memfs.store.subtree import subtree_path

    mp = state.normalize(mountpoint)
    sub = "" if subtree is None else subtree_path(subtree)
    store_url = _prepare(mp, store_url, on_note)
    if sub:
        _make_subtree(store_url, sub)
    _save_leftovers(mp, store_url, sub, on_note)
    if foreground:
        return serve_here(
            mp, store_url, debug=debug, options=options, on_ready=on_ready, subtree=sub
        )
    return spawn.spawn(mp, store_url, debug=debug, options=options, timeout=timeout, subtree=sub)


def serve_here(
    mountpoint: Path,
    store_url: str,
    *,
    debug: bool = False,
    options: MountOptions | None = None,
    on_ready: Callable[[MountRecord], None] | None = None,
    subtree: str = "",
) -> MountRecord:
    """Serve in this process; the record exists from readiness until the end."""
    from memfs.mount.fuse import serve
    from memfs.store import open_store
    from memfs.store.base import Store
    from memfs.store.subtree import SubtreeStore

    store: Store = open_store(store_url)
    if subtree:
        store = SubtreeStore(store, subtree)
    record = state.new_record(mountpoint, store_url, state.log_path(mountpoint), store.url, subtree)
    current = [record]
    up = threading.Event()
    lock = threading.Lock()

    def ready() -> None:
        with lock:
            state.write(current[0])
            up.set()
        if on_ready is not None:
            on_ready(record)

    def on_health(health: Health) -> None:
        # The record is how `memfs status` hears that files are waiting to be saved.
        with lock:
            current[0] = dataclasses.replace(
                current[0],
                unsaved=health.unsaved,
                errors=health.errors,
                recovery_dir=health.recovery_dir,
                store_problem=health.store_problem,
                store_down_since=health.store_down_since,
                lost=health.lost,
                conflicts=health.conflicts,
            )
            if up.is_set():
                state.write(current[0])

    report = state.report_path(mountpoint)
    with contextlib.suppress(FileNotFoundError):
        report.unlink()
    try:
        health = serve(
            store,
            str(mountpoint),
            foreground=True,
            debug=debug,
            options=options,
            ready=ready,
            on_health=on_health,
        )
    finally:
        state.remove(mountpoint, pid=record.pid)
        with contextlib.suppress(MemfsError):
            store.close()
    if health.unsaved or health.lost:
        # For `memfs umount`, which is not this process's parent and cannot see its exit.
        write_private(
            report,
            json.dumps(
                {
                    "unsaved": list(health.unsaved),
                    "recovery_dir": health.recovery_dir,
                    "lost": health.lost,
                }
            ),
        )
        raise MountError(_unsaved_message(mountpoint, health))
    return record


def _unsaved_message(mountpoint: Path, health: Health) -> str:
    unsaved = list(health.unsaved)
    shown = ", ".join(unsaved[:10]) + (
        f" and {len(unsaved) - 10} more" if len(unsaved) > 10 else ""
    )
    held = (
        f"{len(unsaved)} file(s) written through {mountpoint} could not be saved to the store: "
        f"{shown}; copies are in {health.recovery_dir}, and the next `{command('mount')}` of"
        " this store saves them from the journal"
    )
    if not health.lost:
        return held
    lost = f"{mountpoint}: {health.lost}"
    return f"{lost}; {held}" if unsaved else lost


def _while_busy(pid: int, mountpoint: Path, on_note: Note) -> bool:
    """Go on waiting while the daemon is still working (its CPU time moves: it is
    committing what it holds), up to :data:`BUSY_LIMIT`; True once it is gone. A frozen
    or stuck daemon makes no progress and is given up on at once."""
    deadline = time.monotonic() + BUSY_LIMIT
    told = False
    last = procs.cpu_ticks(pid)
    while last is not None and time.monotonic() < deadline:
        if spawn.wait_until(lambda: _gone(pid, mountpoint), 1.0):
            return True
        now = procs.cpu_ticks(pid)
        if now is None or now == last:
            return _gone(pid, mountpoint)
        last = now
        if not told:
            on_note(f"Waiting for the memfs daemon (pid {pid}) to save what it holds...")
            told = True
    return _gone(pid, mountpoint)


def _unsaved_report(mountpoint: Path) -> None:
    """Raise what the daemon that served ``mountpoint`` could not save, if anything."""
    report = state.report_path(mountpoint)
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return
    report.unlink(missing_ok=True)
    health = Health(
        unsaved=tuple(str(p) for p in data.get("unsaved", [])),
        recovery_dir=str(data.get("recovery_dir", "")),
        lost=str(data.get("lost", "")),
    )
    if health.unsaved or health.lost:
        raise MountError(_unsaved_message(mountpoint, health))


# --- stopping ------------------------------------------------------------------------


def _gone(pid: int, mountpoint: Path) -> bool:
    spawn.reap(pid)
    return not state.pid_alive(pid) and host.mount_entry(mountpoint) is None


def _quiesce(mountpoint: Path) -> None:
    """Have the daemon stop telling the kernel of changes before it is told to stop
    (see MemfsOperations.quiesce); a daemon that does not answer is stopped anyway."""
    link = control.MountLink(state.control_path(str(mountpoint)), str(mountpoint))
    try:
        link.quiesce()
    finally:
        link.close()


def stop(
    mountpoint: str | os.PathLike[str], *, timeout: float = STOP_TIMEOUT, on_note: Note = _ignore
) -> None:
    """Unmount ``mountpoint`` with buffered writes committed: SIGTERM the daemon and wait;
    if it does not finish, ``fusermount3 -u``, then a lazy unmount with a warning."""
    mp = state.normalize(mountpoint)
    record = state.lookup(mp, include_stale=True)
    if record is not None and Path(record.mountpoint) != mp:
        record = None
    entry = host.mount_entry(mp)
    if record is None:
        if entry is None or not entry.is_memfs:
            raise MountError(f"{mp} is not a memfs mount; `{command('status')}` lists the mounts.")
        dead = host.is_dead(mp)
        host.fusermount(mp, lazy=dead)
        if dead:
            on_note(f"Removed a stale memfs mount at {mp} (its daemon had died).")
        return
    if not record.alive:
        state.remove(mp, pid=record.pid)
        if entry is not None:
            host.fusermount(mp, lazy=True)
            on_note(f"Removed a stale memfs mount at {mp} (its daemon had died).")
        return
    _quiesce(mp)
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    if spawn.wait_until(lambda: _gone(record.pid, mp), timeout) or _while_busy(
        record.pid, mp, on_note
    ):
        state.remove(mp, pid=record.pid)
        _unsaved_report(mp)
        return
    if host.mount_entry(mp) is not None:
        try:
            host.fusermount(mp, lazy=False)
        except MountError:
            host.fusermount(mp, lazy=True)
            on_note(
                f"Warning: {mp} was busy and has been detached lazily; it disappears when "
                "the last process using it lets go."
            )
    if not spawn.wait_until(lambda: _gone(record.pid, mp), timeout):
        raise MountError(
            f"The memfs daemon (pid {record.pid}) did not exit after unmounting {mp}; "
            f"stop it with: kill -9 {record.pid}"
        )
    state.remove(mp, pid=record.pid)
    _unsaved_report(mp)


# --- reporting -----------------------------------------------------------------------


def _usage(record: MountRecord) -> dict[str, Any]:
    """The MountStatus fields read from the store: its usage and caps, or the problem."""
    from memfs.store import open_store

    try:
        store = open_store(record.store_url)
        try:
            usage = store.usage()
        finally:
            store.close()
    except MemfsError as exc:
        return {"problem": str(exc)}
    return {
        "files": usage.files,
        "dirs": usage.dirs,
        "bytes": usage.bytes,
        "max_files": store.max_files,
        "max_tree_bytes": store.max_tree_bytes,
        "max_file_bytes": store.max_file_bytes,
    }


def left_over_journals() -> dict[str, int]:
    """Stores whose journals hold writes a daemon acknowledged and could not save (it
    died): store URL -> number of journals. Mounting the store saves them."""
    from memfs.mount import journal

    out = {}
    for url, directory in state.journal_dirs().items():
        found = journal.abandoned(directory)
        if found:
            out[url] = len(found)
    return out


def status() -> list[MountStatus]:
    """Every mount this state directory knows, live ones first; stale records are
    reported once and deleted (see state.scan for the ones kept)."""
    live, stale = state.scan()
    out = []
    for record in live:
        mounted = host.mount_entry(Path(record.mountpoint)) is not None
        out.append(MountStatus(record, True, mounted, **_usage(record)))
    for record in stale:
        mounted = host.mount_entry(Path(record.mountpoint)) is not None
        out.append(MountStatus(record, False, mounted))
    return out


# --- the child -----------------------------------------------------------------------

# The signals that unmount cleanly. libfuse installs its handlers only for a signal whose
# disposition is SIG_DFL, and an ignored disposition survives exec: a daemon started
# under nohup ignored SIGHUP, one started by a caller that ignores SIGTERM ignored that.
# (mfusepy already resets SIGINT around the loop; all three follow the one rule here.)
STOP_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def reset_stop_signals() -> None:
    """Give :data:`STOP_SIGNALS` their default disposition, for libfuse to take over."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the background daemon (``python -m memfs.mount.daemon``)."""
    parser = argparse.ArgumentParser(prog="memfs-daemon")
    parser.add_argument("--ready-fd", type=int, required=True)
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--options")
    parser.add_argument("--subtree", default="")
    parser.add_argument("mountpoint")
    # "-": the URL comes on standard input, never on the command line (where `ps` shows
    # it to every user, password and all).
    parser.add_argument("store_url")
    args = parser.parse_args(argv)
    if args.store_url == "-":
        args.store_url = sys.stdin.readline().rstrip("\n")
    reset_stop_signals()
    # Warnings from the operations (a commit that failed, a refused rename) are the
    # daemon's only voice: they go to the log file the parent set as stderr.
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    pipe = os.fdopen(args.ready_fd, "w", buffering=1)

    def tell(message: str) -> None:
        if not pipe.closed:
            with contextlib.suppress(OSError):
                pipe.write(message.replace("\n", " ") + "\n")
                pipe.close()

    try:
        options = None
        if args.options:
            from memfs.mount.ops import MountOptions

            options = MountOptions(**json.loads(args.options))
        serve_here(
            Path(args.mountpoint),
            args.store_url,
            debug=args.debug,
            options=options,
            on_ready=lambda _record: tell("ready"),
            subtree=args.subtree,
        )
    except MemfsError as exc:
        print(f"memfs daemon: {exc}", file=sys.stderr)
        tell(f"error {exc}")
        return 1
    finally:
        tell("")
    return 0


if __name__ == "__main__":
    sys.exit(main())
