"""Property: whatever both sides do between two syncs, one pass converges them and every
edit survives (under its name or as a conflict copy)."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memfs.errors import StoreError
from memfs.store import Store, open_store
from memfs.sync import Mirror

# "k" and "k/x.md" make one side's file the other side's directory (a kind clash).
NAMES = ["a.md", "b.md", "d/c.md", "d/e/f.md", "k", "k/x.md"]
AGENT = "agent"

ops = st.lists(
    st.tuples(
        st.sampled_from(["local", "remote"]),
        st.sampled_from(["write", "delete"]),
        st.sampled_from(NAMES),
        st.integers(0, 3),
    ),
    max_size=12,
)


def remote_files(store: Store) -> dict[str, bytes]:
    return {e.path: store.read(e.path)[0] for e in store.walk() if e.is_file}


def disk_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # each example is a real store and two real sync passes
@given(initial=st.sets(st.sampled_from(NAMES)), steps=ops)
# Found by this test: the store turned an unchanged local file into a directory.
@example(
    initial={"a.md", "k"}, steps=[("remote", "delete", "k", 0), ("remote", "write", "k/x.md", 0)]
)
def test_one_pass_converges_and_keeps_every_edit(
    initial: set[str], steps: list[tuple[str, str, str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "mirror")
        root.mkdir()
        url = f"sqlite://{tmp}/store.db"
        state = Path(tmp, "state.json")
        store = open_store(url)
        try:
            for name in sorted(initial):
                with contextlib.suppress(StoreError):  # "k" and "k/x.md" cannot both be
                    store.write(name, f"base {name}".encode(), author=AGENT, parents=True)
            Mirror(root, url, state_path=state, delete_grace=0.05).run_once()
            synced = remote_files(store)
            for n, (side, op, name, k) in enumerate(steps):
                data = f"{side} {name} {k} #{n}".encode()
                # An operation the side's current shape does not allow (writing under a
                # file, over a directory) is simply not made.
                if side == "local":
                    path = root / name
                    with contextlib.suppress(OSError):
                        if op == "write":
                            path.parent.mkdir(parents=True, exist_ok=True)
                            path.write_bytes(data)
                        elif path.is_file():
                            path.unlink()
                elif op == "write":
                    with contextlib.suppress(StoreError):
                        store.write(name, data, author=AGENT, parents=True)
                else:
                    with contextlib.suppress(StoreError):
                        if store.stat(name).is_file:
                            store.delete(name, author=AGENT)
            before = [disk_files(root), remote_files(store)]
            Mirror(root, url, state_path=state, delete_grace=0.05).run_once()
            remote = remote_files(store)
            assert disk_files(root) == remote
            # Every edit standing on either side before the pass is somewhere after it.
            base = {name: f"base {name}".encode() for name in initial if name in synced}
            for files in before:
                for name, data in files.items():
                    if data != base.get(name):
                        assert data in remote.values(), f"the edit {data!r} of {name} was lost"
        finally:
            store.close()
