"""Copy one store into another, history included: :func:`copy_store`.

The source's change feed is replayed into the destination in order, each change by its
own author at its own time (the destination's ``clock`` is set to the change's time for
the call), with the content of the revision it made read back from the source. So the
copy has the same revisions at the same paths with the same authors, times, sizes and
hashes, and the same feed, change for change: its own numbers, in the same order.

What the source no longer holds cannot be copied: the content of a revision that is no
longer retained or was redacted, the mode of a directory at creation, a symlink's
target once it is gone. Such a change is left out, and after the replay the
destination's tree is made exactly the source's current tree (content, modes, mtimes,
owners) by whatever writes, attribute changes and deletes that takes, authored as the
source's entries were. Checkpoints are copied, pointing at the same points.

Everything happens in one :meth:`~memfs.store.base.Store.batch` of the destination: a
copy that fails (a cap, a full disk) leaves it as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from memfs.errors import CapExceeded, NotFound, StoreError, StoreUnavailable, TooLarge
from memfs.store.base import Change, Store

_PAGE = 1000
_AUTHOR = "memfs copy"


class Progress(Protocol):
    def start(self, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...


def copy_store(src: Store, dst: Store, *, progress: Progress | None = None) -> None:
    """Replay ``src`` into ``dst`` (see the module docstring). ``dst`` is normally empty;
    if it is not, the source's changes are applied on top and its tree ends as the
    source's."""
    if progress is not None:
        progress.start(src.last_seq())
    clock = dst.clock
    seqs: dict[int, int] = {0: dst.last_seq()}  # source seq -> destination seq after it
    try:
        with dst.batch():
            for change in _feed(src):
                dst.clock = lambda t=change.time_ns: t
                _replay(src, dst, change)
                seqs[change.seq] = dst.last_seq()
                if progress is not None:
                    progress.advance()
            _reconcile(src, dst)
            for checkpoint in src.checkpoints():
                dst.clock = lambda t=checkpoint.time_ns: t
                at = max((s for s in seqs if s <= checkpoint.seq), default=0)
                dst.set_checkpoint(checkpoint.name, author=checkpoint.author, seq=seqs[at])
    finally:
        dst.clock = clock


def _feed(store: Store) -> Iterator[Change]:
    since = 0
    while True:
        page = store.changes(since, _PAGE)
        yield from page
        if len(page) < _PAGE:
            return
        since = page[-1].seq


def _exists(store: Store, path: str) -> bool:
    try:
        store.stat(path)
    except NotFound:
        return False
    return True


def _replay(src: Store, dst: Store, change: Change) -> None:
    author, path = change.author, change.path
    try:
        if change.kind in ("create", "modify"):
            if change.rev is None:
                return
            try:
                data = src.read_revision(path, change.rev)
            except NotFound:  # not retained, or redacted
                return
            mode = _current_mode(src, path)
            dst.write(path, data, author=author, parents=True, mode=mode)
        elif change.kind == "mkdir":
            dst.mkdir(path, author=author, parents=True, exist_ok=True, mode=_dir_mode(src, path))
        elif change.kind in ("delete", "rmdir"):
            if _exists(dst, path):
                dst.delete(path, author=author, recursive=change.kind == "rmdir")
        elif change.kind == "rename":
            if change.old_path is not None and _exists(dst, change.old_path):
                dst.rename(change.old_path, path, author=author, overwrite=True)
        elif change.kind == "symlink":
            try:
                target = src.stat(path).target
            except NotFound:
                return
            if target is not None and not _exists(dst, path):
                dst.symlink(path, target, author=author)
        # "attr" changes carry no values in the feed; the reconcile sets the final ones.
    except (CapExceeded, TooLarge, StoreUnavailable):
        raise
    except StoreError:
        return  # a change the copy cannot make as it was; the reconcile mends the tree


def _current_mode(store: Store, path: str) -> int | None:
    try:
        entry = store.stat(path)
    except NotFound:
        return None
    return entry.mode if entry.is_file else None


def _dir_mode(store: Store, path: str) -> int:
    try:
        entry = store.stat(path)
    except NotFound:
        return 0o700
    return entry.mode if entry.is_dir else 0o700


def _reconcile(src: Store, dst: Store) -> None:
    """Make ``dst``'s tree exactly ``src``'s current one."""
    wanted = {e.path: e for e in src.walk()}
    extra = [e.path for e in dst.walk() if e.path not in wanted or wanted[e.path].kind != e.kind]
    for path in sorted(extra, key=lambda p: p.count("/"), reverse=True):
        if _exists(dst, path):
            dst.delete(path, author=_AUTHOR, recursive=True)
    for path, entry in wanted.items():
        dst.clock = lambda t=entry.ctime_ns: t
        if entry.is_dir:
            dst.mkdir(path, author=_AUTHOR, exist_ok=True, mode=entry.mode)
        elif entry.is_file:
            data, _ = src.read(path)
            if not _exists(dst, path) or dst.read(path)[0] != data:
                last = src.history(path, 0)[0]
                dst.clock = lambda t=last.time_ns: t
                dst.write(path, data, author=last.author, mode=entry.mode)
        elif not _exists(dst, path) and entry.target is not None:
            dst.symlink(path, entry.target, author=_AUTHOR)
        now = dst.stat(path)
        same = (now.mode, now.mtime_ns, now.uid, now.gid)
        if same != (entry.mode, entry.mtime_ns, entry.uid, entry.gid):
            dst.set_attrs(
                path,
                author=_AUTHOR,
                mode=entry.mode,
                mtime_ns=entry.mtime_ns,
                uid=entry.uid,
                gid=entry.gid,
            )
