"""A Hypothesis state machine: random command sequences against a real directory and a model.

The model is a plain in-memory tree (``files``: parts -> text, ``dirs``: parts) with its
own implementation of each command's rule, written from the contract and the handler's
documented choices (line splitting, insert placement, snippet window) rather than by
calling the handler's helpers. After every step the result must be exactly what the model
predicts (``is_error`` and the whole string) and the real tree, walked, must equal the
model: no lost file, no stray temporary file, no half-made change after an error.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from memfs.errors import PathError
from memfs.handler import MemoryHandler, strings
from memfs.paths import parse
from tests.handler_model_rules import Parts, insert_text_at, model_path, numbered, split_lines
from tests.hostile_paths import HOSTILE_STRINGS

# Few names and a shallow depth so random paths often hit existing entries; the set has
# non-ASCII, a space, a '%', an upper-case name (sort order) and node_modules (listing).
NAMES = ["a", "b.md", "é", "Z y", "100%", "node_modules"]
TOKENS = ["a", "b", "ab", "é", "日本", "😀", " ", "\n", "\n", "\r\n", "\t", "x\r", "%"]

_nonempty = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map("".join)
# Hypothesis favours the empty text; keep it possible but rarer than real content.
texts = st.one_of(_nonempty, _nonempty, _nonempty, st.just(""))
# The root now and then; Hypothesis favours short lists, so () must not be one of them.
part_lists = st.one_of(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(tuple),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(tuple),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(tuple),
    st.just(()),
)
# Mostly lines that exist in these short files; then out of range; then wrong types.
line_numbers = st.one_of(
    st.integers(0, 2),
    st.integers(0, 2),
    st.integers(-1, 8),
    st.sampled_from(["1", 1.5, True, None, [0]]),
)
view_ranges = st.one_of(
    st.none(),
    st.lists(st.integers(-2, 8), min_size=2, max_size=2),
    st.sampled_from([[1], [1, 2, 3], "1,2", [1, "2"], [True, 2], {}]),
)


class HandlerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memfs-model-"))
        self.root = self.tmp / "memories"
        self.files: dict[Parts, str] = {}
        self.dirs: set[Parts] = set()
        self.handler: MemoryHandler | None = None
        self.overwrite = False
        self.cap = 0

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    @initialize(
        overwrite=st.booleans(),
        cap=st.sampled_from([100 * 1024, 120]),
        seed=st.lists(st.tuples(part_lists, texts), min_size=3, max_size=8),
    )
    def start(self, overwrite: bool, cap: int, seed: list[tuple[Parts, str]]) -> None:
        self.overwrite, self.cap = overwrite, cap
        self.handler = MemoryHandler(self.root, overwrite=overwrite, max_file_bytes=cap)
        # A populated tree to start from: left to chance, most edits would hit nothing.
        for parts, text in seed:
            self.do_create(model_path(parts), parts, text)

    # --- the model's view of the tree ---------------------------------------------

    def kind(self, parts: Parts) -> str | None:
        if parts == () or parts in self.dirs:
            return "dir"
        return "file" if parts in self.files else None

    def blocker(self, parts: Parts) -> str | None:
        """The model path of a file standing where a parent directory of ``parts`` is."""
        for i in range(1, len(parts)):
            if parts[:i] in self.files:
                return model_path(parts[:i])
        return None

    def add_parents(self, parts: Parts) -> None:
        for i in range(1, len(parts)):
            self.dirs.add(parts[:i])

    def children(self, parts: Parts) -> list[str]:
        n = len(parts)
        names = {p[n] for p in (*self.files, *self.dirs) if len(p) > n and p[:n] == parts}
        return sorted(names)

    def real_size(self, parts: Parts) -> str:
        # A directory's own size is the file system's business; read it, don't model it.
        return strings.human_size(os.lstat(self.root.joinpath(*parts)).st_size)

    def listing(self, raw: str, parts: Parts) -> str:
        base = raw[:-1] if raw.endswith("/") else raw
        lines = [f"{self.real_size(parts)}\t{raw}"]

        def walk(here: Parts, prefix: str, depth: int) -> None:
            for name in self.children(here):
                if name.startswith(".") or name == "node_modules":
                    continue
                child = (*here, name)
                if child in self.dirs:
                    lines.append(f"{self.real_size(child)}\t{base}/{prefix}{name}/")
                    if depth < 2:
                        walk(child, f"{prefix}{name}/", depth + 1)
                else:
                    size = strings.human_size(len(self.files[child].encode()))
                    lines.append(f"{size}\t{base}/{prefix}{name}")

        walk(parts, "", 1)
        return (
            f"Here're the files and directories up to 2 levels deep in {raw}, "
            "excluding hidden items and node_modules:\n" + "\n".join(lines)
        )

    # --- drawing paths ------------------------------------------------------------

    def draw_parts(self, data: st.DataObject, existing: str | None = None) -> Parts:
        pool = sorted(self.files) if existing == "file" else sorted((*self.files, *self.dirs))
        # Hypothesis leans towards the first of sampled values: the pool wins mostly.
        if existing and pool and data.draw(st.sampled_from([True, True, True, False])):
            return data.draw(st.sampled_from(pool))
        return data.draw(part_lists)

    @staticmethod
    def raw(data: st.DataObject, parts: Parts) -> str:
        # One tolerated trailing '/' now and then: the strings must echo it as sent.
        return model_path(parts) + data.draw(st.sampled_from(["", "", "", "", "", "/"]))

    # --- running a step -----------------------------------------------------------

    def run(self, command: dict[str, Any], expected: str, is_error: bool) -> None:
        assert self.handler is not None
        result = self.handler.execute(command)
        assert result.content == expected, (command, result.content, expected)
        assert result.is_error is is_error, (command, result)
        # Shown by --hypothesis-show-statistics: proof the mix reaches successes too.
        event(f"{command['command']} {'error' if is_error else 'ok'}")

    def check_edit(self, raw: str, parts: Parts, new_content: str) -> str | None:
        size = len(new_content.encode())
        if size > self.cap:
            return strings.edit_too_large(raw, size, self.cap)
        self.files[parts] = new_content
        return None

    # --- the rules ----------------------------------------------------------------

    @rule(data=st.data(), view_range=view_ranges)
    def view(self, data: st.DataObject, view_range: object) -> None:
        parts = self.draw_parts(data, existing="any")
        raw = self.raw(data, parts)
        command: dict[str, Any] = {"command": "view", "path": raw}
        if view_range is not None:
            command["view_range"] = view_range
        kind = self.kind(parts) if self.blocker(parts) is None else None
        if kind is None:
            return self.run(command, strings.view_missing(raw), True)
        if kind == "dir":
            if view_range is not None:
                return self.run(command, strings.view_range_not_text(raw), True)
            return self.run(command, self.listing(raw, parts), False)
        lines = split_lines(self.files[parts])
        n = len(lines)
        start, end = 1, n
        if view_range is not None:
            if (
                not isinstance(view_range, list)
                or len(view_range) != 2
                or any(type(v) is not int for v in view_range)
            ):
                return self.run(command, strings.view_range_shape(view_range), True)
            if n == 0:
                return self.run(command, strings.view_range_empty(view_range), True)
            start, end = view_range
            if not 1 <= start <= n:
                return self.run(command, strings.view_range_start(view_range, n), True)
            if end != -1 and not start <= end <= n:
                return self.run(command, strings.view_range_end(view_range, start, n), True)
            end = n if end == -1 else end
        body = [numbered(i, lines[i - 1]) for i in range(start, end + 1)]
        header = f"Here's the content of {raw} with line numbers:"
        self.run(command, "\n".join([header, *body]), False)

    @rule(data=st.data(), text=texts, big=st.integers(0, 5))
    def create(self, data: st.DataObject, text: str, big: int) -> None:
        parts = self.draw_parts(data, existing="any")
        raw = self.raw(data, parts)
        if big == 5:
            text *= 10  # over the small cap now and then
        self.do_create(raw, parts, text)

    def do_create(self, raw: str, parts: Parts, text: str) -> None:
        command = {"command": "create", "path": raw, "file_text": text}
        size = len(text.encode())
        blocker = self.blocker(parts)
        if parts == ():
            return self.run(command, strings.create_on_directory(raw), True)
        if size > self.cap:
            return self.run(command, strings.too_large(raw, "file_text", size, self.cap), True)
        if blocker is not None:
            return self.run(command, strings.not_a_directory(raw, blocker), True)
        kind = self.kind(parts)
        if kind == "dir":
            return self.run(command, strings.create_on_directory(raw), True)
        if kind == "file" and not self.overwrite:
            return self.run(command, f"Error: File {raw} already exists", True)
        self.files[parts] = text
        self.add_parents(parts)
        self.run(command, f"File created successfully at: {raw}", False)

    @rule(data=st.data(), new_str=st.one_of(st.none(), texts))
    def str_replace(self, data: st.DataObject, new_str: str | None) -> None:
        parts = self.draw_parts(data, existing="file")
        raw = self.raw(data, parts)
        content = self.files.get(parts, "")
        if content and data.draw(st.sampled_from([True, True, False])):
            i = data.draw(st.integers(0, len(content) - 1))
            j = data.draw(st.integers(i + 1, min(len(content), i + 6)))
            old_str = content[i:j]
        else:
            old_str = data.draw(texts)
        command: dict[str, Any] = {"command": "str_replace", "path": raw, "old_str": old_str}
        if new_str is not None:
            command["new_str"] = new_str
        new = new_str or ""
        if old_str == "":
            return self.run(command, strings.empty_old_str(raw), True)
        if self.kind(parts) != "file" or self.blocker(parts) is not None:
            missing = f"Error: The path {raw} does not exist. Please provide a valid path."
            return self.run(command, missing, True)
        starts = [k for k in range(len(content)) if content.startswith(old_str, k)]
        if not starts:
            not_found = (
                f"No replacement was performed, old_str `{old_str}` did not appear "
                f"verbatim in {raw}."
            )
            return self.run(command, not_found, True)
        if len(starts) > 1:
            lines = sorted({content.count("\n", 0, k) + 1 for k in starts})
            return self.run(command, strings.multiple(old_str, lines), True)
        pos = starts[0]
        new_content = content[:pos] + new + content[pos + len(old_str) :]
        refused = self.check_edit(raw, parts, new_content)
        if refused is not None:
            return self.run(command, refused, True)
        first = content.count("\n", 0, pos) + 1
        last = first + new.count("\n")
        new_lines = split_lines(new_content)
        window = range(max(1, first - 2), min(len(new_lines), last + 2) + 1)
        snippet = "\n".join(numbered(k, new_lines[k - 1]) for k in window)
        self.run(
            command,
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + snippet,
            False,
        )

    @rule(data=st.data(), line=line_numbers, text=texts)
    def insert(self, data: st.DataObject, line: object, text: str) -> None:
        parts = self.draw_parts(data, existing="file")
        raw = self.raw(data, parts)
        command = {"command": "insert", "path": raw, "insert_line": line, "insert_text": text}
        if line is None:  # null is a missing field, refused before the path is looked at
            missing = strings.missing_field("insert", "insert_line", "an integer")
            return self.run(command, missing, True)
        if self.kind(parts) != "file" or self.blocker(parts) is not None:
            return self.run(command, f"Error: The path {raw} does not exist", True)
        content = self.files[parts]
        n = len(split_lines(content))
        if type(line) is not int or not 0 <= line <= n:
            return self.run(command, strings.bad_insert_line(line, n), True)
        refused = self.check_edit(raw, parts, insert_text_at(content, line, text))
        if refused is not None:
            return self.run(command, refused, True)
        self.run(command, f"The file {raw} has been edited.", False)

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        parts = self.draw_parts(data, existing="any")
        raw = self.raw(data, parts)
        command = {"command": "delete", "path": raw}
        if parts == ():
            return self.run(command, "Error: Cannot delete the /memories directory itself", True)
        if self.kind(parts) is None or self.blocker(parts) is not None:
            return self.run(command, f"Error: The path {raw} does not exist", True)
        n = len(parts)
        self.files = {p: t for p, t in self.files.items() if p[:n] != parts}
        self.dirs = {p for p in self.dirs if p[:n] != parts}
        self.run(command, f"Successfully deleted {raw}", False)

    @rule(data=st.data())
    def rename(self, data: st.DataObject) -> None:
        old = self.draw_parts(data, existing="any")
        new = self.draw_parts(data)
        raw_old, raw_new = self.raw(data, old), self.raw(data, new)
        command = {"command": "rename", "old_path": raw_old, "new_path": raw_new}
        n = len(old)
        if old == ():
            return self.run(command, "Error: Cannot rename the /memories directory itself", True)
        if new in ((), old):
            return self.run(command, f"Error: The destination {raw_new} already exists", True)
        if new[:n] == old:
            return self.run(command, strings.into_itself(raw_old, raw_new), True)
        if self.kind(old) is None or self.blocker(old) is not None:
            return self.run(command, f"Error: The path {raw_old} does not exist", True)
        blocker = self.blocker(new)
        if blocker is not None:
            return self.run(command, strings.not_a_directory(raw_new, blocker), True)
        if self.kind(new) is not None:
            return self.run(command, f"Error: The destination {raw_new} already exists", True)
        self.files = {(new + p[n:] if p[:n] == old else p): t for p, t in self.files.items()}
        self.dirs = {(new + p[n:] if p[:n] == old else p) for p in self.dirs}
        self.add_parents(new)
        self.run(command, f"Successfully renamed {raw_old} to {raw_new}", False)

    @rule(data=st.data(), hostile=st.sampled_from(HOSTILE_STRINGS))
    def hostile_path(self, data: st.DataObject, hostile: Any) -> None:
        try:
            parse(hostile.path)
        except PathError as err:
            expected = str(err)
        else:  # pragma: no cover - the gate tests guarantee this
            raise AssertionError(f"the gate accepted {hostile.label}")
        valid = model_path(self.draw_parts(data, existing="any"))
        commands: list[dict[str, Any]] = [
            {"command": "view", "path": hostile.path},
            {"command": "create", "path": hostile.path, "file_text": "x"},
            {"command": "str_replace", "path": hostile.path, "old_str": "a", "new_str": "b"},
            {"command": "insert", "path": hostile.path, "insert_line": 0, "insert_text": "x"},
            {"command": "delete", "path": hostile.path},
            {"command": "rename", "old_path": hostile.path, "new_path": valid},
            {"command": "rename", "old_path": valid, "new_path": hostile.path},
        ]
        self.run(data.draw(st.sampled_from(commands)), expected, True)

    # --- the real tree equals the model -------------------------------------------

    @invariant()
    def tree_matches_model(self) -> None:
        if self.handler is None:
            return
        files: dict[Parts, str] = {}
        dirs: set[Parts] = set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath).relative_to(self.root).parts
            dirs.update((*here, d) for d in dirnames)
            for name in filenames:
                files[(*here, name)] = (Path(dirpath) / name).read_bytes().decode()
        assert dirs == self.dirs
        assert files == self.files


TestHandlerModel = HandlerMachine.TestCase
TestHandlerModel.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_insert_rule_of_the_model() -> None:
    """The model's own insert rule, pinned on the cases the handler documents."""
    assert insert_text_at("a\nb\n", 1, "x") == "a\nx\nb\n"
    assert insert_text_at("a\nb\n", 2, "x") == "a\nb\nx\n"
    assert insert_text_at("a\nb", 2, "x") == "a\nb\nx"
    assert insert_text_at("a\nb", 2, "") == "a\nb\n"
    assert insert_text_at("", 0, "x") == "x\n"
    assert insert_text_at("a\r\nb\r\n", 0, "x\ny") == "x\r\ny\r\na\r\nb\r\n"
    assert insert_text_at("a\nb\n", 0, "") == "\na\nb\n"
