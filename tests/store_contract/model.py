"""The contract checked against a model: random operation sequences on a tiny namespace.

A dictionary of path -> content (``None`` for a directory) applies the rules of
memfs.store.base independently; after every operation the store's tree must equal the
model, a refused operation must raise the same error class and change nothing, and the
feed must grow exactly when the model says something happened, and a follower replaying
only the feed must know the same set of paths. Names are chosen to
collide with prefix and wildcard traps ("a", "ab", "a b", "a_").
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfs.errors import (
    AlreadyExists,
    DirectoryNotEmpty,
    InvalidMove,
    IsADirectory,
    NotADirectory,
    NotFound,
    StoreError,
)
from memfs.store.base import Change, Store
from tests.store_contract.common import A, MakeStore, tree

# path -> file content (bytes), symlink target (str) or None for a directory
Model = dict[str, bytes | str | None]

NAMES = ["a", "ab", "a b", "a_"]
PATHS = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)


@dataclass(frozen=True)
class Op:
    kind: str
    path: str
    other: str = ""
    data: bytes = b""
    flag: bool = False


OPS = st.one_of(
    st.builds(Op, st.just("write"), PATHS, data=st.binary(max_size=8), flag=st.booleans()),
    st.builds(Op, st.just("create"), PATHS, data=st.binary(max_size=8)),
    st.builds(Op, st.just("symlink"), PATHS, other=st.sampled_from(["a", "../x", "/etc"])),
    st.builds(Op, st.just("mkdir"), PATHS, flag=st.booleans()),
    st.builds(Op, st.just("delete"), PATHS, flag=st.booleans()),
    st.builds(Op, st.just("rename"), PATHS, other=PATHS, flag=st.booleans()),
)


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _children(model: Model, path: str) -> list[str]:
    return [p for p in model if p.startswith(path + "/")]


def _make_parent(model: Model, path: str, parents: bool) -> list[str]:
    """Directories to create for ``path``'s parent, or raise as the store must."""
    missing = []
    parent = _parent(path)
    while parent:
        if parent in model:
            if model[parent] is not None:
                raise NotADirectory(parent)
            break
        if not parents:
            raise NotFound(parent)
        missing.append(parent)
        parent = _parent(parent)
    return missing


def apply(model: Model, op: Op) -> None:
    """Apply ``op`` to ``model`` in place, or raise the error class the store must raise."""
    if op.kind in ("write", "create"):
        if op.path in model:
            if op.kind == "create" or isinstance(model[op.path], str):
                raise AlreadyExists(op.path)  # expected_rev=0, or a symlink in the way
            if model[op.path] is None:
                raise IsADirectory(op.path)
        else:
            for d in _make_parent(model, op.path, op.flag):
                model[d] = None
        model[op.path] = op.data
    elif op.kind in ("mkdir", "symlink"):
        if op.path in model:
            raise AlreadyExists(op.path)
        for d in _make_parent(model, op.path, op.flag and op.kind == "mkdir"):
            model[d] = None
        model[op.path] = None if op.kind == "mkdir" else op.other
    elif op.kind == "delete":
        if op.path not in model:
            raise NotFound(op.path)
        below = _children(model, op.path)
        if below and not op.flag:
            raise DirectoryNotEmpty(op.path)
        for p in [op.path, *below]:
            del model[p]
    else:
        _rename(model, op.path, op.other, op.flag)


def _rename(model: Model, src: str, dst: str, overwrite: bool) -> None:
    if src == dst:
        if src not in model:
            raise NotFound(src)
        return
    if dst.startswith(src + "/"):
        raise InvalidMove(src)
    if src not in model:
        raise NotFound(src)
    _make_parent(model, dst, False)
    if dst in model:
        if not overwrite:
            raise AlreadyExists(dst)
        src_dir, dst_dir = model[src] is None, model[dst] is None
        if src_dir and not dst_dir:
            raise NotADirectory(dst)
        if dst_dir and not src_dir:
            raise IsADirectory(dst)
        if _children(model, dst):
            raise DirectoryNotEmpty(dst)
        del model[dst]
    for p in [src, *_children(model, src)]:
        model[dst + p[len(src) :]] = model.pop(p)


def run(store: Store, op: Op) -> None:
    if op.kind == "write":
        store.write(op.path, op.data, author=A, parents=op.flag)
    elif op.kind == "create":
        store.write(op.path, op.data, author=A, expected_rev=0)
    elif op.kind == "symlink":
        store.symlink(op.path, op.other, author=A)
    elif op.kind == "mkdir":
        store.mkdir(op.path, author=A, parents=op.flag)
    elif op.kind == "delete":
        store.delete(op.path, author=A, recursive=op.flag)
    else:
        store.rename(op.path, op.other, author=A, overwrite=op.flag)


def replay(paths: set[str], changes: list[Change]) -> None:
    """Apply feed records to a set of paths, as a follower that never walks the tree."""
    for change in changes:
        if change.kind in ("create", "mkdir", "symlink"):
            paths.add(change.path)
        elif change.kind in ("delete", "rmdir"):
            paths.discard(change.path)
        elif change.kind == "rename":
            assert change.old_path is not None
            old = change.old_path
            moved = {p for p in paths if p == old or p.startswith(old + "/")}
            # A replaced destination is implied by the record (see base.py).
            paths.discard(change.path)
            paths -= moved
            paths |= {change.path + p[len(old) :] for p in moved}


def snapshot(model: Model) -> dict[str, tuple[str, bytes | str | None]]:
    kinds = {type(None): "dir", bytes: "file", str: "symlink"}
    return {p: (kinds[type(c)], c) for p, c in model.items()}


class ModelContract:
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(ops=st.lists(OPS, min_size=1, max_size=25))
    def test_random_operations_match_the_model(self, make_store: MakeStore, ops: list[Op]) -> None:
        # Closed per example: shrinking a failure can run hundreds of examples.
        store = make_store()
        try:
            self._check_against_model(store, ops)
        finally:
            store.close()

    def _check_against_model(self, store: Store, ops: list[Op]) -> None:
        model: Model = {}
        followed: set[str] = set()
        for op in ops:
            expected_model = dict(model)
            expected: type[StoreError] | None = None
            try:
                apply(expected_model, op)
            except StoreError as e:
                expected = type(e)
            seq = store.last_seq()
            try:
                run(store, op)
                raised: type[StoreError] | None = None
            except StoreError as e:
                raised = type(e)
            assert raised is expected, (op, raised, expected)
            if expected is None:
                model = expected_model
            assert tree(store) == snapshot(model), op
            changed = expected is None and not (op.kind == "rename" and op.path == op.other)
            assert (store.last_seq() > seq) == changed, op
            replay(followed, store.changes(since=seq))
            assert followed == set(model), op
