"""A running mount's control socket: what other doors on this machine ask of it.

Another door (the model's handler, ``memfs restore``, ``undo``, ``import``) changes the
store directly, beside the mount. Two things then make it behave as a change on a local
disk would, and only the daemon can do them:

- ``settle``: before the door reads or replaces paths, the mount commits what it holds
  pending at or below them (a person's write acknowledged a moment ago), so that the
  door works on it, and a restore replaces it (keeping it in history) rather than being
  reverted by it later;
- ``show``: after the door's change, the mount follows the feed up to it and has the
  kernel drop what it cached, so a person reading through the mount sees it at once
  rather than after the feed's next poll;
- ``purge``: ``memfs redact`` has the mount drop what it keeps on disk of the redacted
  content (its journal's records of finished writes, recovered copies), or hear that
  the mount holds it as a pending write, which is a file's current content to it;
- ``quiesce``: ``memfs umount`` has the mount stop telling the kernel of changes before
  it is signalled to stop (libfuse frees what those calls read before it calls the
  mount's own teardown).

One Unix socket per daemon, next to its state record (the state directory is private
to its user; a peer of another user is refused too, by its credentials). Requests and
answers are one JSON object per line: ``{"settle": [PATH, ...]}`` and ``{"show": SEQ}``
answer ``{"ok": true}`` or ``{"ok": false, "error": TEXT}``; ``{"purge": [SHA256, ...],
"check": BOOL}`` answers with the fields of :class:`memfs.mount.purge.Purged` beside
``"ok"`` (with ``check``, only ``pending`` is filled and nothing changes);
``{"quiesce": true}`` answers ``{"ok": true}``.

A mount that does not answer (gone, or older than this protocol) costs the asking door
nothing but the one-line log: the store's compare-and-set keeps every write safe, and
the feed shows the change a moment later anyway.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfs.errors import Conflict, MemfsError
from memfs.store.base import Revision, Store

log = logging.getLogger(__name__)

# How long a door waits for a mount to show its change before going on without.
SHOW_TIMEOUT = 2.0
# A settle commits at most what the mount holds; a store that takes longer is stuck.
ANSWER_TIMEOUT = 10.0
_MAX_REQUEST = 1 << 20


def _address(path: Path) -> tuple[int, str]:
    """A short address for ``path``: a socket path longer than the kernel's 108 bytes
    (a deep state directory, as tests make) is reached through a directory fd."""
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return fd, f"/proc/self/fd/{fd}/{path.name}"


class ControlServer(threading.Thread):
    """Answers requests on ``path`` with ``settle(paths)`` and ``show(seq) -> bool``."""

    def __init__(
        self,
        path: Path,
        settle: Callable[[list[str]], None],
        show: Callable[[int, float], bool],
        purge: Callable[[list[str], bool], dict[str, object]] | None = None,
        quiesce: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name="memfs-control", daemon=True)
        self.path = path
        self._settle = settle
        self._show = show
        self._purge = purge
        self._quiesce = quiesce
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by a daemon that was killed
        fd, address = _address(path)
        try:
            self._sock.bind(address)
        finally:
            os.close(fd)
        os.chmod(path, 0o600)
        self._sock.listen(16)
        self._halt = False

    def stop(self) -> None:
        self._halt = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5)

    def run(self) -> None:
        while not self._halt:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._halt:
                    return
                log.exception("memfs: the control socket failed; going on")
                continue
            threading.Thread(
                target=self._serve, args=(conn,), name="memfs-control-peer", daemon=True
            ).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if not _same_user(conn):
                log.warning("memfs: refused a control request from another user")
                return
            reader = conn.makefile("rb")
            for raw in reader:
                if len(raw) > _MAX_REQUEST:
                    return
                try:
                    answer = self._answer(json.loads(raw))
                except Exception as exc:
                    log.exception("memfs: a control request failed")
                    answer = {"ok": False, "error": str(exc) or type(exc).__name__}
                try:
                    conn.sendall(json.dumps(answer).encode() + b"\n")
                except OSError:
                    return

    def _answer(self, request: object) -> dict[str, object]:
        if not isinstance(request, dict):
            return {"ok": False, "error": "a request is a JSON object"}
        if "settle" in request:
            paths = request["settle"]
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                return {"ok": False, "error": "settle takes a list of store paths"}
            self._settle(paths)
            return {"ok": True}
        if "show" in request:
            seq = request["show"]
            if not isinstance(seq, int):
                return {"ok": False, "error": "show takes a feed sequence number"}
            return {"ok": self._show(seq, SHOW_TIMEOUT)}
        if "purge" in request and self._purge is not None:
            hashes, check = request["purge"], request.get("check", False)
            if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
                return {"ok": False, "error": "purge takes a list of SHA-256 digests"}
            if not isinstance(check, bool):
                return {"ok": False, "error": "check is true or false"}
            return {"ok": True, **self._purge(hashes, check)}
        if "quiesce" in request and self._quiesce is not None:
            self._quiesce()
            return {"ok": True}
        return {"ok": False, "error": "unknown request"}


def _same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid in (os.getuid(), 0)


class MountLink:
    """A door's connection to one mount's control socket (see the module docstring).
    Thread-safe; reconnects once when the daemon was restarted; never raises."""

    def __init__(self, path: Path, mountpoint: str = "") -> None:
        self.path = path
        self.mountpoint = mountpoint
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._lock = threading.Lock()
        self._warned = False
        self._closed = False

    def settle(self, paths: Iterable[str]) -> None:
        self._ask({"settle": list(paths)})

    def show(self, seq: int) -> None:
        self._ask({"show": seq})

    def purge(self, hashes: Iterable[str], *, check: bool = False) -> dict[str, Any] | None:
        """The mount's answer to a purge (see the module docstring); None when it did
        not answer, or answered with an error (logged)."""
        answer = self._ask({"purge": list(hashes), "check": check})
        return answer if answer is not None and answer.get("ok") else None

    def quiesce(self) -> bool:
        """Whether the mount stopped telling the kernel of changes (about to stop)."""
        answer = self._ask({"quiesce": True})
        return answer is not None and bool(answer.get("ok"))

    def close(self) -> None:
        # A request may be waiting on a daemon that does not answer (stopped, stuck),
        # holding the lock for up to ANSWER_TIMEOUT: shutting the socket wakes it, so
        # closing (a server ending on SIGTERM) never waits for that.
        self._closed = True  # no new connection: the waiting request gives up
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._drop()

    def _ask(self, request: dict[str, object]) -> dict[str, Any] | None:
        line = json.dumps(request).encode() + b"\n"
        problem: object = None
        with self._lock:
            for _ in range(2):
                try:
                    sock = self._connect()
                    sock.sendall(line)
                    answer = json.loads(self._readline(sock))
                except (OSError, ValueError) as exc:
                    self._drop()
                    problem = exc
                    continue
                if not isinstance(answer, dict):
                    return None
                if not answer.get("ok", False) and answer.get("error"):
                    log.warning("memfs: the mount at %s: %s", self.path, answer["error"])
                return answer
            if not self._warned:
                self._warned = True
                log.info("memfs: the mount's control socket %s: %s", self.path, problem)
            return None

    def _connect(self) -> socket.socket:
        if self._closed:
            raise ConnectionAbortedError("the link to the mount was closed")
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            sock.settimeout(ANSWER_TIMEOUT)
            fd, address = _address(self.path)
            try:
                sock.connect(address)
            except OSError:
                sock.close()
                raise
            finally:
                os.close(fd)
            self._sock = sock
            self._buffer = b""
        return self._sock

    def _readline(self, sock: socket.socket) -> bytes:
        while b"\n" not in self._buffer:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("the mount closed its control socket")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _drop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None


def local_mounts(store_id: str) -> list[MountLink]:
    """Links to every live mount on this machine of the store whose ``Store.url`` is
    ``store_id`` (the caller closes them)."""
    from memfs.mount import state

    return [
        MountLink(state.control_path(r.mountpoint), r.mountpoint)
        for r in state.records()
        if r.store_id == store_id
    ]


class LocalMounts:
    """Every live mount of one store on this machine, as one neighbour (settle and show
    go to each): what ``memfs restore``, ``undo`` and ``import`` tell before and after."""

    def __init__(self, store_id: str) -> None:
        self.links = local_mounts(store_id)

    def settle(self, paths: Iterable[str]) -> None:
        wanted = list(paths)
        for link in self.links:
            link.settle(wanted)

    def show(self, seq: int) -> None:
        for link in self.links:
            link.show(seq)

    def close(self) -> None:
        for link in self.links:
            link.close()


@contextlib.contextmanager
def nearby(store: Store, paths: Iterable[str], *, dry_run: bool = False) -> Iterator[None]:
    """Around a change another door makes to ``store`` (a restore, an undo, an import):
    every mount of it on this machine first commits what it holds pending for ``paths``
    (so the change replaces it, and it stays in history, as an in-place rewrite on a
    local disk would), and shows the change at once afterwards."""
    if dry_run:
        yield
        return
    mounts = LocalMounts(store.url)
    try:
        mounts.settle(paths)
        yield
        mounts.show(store.last_seq())
    finally:
        mounts.close()


@dataclass(frozen=True, slots=True)
class Redaction:
    """What :func:`redact_here` redacted in the store and purged on this machine."""

    revisions: list[Revision]
    # Live mounts' journals rewritten to what is pending: (mountpoint, journal, bytes gone).
    compacted: tuple[tuple[str, str, int], ...] = ()
    silent: tuple[str, ...] = ()  # live mounts that did not answer: not purged
    saved: tuple[str, ...] = ()  # files saved from stopped daemons' journals first
    orphans: int = 0  # stopped daemons' journals replayed, shredded and deleted
    kept: str = ""  # a journal still holding writes that could not be saved now
    copies: tuple[str, ...] = ()  # recovered copies deleted
    quarantined: tuple[str, ...] = ()  # journals memfs could not replay, set aside
    rescued: tuple[str, ...] = ()  # whole stores rescued under the recovery directory


def redact_here(
    store: Store, path: str, rev: int, redact: Callable[[], list[Revision]]
) -> Redaction:
    """``redact()`` (the store's redaction of revision ``rev`` of ``path``), and the same
    content dropped from what memfs keeps on this machine: every live mount of the store
    compacts its journal and deletes recovered copies of it (``purge``); stopped
    daemons' journals are first saved to the store as a mount's start would, then
    shredded; recovered copies left by them are deleted. Conflict, before anything
    changes, when a mount or a stopped daemon's journal holds that content as a pending
    write (it is a file's current content there). What cannot be purged is named."""
    from memfs.mount import journal, recovery, state, writes

    shas: list[str] = []
    with contextlib.suppress(MemfsError):
        shas = [r.sha256 for r in store.history(path) if r.rev == rev and not r.redacted_by]
    links = local_mounts(store.url)
    where = state.journal_dir(store.url)
    try:
        for link in links if shas else []:
            answer = link.purge(shas, check=True)
            held = [] if answer is None else answer.get("pending", [])
            if held:
                raise Conflict(
                    f"revision {rev} of '{path}' is what the mount at {link.mountpoint} holds"
                    f" for '{held[0]}', not saved yet; change or delete that file first, then"
                    " redact",
                    path=str(held[0]),
                )
        orphaned = recovery.orphans_holding(store, where, shas) if shas else []
        if orphaned:
            held_in, held_path = orphaned[0]
            raise Conflict(
                f"revision {rev} of '{path}' is what a stopped daemon's journal {held_in}"
                f" holds for '{held_path}'; mount the store to save it, change or delete that"
                " file, then redact",
                path=held_path,
            )
        saved = writes.save_orphans(store, where) if where.is_dir() else recovery.Saved()
        revisions = redact()
        hashes = sorted({r.sha256 for r in revisions})
        compacted: list[tuple[str, str, int]] = []
        silent: list[str] = []
        copies: list[str] = []
        for link in links:
            answer = link.purge(hashes)
            if answer is None:
                silent.append(link.mountpoint)
                continue
            if answer.get("journal"):
                compacted.append(
                    (link.mountpoint, str(answer["journal"]), int(answer.get("dropped", 0)))
                )
            copies += [str(c) for c in answer.get("copies", [])]
        copies += recovery.delete_copies(where / "recovered", hashes)
    finally:
        for link in links:
            link.close()
    return Redaction(
        revisions=revisions,
        compacted=tuple(compacted),
        silent=tuple(silent),
        saved=saved.saved,
        orphans=saved.journals,
        kept=saved.kept,
        copies=tuple(copies),
        quarantined=tuple(str(p) for p in journal.quarantined(where)),
        rescued=tuple(str(p) for p in recovery.rescued(where / "recovered")),
    )
