"""An operation's records folded into what a person sees: net steps per path."""

from __future__ import annotations

from itertools import count
from typing import Any

from memfs.history.steps import UNKNOWN, State, Step, fold
from memfs.store.base import Change

_seq = count(1)
OP = 7


def rec(kind: str, path: str, **fields: Any) -> Change:
    return Change(next(_seq), kind, path, "a", 0, op=fields.pop("op", OP), **fields)  # type: ignore[arg-type]


def file(sha: str, mode: int = 0o600, size: int = 3) -> dict[str, Any]:
    return {"sha256": sha, "size": size, "mode": mode}


def prior(sha: str, mode: int = 0o600, size: int = 3) -> dict[str, Any]:
    return {"prior_kind": "file", "prior_sha256": sha, "prior_size": size, "prior_mode": mode}


F = State("file", "old", 3, 0o600)
G = State("file", "new", 3, 0o600)


def test_an_atomic_save_is_one_modify_of_the_file() -> None:
    steps = fold(
        [
            rec("create", ".tmp-memfs-1", **file("x")),
            rec("modify", ".tmp-memfs-1", **file("new"), **prior("x")),
            rec("rename", "f.md", old_path=".tmp-memfs-1", **file("new"), **prior("old")),
        ]
    )
    assert steps == [Step("modify", "f.md", F, G)]


def test_an_atomic_save_of_a_new_file_is_a_create() -> None:
    steps = fold(
        [
            rec("create", "sedAbC123", **file("new")),
            rec("rename", "f.md", old_path="sedAbC123", **file("new")),
        ]
    )
    assert steps == [Step("create", "f.md", None, G)]


def test_jetbrains_and_vim_save_dances_are_one_modify() -> None:
    jetbrains = fold(
        [
            rec("rename", "f___jb_old___", old_path="f", **file("old")),
            rec("create", "f___jb_tmp___", **file("new")),
            rec("rename", "f", old_path="f___jb_tmp___", **file("new")),
            rec("delete", "f___jb_old___", **prior("old")),
        ]
    )
    vim = fold(
        [
            rec("rename", "f~", old_path="f", **file("old")),
            rec("create", "f", **file("new")),
            rec("delete", "f~", **prior("old")),
        ]
    )
    assert jetbrains == vim == [Step("modify", "f", F, G)]


def test_a_file_made_and_removed_in_the_operation_leaves_nothing() -> None:
    assert fold([rec("create", "t", **file("x")), rec("delete", "t", **prior("x"))]) == []


def test_a_rewrite_with_the_same_bytes_is_nothing() -> None:
    assert fold([rec("modify", "f", **file("old"), **prior("old"))]) == []


def test_a_move_is_a_rename_and_keeps_what_it_replaced() -> None:
    moved = fold([rec("rename", "b.md", old_path="a.md", **file("old"), **prior("other"))])
    assert moved == [Step("rename", "b.md", F, F, "a.md", State("file", "other", 3, 0o600))]


def test_a_recursive_delete_is_every_file_then_its_directories() -> None:
    steps = fold(
        [
            rec("delete", "many/b/x", **prior("x")),
            rec("delete", "many/a", **prior("a")),
            rec("rmdir", "many/b", prior_kind="dir", prior_mode=0o700),
            rec("rmdir", "many", prior_kind="dir", prior_mode=0o755),
        ]
    )
    assert [(s.action, s.path) for s in steps] == [
        ("delete", "many/b/x"),
        ("rmdir", "many/b"),
        ("delete", "many/a"),
        ("rmdir", "many"),
    ]
    assert steps[-1].before == State("dir", mode=0o755)


def test_a_directory_move_carries_what_is_below_it_and_edits_there_show() -> None:
    steps = fold(
        [
            rec("rename", "projects/beta", old_path="projects/alpha", mode=0o700),
            rec("modify", "projects/beta/plan.md", **file("new"), **prior("old")),
        ]
    )
    assert steps == [
        Step("rename", "projects/beta", State("dir", mode=0o700), State("dir", mode=0o700),
             "projects/alpha"),
        Step("modify", "projects/beta/plan.md", F, G),
    ]  # fmt: skip


def test_a_mode_change_alone_is_an_attr_step() -> None:
    steps = fold([rec("attr", "f", mode=0o644, **prior("old"))])
    assert steps == [Step("attr", "f", F, State("file", "old", 3, 0o644))]


def test_records_without_priors_say_the_before_is_unknown() -> None:
    (step,) = fold([rec("modify", "f", op=None, **file("new"))])
    assert step.action == "modify" and step.before is UNKNOWN


# --- the fold against a model: applying its steps to the tree before gives the tree after


