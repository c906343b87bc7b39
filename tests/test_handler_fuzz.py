"""The handler on input no model should send: arbitrary JSON, and one regression case."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memfs.handler import MemoryHandler, strings


def test_view_range_on_the_root_is_refused_like_any_dir(tmp_path: Path) -> None:
    """view_range applies to text files; a directory with one is refused, so is the root."""
    handler = MemoryHandler(tmp_path / "memories")
    assert handler.create("/memories/d/f.md", "x\n").is_error is False
    sub = handler.view("/memories/d", [1, 2])
    assert sub == (strings.view_range_not_text("/memories/d"), True)
    root = handler.view("/memories", [1, 2])
    assert root == (strings.view_range_not_text("/memories"), True)


FIELDS = ["command", "path", "file_text", "old_str", "new_str", "insert_line", "insert_text"]
FIELDS += ["view_range", "old_path", "new_path"]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["view", "create", "str_replace", "insert", "delete", "rename"])
    | st.sampled_from(["/memories", "/memories/a", "/memories/a/b.md", "/memories/../x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6),
        json_values,
    )
)
def test_execute_never_raises_on_arbitrary_json(command: Any) -> None:
    """Whatever JSON the model sends, a Result comes back and nothing leaves the root."""
    base = Path(tempfile.mkdtemp(prefix="memfs-fuzz-"))
    try:
        (base / "secrets.env").write_text("SECRET=1\n")
        handler = MemoryHandler(base / "memories")
        result = handler.execute(command)
        assert isinstance(result.is_error, bool)
        assert isinstance(result.content, str | list)
        if result.is_error:
            assert isinstance(result.content, str)
            assert "internal error" not in result.content, result.content
        assert sorted(p.name for p in base.iterdir()) == ["memories", "secrets.env"]
        assert (base / "secrets.env").read_text() == "SECRET=1\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)
