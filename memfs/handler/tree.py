"""The commands' backend on a real directory: symlink-proof, atomic file operations,
all through dir fds (:class:`DirTree`, a :class:`~memfs.handler.backend.Backend`).

Every path is walked one component at a time with ``openat(O_NOFOLLOW)`` from a fresh
fd of the root, so no symlink is ever followed and nothing can be swapped in between a
check and a use: each step works on the directory the previous step opened. Callers pass
:class:`~memfs.paths.MemPath` values the gate already accepted; this module adds only
what the file system can still do wrong (links, files where directories should be,
concurrent writers).

Writes never modify a file in place: a hidden ``.tmp-memfs-*`` file is written,
fsynced and renamed over the target, so a reader sees the old or the new file, never half of
one. On a memfs mount the fsync is left out: the rename commits the file whole and
durably before it returns (memfs.mount.namespace), so a write is one store transaction.
With ``durable=True`` the directory is fsynced after every change too, so the change
itself (not just its content) survives a power loss; off by default, as it doubles the
fsyncs per write and a crash then still leaves the old or the new file, never a torn one.
Read-modify-write edits (:meth:`Tree.edit`) lock the target with ``flock`` (memfs
processes serialise) and re-check, just before the rename, that nobody else (an editor
that takes no lock) changed the file since it was read.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from typing import NamedTuple

from memfs import host
from memfs.errors import Conflict, IsADirectory, NotADirectory, NotFound
from memfs.handler.backend import (
    DIR_MODE,
    EDIT_TRIES,
    FILE_MODE,
    READ_LIMIT,
    HardLinked,
    Node,
    NodeKind,
    NotRegular,
    SymlinkRefused,
    TooBigToRead,
)
from memfs.handler.posix import (
    DIR_FLAGS,
    fsync_dir,
    lstat_at,
    read_all,
    rename_noreplace,
    rmtree_at,
)
from memfs.paths import MemPath

# A hidden name the path gate accepts, so a memfs mount (which refuses names the gate
# refuses, the reserved ``.memfs`` prefix included) takes it like any editor's temp file.
# O_EXCL and 64 random bits make a clash with a model's file harmless: another is drawn.
TEMP_PREFIX = ".tmp-memfs-"
# Losing the lock race to another memfs handler is progress, not interference: allow many.
LOCK_TRIES = 1000
# Opens of a name found replaced between the open and its fstat, before giving up.
STALE_TRIES = 100

# O_NONBLOCK: opening a FIFO someone planted must not hang the handler.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def node_of(st: os.stat_result) -> Node:
    kind: NodeKind
    if stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISDIR(st.st_mode):
        kind = "dir"
    elif stat.S_ISLNK(st.st_mode):
        kind = "symlink"
    else:
        kind = "other"
    return Node(kind, st.st_size)


class Identity(NamedTuple):
    """What must not change between reading a file and replacing it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _umask() -> int | None:
    """The process umask, read without changing it (os.umask can only set it)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _lock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        # A file system without flock (some network and FUSE mounts) still gets the
        # re-checks before the rename; only handler-versus-handler ordering is weaker.
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


class DirTree:
    """The backend on the directory at ``root``; handles are directory fds."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = False) -> None:
        self.root = os.fspath(root)
        self.durable = durable
        # A hook for tests: called inside edit() after the new content is computed and
        # before the re-check, to let a test change the file at exactly that moment.
        self.before_commit: Callable[[], None] | None = None

    @functools.cached_property
    def rename_commits(self) -> bool:
        """Whether the tree is on a memfs mount, where a rename commits what it moves,
        whole and durably, before it returns: there the temporary file's fsync would
        commit it alone first, a second store transaction per write (and the rename
        then makes the save one). Asked at the first write, not for every tree made
        (a search makes one per call)."""
        mount = host.mount_holding(os.path.realpath(self.root))
        return mount is not None and mount.is_memfs

    def sync_dir(self, dir_fd: int) -> None:
        """Make a directory's entries durable, when this tree was asked to be."""
        if self.durable:
            fsync_dir(dir_fd)

    @contextlib.contextmanager
    def _root(self) -> Iterator[int]:
        # Opened per operation rather than once: a FUSE mount placed on the root after
        # the handler was built must be what the next command sees.
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    def _classify(self, dir_fd: int, name: str, path: MemPath, exc: OSError) -> Exception:
        st = lstat_at(dir_fd, name)
        if st is None:
            return NotFound(path.model, path=path.model)
        if stat.S_ISLNK(st.st_mode):
            return SymlinkRefused(path.model, path=path.model)
        if stat.S_ISDIR(st.st_mode):
            return exc
        return NotADirectory(path.model, path=path.model)

    @contextlib.contextmanager
    def directory(self, path: MemPath, *, create: bool = False) -> Iterator[int]:
        """An fd of the directory at ``path``, walked without following links.

        With ``create``, missing directories are made with mode 0700.
        """
        with self._root() as root_fd:
            fd = os.dup(root_fd)
            try:
                for i, name in enumerate(path.parts):
                    here = MemPath(path.parts[: i + 1])
                    try:
                        child = os.open(name, DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise NotFound(here.model, path=here.model) from None
                        child = self._mkdir(fd, name, here)
                    except OSError as exc:
                        raise self._classify(fd, name, here, exc) from None
                    os.close(fd)
                    fd = child
                yield fd
            finally:
                os.close(fd)

    def _mkdir(self, parent_fd: int, name: str, path: MemPath) -> int:
        try:
            os.mkdir(name, DIR_MODE, dir_fd=parent_fd)
            made = True
        except FileExistsError:
            made = False  # someone made it meanwhile: use theirs
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            raise self._classify(parent_fd, name, path, exc) from None
        if made:
            # mkdir's mode is cut by the umask; fchmod is not, and the fd is the directory
            # just made (O_NOFOLLOW), so a swapped-in link cannot redirect it.
            os.fchmod(fd, DIR_MODE)
            # A durable tree fsyncs the file's directory; the new directory's own entry
            # needs its parent fsynced to survive a crash too.
            self.sync_dir(parent_fd)
        return fd

    def _lstat(self, dir_fd: int, path: MemPath) -> os.stat_result | None:
        """lstat of the last component of ``path`` in ``dir_fd``; refuses a symlink."""
        st = lstat_at(dir_fd, path.name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise SymlinkRefused(path.model, path=path.model)
        return st

    def entry(self, dir_fd: int, path: MemPath) -> Node | None:
        st = self._lstat(dir_fd, path)
        return None if st is None else node_of(st)

    def own(self, dir_fd: int) -> Node:
        return node_of(os.fstat(dir_fd))

    def exists(self, dir_fd: int, name: str) -> bool:
        return lstat_at(dir_fd, name) is not None

    def _open_file(self, dir_fd: int, path: MemPath) -> tuple[int, os.stat_result]:
        for tries_left in reversed(range(STALE_TRIES)):
            try:
                fd = os.open(path.name, _READ_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                raise NotFound(path.model, path=path.model) from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise SymlinkRefused(path.model, path=path.model) from None
                raise
            try:
                st = os.fstat(fd)
                break
            except OSError as exc:
                os.close(fd)
                # On a FUSE mount a file another writer replaced right after our open
                # answers ESTALE (libfuse forgot its inode): the name is the new file.
                if exc.errno != errno.ESTALE or not tries_left:
                    raise
        # st_nlink is 0, not 1, when the file was replaced right after we opened it: the
        # caller's identity checks deal with that.
        if stat.S_ISREG(st.st_mode) and st.st_nlink <= 1:
            return fd, st
        os.close(fd)
        if stat.S_ISREG(st.st_mode):
            # A hard link planted in the root is a symlink that O_NOFOLLOW cannot see: the
            # same inode may be a file outside the root (on a memfs mount link() is refused).
            raise HardLinked(path.model, path=path.model)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectory(path.model, path=path.model)
        raise NotRegular(path.model, path=path.model)

    def read(self, dir_fd: int, path: MemPath) -> bytes:
        fd, st = self._open_file(dir_fd, path)
        try:
            return self._read_fd(fd, st, path)
        finally:
            os.close(fd)

    @staticmethod
    def _read_fd(fd: int, st: os.stat_result, path: MemPath) -> bytes:
        data = read_all(fd, READ_LIMIT) if st.st_size <= READ_LIMIT else None
        if data is None:
            raise TooBigToRead(path.model, path=path.model, size=st.st_size)
        return data

    def _write_temp(
        self, dir_fd: int, data: bytes, mode: int, owner: tuple[int, int] | None
    ) -> str:
        for _ in range(8):
            name = TEMP_PREFIX + secrets.token_hex(8)
            try:
                fd = os.open(name, _TEMP_FLAGS, mode, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, "no free temporary name", name)
        try:
            try:
                umask = _umask()
                if umask is None or mode & umask:
                    # The umask must not decide a memory file's mode. Skipped when it
                    # cannot have: on a mount every call is a round trip to the daemon.
                    os.fchmod(fd, mode)
                if owner is not None and owner != (os.geteuid(), os.getegid()):
                    # Keeping a person's ownership is best effort: only root may give a
                    # file away, and some file systems ignore owners altogether.
                    with contextlib.suppress(OSError):
                        os.fchown(fd, *owner)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if not self.rename_commits:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            self._discard(dir_fd, name)
            raise
        return name

    @staticmethod
    def _discard(dir_fd: int, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)

    def create(self, dir_fd: int, path: MemPath, data: bytes) -> None:
        """Write a new file at ``path``; AlreadyExists if anything is there already."""
        tmp = self._write_temp(dir_fd, data, FILE_MODE, None)
        try:
            rename_noreplace(dir_fd, tmp, dir_fd, path.name)
        except BaseException:
            self._discard(dir_fd, tmp)
            raise
        self.sync_dir(dir_fd)

    def edit(
        self,
        dir_fd: int,
        path: MemPath,
        change: Callable[[bytes], bytes],
        *,
        read_old: bool = True,
    ) -> None:
        """Replace the file at ``path`` with ``change(old_content)`` without losing writes.

        ``change`` may raise to abandon the edit; nothing is written then. If the file
        changes under us (a writer that takes no lock), the edit is recomputed on the
        fresh content, up to EDIT_TRIES times, then Conflict is raised. Waiting for
        another memfs handler's lock and finding the file replaced is not counted: that
        handler finished, and the edit simply starts again on its result.

        A lock-free writer can still lose a write in two windows no check can close:
        between the final check and the rename, and when it opened the file before the
        rename but writes after it (into the replaced inode). ``read_old=False`` (an
        overwriting create) passes ``b""`` and skips the content re-check, but still
        takes the lock so it never lands in the middle of another handler's edit.
        """
        changed = 0
        for _ in range(LOCK_TRIES):
            if changed >= EDIT_TRIES:
                break
            fd, st = self._open_file(dir_fd, path)
            renamed = False
            try:
                _lock(fd)
                now = lstat_at(dir_fd, path.name)
                if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    continue  # another handler replaced it while we waited for the lock
                st = os.fstat(fd)
                before = Identity.of(st)
                old = self._read_fd(fd, st, path) if read_old else b""
                new = change(old)
                if self.before_commit is not None:
                    self.before_commit()
                owner = (st.st_uid, st.st_gid)
                tmp = self._write_temp(dir_fd, new, stat.S_IMODE(st.st_mode), owner)
                try:
                    # An editor that takes no lock writes in place (same inode): compare
                    # the metadata and, since timestamps can be coarse, the bytes too.
                    now = lstat_at(dir_fd, path.name)
                    if now is None or Identity.of(now) != before:
                        changed += 1
                        continue
                    if read_old and read_all(fd, READ_LIMIT + 1) != old:
                        changed += 1
                        continue
                    os.rename(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                    tmp = ""
                    renamed = True  # done: from here on nothing may start the edit again
                finally:
                    if tmp:
                        self._discard(dir_fd, tmp)
                self.sync_dir(dir_fd)
                return
            except OSError as exc:
                # On a FUSE mount a descriptor of a file another writer replaced after
                # our lstat answers ESTALE (libfuse forgets the replaced inode): that is
                # "replaced while we waited" once more, so start again on the new file.
                if exc.errno != errno.ESTALE or renamed:
                    raise
            finally:
                os.close(fd)
        raise Conflict(path.model, path=path.model)

    def remove(self, dir_fd: int, path: MemPath) -> None:
        """Delete the file or directory (recursively) at ``path``; never follows links."""
        st = self._lstat(dir_fd, path)
        if st is None:
            raise NotFound(path.model, path=path.model)
        if stat.S_ISDIR(st.st_mode):
            rmtree_at(dir_fd, path.name)
        else:
            try:
                os.unlink(path.name, dir_fd=dir_fd)
            except FileNotFoundError:
                raise NotFound(path.model, path=path.model) from None
        self.sync_dir(dir_fd)

    def listdir(self, dir_fd: int) -> list[tuple[str, Node]]:
        out = []
        with os.scandir(dir_fd) as it:
            for item in it:
                try:
                    out.append((item.name, node_of(item.stat(follow_symlinks=False))))
                except FileNotFoundError:
                    continue  # deleted while listing
        return out

    def rename(self, source: int, old: MemPath, target: int, new: MemPath) -> None:
        rename_noreplace(source, old.name, target, new.name)
        self.sync_dir(target)
        if old.parent != new.parent:  # one directory needs one fsync
            self.sync_dir(source)

    @contextlib.contextmanager
    def subdir(self, dir_fd: int, name: str) -> Iterator[int | None]:
        """An fd of the child directory ``name``, or None if it is not one (any more)."""
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except OSError:
            yield None
            return
        try:
            yield fd
        finally:
            os.close(fd)