class Model:
    """A tree of paths -> State, changed the way a store changes, recording each change
    with what was at its path just before (as the store's records carry it)."""

    def __init__(self, tree: dict[str, State]) -> None:
        self.tree = dict(tree)
        self.records: list[Change] = []

    def _prior(self, path: str) -> dict[str, Any]:
        s = self.tree.get(path)
        if s is None:
            return {}
        return {
            "prior_kind": s.kind, "prior_sha256": s.sha256, "prior_size": s.size,
            "prior_mode": s.mode, "prior_target": s.target,
        }  # fmt: skip

    def _record(self, kind: str, path: str, after: State | None, **extra: Any) -> None:
        fields = (
            {}
            if after is None
            else {"sha256": after.sha256, "size": after.size, "mode": after.mode}
        )
        self.records.append(rec(kind, path, **fields, **self._prior(path), **extra))

    def write(self, path: str, sha: str) -> None:
        after = State("file", sha, 3, 0o600)
        self._record("modify" if path in self.tree else "create", path, after)
        self.tree[path] = after

    def mkdir(self, path: str) -> None:
        after = State("dir", mode=0o700)
        self._record("mkdir", path, after)
        self.tree[path] = after

    def delete(self, path: str) -> None:
        for p in sorted(
            [p for p in self.tree if p == path or p.startswith(path + "/")], reverse=True
        ):
            self._record("rmdir" if self.tree[p].kind == "dir" else "delete", p, None)
            del self.tree[p]

    def rename(self, src: str, dst: str) -> None:
        moving = self.tree[src]
        self._record("rename", dst, moving, old_path=src)
        below = {p: s for p, s in self.tree.items() if p.startswith(src + "/")}
        for p in [src, *below]:
            del self.tree[p]
        self.tree.pop(dst, None)
        self.tree[dst] = moving
        for p, s in below.items():
            self.tree[dst + p[len(src) :]] = s


def apply_steps(tree: dict[str, State], steps: list[Step]) -> dict[str, State]:
    """The tree after the steps, all at once: each step says what its path holds now (a
    rename moves its thing from ``old_path``, a directory with what is below it), and
    whatever no step names stays, below its moved directory if one moved."""
    moved = sorted(
        ((s.old_path, s.path) for s in steps if s.action == "rename" and s.old_path
         and s.before is not None and s.before.kind == "dir"),
        key=lambda m: -len(m[0]),
    )  # fmt: skip

    def placed(path: str) -> str:
        for old, new in moved:
            if path.startswith(old + "/"):
                return new + path[len(old) :]
        return path

    moved_from = {s.old_path for s in steps if s.action == "rename"}
    named = moved_from | {s.path for s in steps}
    out: dict[str, State] = {}
    for path, state in tree.items():
        where = placed(path)
        # A step says what became of it, or what is there now. (A step at its old path,
        # when its directory moved away, speaks of what was made there since.)
        if where in named or path in moved_from:
            continue
        out[where] = state
    for step in steps:
        if step.after is not None:
            out[step.path] = step.after
        else:
            assert step.path not in out, step
    return out


def test_a_moved_directorys_old_name_made_again_keeps_what_moved() -> None:
    # Found by the property below: what a directory held goes with it, whatever is
    # made at its old paths after.
    start = {"d": State("dir", mode=0o700), "d/x": State("file", "x0", 3, 0o600)}
    model = Model(start)
    model.rename("d", "b")
    model.mkdir("d")
    model.write("d/x", "a")
    assert apply_steps(start, fold(model.records)) == model.tree


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NAMES = ["a", "b", "d", "d/x", "d/y", "e", "e/z", ".tmp", "f~"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["write", "mkdir", "delete", "rename"]),
                          st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from("uvw")),
                max_size=12))  # fmt: skip
def test_steps_take_the_tree_before_to_the_tree_after(ops: list[tuple[str, str, str, str]]) -> None:
    start = {"a": State("file", "a0", 3, 0o600), "d": State("dir", mode=0o700),
             "d/x": State("file", "x0", 3, 0o600)}  # fmt: skip
    model = Model(start)
    for op, p, q, sha in ops:
        parent = p.rpartition("/")[0]
        if parent and model.tree.get(parent, State("file")).kind != "dir":
            continue
        here = model.tree.get(p)
        if op == "write" and (here is None or here.kind == "file"):
            model.write(p, sha)
        elif op == "mkdir" and here is None:
            model.mkdir(p)
        elif op == "delete" and here is not None:
            model.delete(p)
        elif op == "rename" and here is not None and q != p and not q.startswith(p + "/"):
            qparent = q.rpartition("/")[0]
            there = model.tree.get(q)
            if qparent and model.tree.get(qparent, State("file")).kind != "dir":
                continue
            if there is not None and (
                there.kind != here.kind
                or (there.kind == "dir" and any(x.startswith(q + "/") for x in model.tree))
            ):
                continue
            model.rename(p, q)
    assert apply_steps(start, fold(model.records)) == model.tree
