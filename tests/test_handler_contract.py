"""The handler against the memory tool contract, string for string, on real directories."""

from __future__ import annotations

import base64
import logging
import os
import stat
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfs.backing import store_behind
from memfs.handler import MemoryHandler, Result
from memfs.handler.strings import human_size
from memfs.mount import state
from tests.fixtures.mount import MountHandle, require_fuse, sqlite_url

LIST_HEAD = (
    "Here're the files and directories up to 2 levels deep in {}, "
    "excluding hidden items and node_modules:"
)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(64))


def leftovers(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.name.startswith(".tmp-memfs-")]


@pytest.fixture(scope="module")
def shared_mount(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """One real mount for the module's store-backed runs: ``(mountpoint, state dir)``."""
    require_fuse()
    base = tmp_path_factory.mktemp("contract-mount")
    state_dir = base / "state"
    state_dir.mkdir()
    saved = os.environ.get(state.STATE_DIR_ENV)
    os.environ[state.STATE_DIR_ENV] = str(state_dir)
    handle = MountHandle(base / "mnt", sqlite_url(base / "s.db"), base / "s.db")
    try:
        handle.start()
        yield handle.mountpoint, state_dir
    finally:
        # Each test's own state directory came and went meanwhile: point at this one.
        os.environ[state.STATE_DIR_ENV] = str(state_dir)
        problems = handle.teardown()
        if saved is None:
            os.environ.pop(state.STATE_DIR_ENV, None)
        else:
            os.environ[state.STATE_DIR_ENV] = saved
        assert problems == []


# Every test runs twice: on a plain directory (the fd backend) and through a real memfs
# mount, where the commands are transactions on its store (the store backend); the model
# must not be able to tell them apart.
@pytest.fixture(params=["dir", "mount"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def root(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    backend: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    if backend == "dir":
        r = tmp_path / "mem"
    else:
        mountpoint, state_dir = request.getfixturevalue("shared_mount")
        monkeypatch.setenv(state.STATE_DIR_ENV, str(state_dir))
        r = mountpoint / f"t-{uuid.uuid4().hex[:12]}"
    yield r
    # Every test ends with no temp file behind, whatever it did.
    assert leftovers(r) == [] if r.exists() else True


def dir_only(backend: str, why: str) -> None:
    """Skip the store-backed run of a test about the directory backend's own means."""
    if backend != "dir":
        pytest.skip(f"directory backend only: {why}")


@pytest.fixture
def h(root: Path, backend: str) -> Iterator[MemoryHandler]:
    if backend == "dir":
        yield MemoryHandler(root)
        return
    root.mkdir(mode=0o700)
    backing = store_behind(root)
    assert backing is not None and backing.mounted
    try:
        yield MemoryHandler(
            root, store=backing.store, store_prefix=backing.prefix, neighbours=backing.link
        )
    finally:
        backing.close()


def ok(h: MemoryHandler, **cmd: Any) -> Any:
    res = h.execute(cmd)
    assert isinstance(res, Result)
    assert res.is_error is False, res.content
    return res.content


def err(h: MemoryHandler, **cmd: Any) -> str:
    res = h.execute(cmd)
    assert res.is_error is True, res.content
    assert isinstance(res.content, str)
    return res.content


def size_of(p: Path) -> str:
    return human_size(os.lstat(p).st_size)


# --- construction ----------------------------------------------------------------------


def test_root_is_created_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077 | 0o200)
    try:
        MemoryHandler(tmp_path / "deep" / "mem")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "deep" / "mem").st_mode) == 0o700


def test_missing_parents_of_the_root_are_0700_under_umask_0(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir(mode=0o755)
    os.chmod(tmp_path / "home", 0o755)
    old = os.umask(0)
    try:
        MemoryHandler(tmp_path / "home" / "share" / "app" / "mem")
    finally:
        os.umask(old)
    modes = {
        name: stat.S_IMODE(os.stat(tmp_path / "home" / name).st_mode)
        for name in ("share", "share/app", "share/app/mem")
    }
    assert modes == {"share": 0o700, "share/app": 0o700, "share/app/mem": 0o700}
    assert stat.S_IMODE(os.stat(tmp_path / "home").st_mode) == 0o755  # existing: untouched


def test_root_that_is_a_file_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(Exception, match=r"exists but is not a directory"):
        MemoryHandler(tmp_path / "f")


# --- view: directories -----------------------------------------------------------------


def test_view_empty_root(h: MemoryHandler, root: Path) -> None:
    expected = LIST_HEAD.format("/memories") + f"\n{size_of(root)}\t/memories"
    assert ok(h, command="view", path="/memories") == expected


def test_view_listing_two_levels_sorted_hidden_and_links_left_out(
    h: MemoryHandler, root: Path, tmp_path: Path, backend: str
) -> None:
    (root / "b.md").write_bytes(b"x" * 512)
    (root / "a").mkdir()
    (root / "a" / "big.txt").write_bytes(b"y" * 1536)
    (root / "a" / "deeper").mkdir()
    (root / "a" / "deeper" / "third.md").write_text("not shown: level 3")
    (root / ".hidden").write_text("h")
    (root / ".hdir").mkdir()
    (root / ".hdir" / "inside.md").write_text("h")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "pkg.js").write_text("n")
    (root / "a" / "node_modules").mkdir()
    (root / "link.md").symlink_to(tmp_path / "outside.md")
    (root / "dirlink").symlink_to(tmp_path)
    (root / "c.md").write_text("")
    if backend == "dir":  # a mount holds no special files (mknod is ENOSYS there)
        os.mkfifo(root / "fifo")
    expected = "\n".join(
        [
            LIST_HEAD.format("/memories"),
            f"{size_of(root)}\t/memories",
            f"{size_of(root / 'a')}\t/memories/a/",
            "1.5K\t/memories/a/big.txt",
            f"{size_of(root / 'a' / 'deeper')}\t/memories/a/deeper/",
            "512B\t/memories/b.md",
            "0B\t/memories/c.md",
        ]
    )
    assert ok(h, command="view", path="/memories") == expected


def test_view_with_trailing_slash_and_of_a_subdirectory(h: MemoryHandler, root: Path) -> None:
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "f.md").write_text("hello")
    (root / "d" / "e" / "g").mkdir()
    (root / "d" / "e" / "g" / "h.md").write_text("too deep")
    assert ok(h, command="view", path="/memories/") == "\n".join(
        [
            LIST_HEAD.format("/memories/"),
            f"{size_of(root)}\t/memories/",
            f"{size_of(root / 'd')}\t/memories/d/",
            f"{size_of(root / 'd' / 'e')}\t/memories/d/e/",
        ]
    )
    assert ok(h, command="view", path="/memories/d/e") == "\n".join(
        [
            LIST_HEAD.format("/memories/d/e"),
            f"{size_of(root / 'd' / 'e')}\t/memories/d/e",
            "5B\t/memories/d/e/f.md",
            f"{size_of(root / 'd' / 'e' / 'g')}\t/memories/d/e/g/",
            "8B\t/memories/d/e/g/h.md",
        ]
    )


def test_listing_leaves_out_names_the_gate_refuses(
    h: MemoryHandler, root: Path, backend: str
) -> None:
    dir_only(backend, "a mount refuses such names itself (EINVAL)")
    (root / "evil\nname.md").write_text("a newline in a name would forge a listing line")
    (root / "fine.md").write_text("ok")
    assert ok(h, command="view", path="/memories") == "\n".join(
        [LIST_HEAD.format("/memories"), f"{size_of(root)}\t/memories", "2B\t/memories/fine.md"]
    )


def test_listing_is_truncated_under_the_character_limit(h: MemoryHandler, root: Path) -> None:
    for i in range(1000):
        (root / f"note-{i:04d}.md").write_text("x")
    content = ok(h, command="view", path="/memories")
    lines = content.split("\n")
    body = "\n".join(lines[1:-1])
    assert len(body) <= 16_000
    shown = len(lines) - 3  # header, the root line, the truncation line
    assert lines[-1] == (
        f"[Listing truncated after {shown:,} of 1,000 entries to stay under 16,000 characters. "
        "View a subdirectory to see the rest.]"
    )
    assert lines[2] == "1B\t/memories/note-0000.md"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0B"),
        (512, "512B"),
        (1023, "1023B"),
        (1024, "1.0K"),
        (1536, "1.5K"),
        (4096, "4.0K"),
        (5632, "5.5K"),
        (1048575, "1.0M"),
        (1258291, "1.2M"),
        (3 * 1024**3, "3.0G"),
    ],
)
def test_human_size(n: int, text: str) -> None:
    assert human_size(n) == text


# --- view: files -----------------------------------------------------------------------


def test_view_file_numbered_without_phantom_line(h: MemoryHandler, root: Path) -> None:
    (root / "n.txt").write_bytes(b"Hello World\r\nline two\n\nlast\n")
    assert ok(h, command="view", path="/memories/n.txt") == (
        "Here's the content of /memories/n.txt with line numbers:\n"
        "     1\tHello World\n     2\tline two\n     3\t\n     4\tlast"
    )
    (root / "m.txt").write_bytes(b"no final newline")
    assert ok(h, command="view", path="/memories/m.txt") == (
        "Here's the content of /memories/m.txt with line numbers:\n     1\tno final newline"
    )


def test_view_empty_file_is_the_header_alone(h: MemoryHandler, root: Path) -> None:
    (root / "e.md").write_bytes(b"")
    expected = "Here's the content of /memories/e.md with line numbers:"
    assert ok(h, command="view", path="/memories/e.md") == expected
    assert err(h, command="view", path="/memories/e.md", view_range=[1, 1]) == (
        "Error: Invalid `view_range` parameter: [1, 1]. The file is empty; "
        "view it without a view_range."
    )


def test_view_missing(h: MemoryHandler) -> None:
    for p in ("/memories/nope.md", "/memories/no/such/dir.md"):
        assert err(h, command="view", path=p) == (
            f"The path {p} does not exist. Please provide a valid path."
        )


def test_view_through_a_file_is_missing(h: MemoryHandler, root: Path) -> None:
    (root / "f.md").write_text("x")
    assert err(h, command="view", path="/memories/f.md/x") == (
        "The path /memories/f.md/x does not exist. Please provide a valid path."
    )


def test_view_range(h: MemoryHandler, root: Path) -> None:
    (root / "r.md").write_text("a\nb\nc\nd\n")
    head = "Here's the content of /memories/r.md with line numbers:\n"
    assert ok(h, command="view", path="/memories/r.md", view_range=[2, 3]) == (
        head + "     2\tb\n     3\tc"
    )
    assert ok(h, command="view", path="/memories/r.md", view_range=[3, -1]) == (
        head + "     3\tc\n     4\td"
    )
    assert ok(h, command="view", path="/memories/r.md", view_range=[4, 4]) == head + "     4\td"


@pytest.mark.parametrize(
    ("view_range", "message"),
    [
        (
            [5, 3],
            "Error: Invalid `view_range` parameter: [5, 3]. Its first element should be "
            "within the range of lines of the file: [1, 4].",
        ),
        (
            [0, 2],
            "Error: Invalid `view_range` parameter: [0, 2]. Its first element should be "
            "within the range of lines of the file: [1, 4].",
        ),
        (
            [2, 9],
            "Error: Invalid `view_range` parameter: [2, 9]. Its second element should be "
            "-1 or within [2, 4] (the file has 4 lines).",
        ),
        (
            [3, 2],
            "Error: Invalid `view_range` parameter: [3, 2]. Its second element should be "
            "-1 or within [3, 4] (the file has 4 lines).",
        ),
        (
            [1, -2],
            "Error: Invalid `view_range` parameter: [1, -2]. Its second element should be "
            "-1 or within [1, 4] (the file has 4 lines).",
        ),
        *(
            (
                bad,
                f"Error: Invalid `view_range` parameter: {shown}. It should be a list of two "
                "integers [start, end], where end may be -1 for the end of the file.",
            )
            for bad, shown in [
                ([1], "[1]"),
                ([1, 2, 3], "[1, 2, 3]"),
                ("1-2", '"1-2"'),
                ([1.0, 2], "[1.0, 2]"),
                ([True, 2], "[true, 2]"),
                (["1", "2"], '["1", "2"]'),
                (3, "3"),
            ]
        ),
    ],
)
def test_view_range_errors(h: MemoryHandler, root: Path, view_range: object, message: str) -> None:
    (root / "r.md").write_text("a\nb\nc\nd\n")
    assert err(h, command="view", path="/memories/r.md", view_range=view_range) == message


def test_view_range_on_a_directory(h: MemoryHandler) -> None:
    assert err(h, command="view", path="/memories", view_range=[1, 2]) == (
        "Error: `view_range` applies to text files only, and /memories is not one."
    )


def test_view_truncates_long_output_and_pages_with_view_range(h: MemoryHandler, root: Path) -> None:
    lines = [f"line {i} of the long file" for i in range(1, 3001)]
    (root / "long.md").write_text("\n".join(lines) + "\n")
    numbered = [f"{i:>6}\t{text}" for i, text in enumerate(lines, 1)]
    head = "Here's the content of /memories/long.md with line numbers:\n"

    def cut_after(last: int, end: int = -1) -> str:
        return (
            head
            + "\n".join(numbered[:last])
            + f"\n[Output truncated at line {last:,} of 3,000 to stay under 16,000 characters. "
            f"Use view_range [{last + 1}, {end}] to see the rest.]"
        )

    # The most whole lines that fit in 16,000 characters with the header and the hint.
    last = 1
    while len(cut_after(last + 1)) <= 16_000:
        last += 1
    assert ok(h, command="view", path="/memories/long.md") == cut_after(last)
    page = ok(h, command="view", path="/memories/long.md", view_range=[last + 1, -1])
    assert page.split("\n")[1] == numbered[last]
    ranged = ok(h, command="view", path="/memories/long.md", view_range=[1, 2999])
    assert ranged == cut_after(last, 2999)


def _cut_line_view(content: str) -> tuple[str, str, int]:
    """(first numbered line, hint line, characters shown of the cut line)."""
    header, line, hint = content.split("\n")
    assert header.startswith("Here's the content of ")
    return line, hint, len(line) - len("     1\t")


def test_view_cuts_a_first_line_too_long_to_show_whole(h: MemoryHandler, root: Path) -> None:
    (root / "one.md").write_text("z" * 20_000 + "\nsecond\n")
    content = ok(h, command="view", path="/memories/one.md")
    assert len(content) == 16_000  # as much of the line as fits with the hint
    line, hint, shown = _cut_line_view(content)
    assert line == "     1\t" + "z" * shown
    assert hint == (
        f"[Output truncated inside line 1 of 2 after {shown:,} of its 20,000 characters to "
        "stay under 16,000 characters; view cannot show more of one line. "
        "Use view_range [2, -1] to see the rest.]"
    )
    assert ok(h, command="view", path="/memories/one.md", view_range=[2, -1]).endswith(
        "     2\tsecond"
    )


def test_view_of_a_one_line_file_of_100_kib_is_cut_too(h: MemoryHandler, root: Path) -> None:
    flat = '{"k": "' + "v" * (102_400 - 9) + '"}'  # one line of 100 KiB, no newline
    (root / "flat.json").write_text(flat)
    for view_range in (None, [1, -1], [1, 1]):
        extra = {} if view_range is None else {"view_range": view_range}
        content = ok(h, command="view", path="/memories/flat.json", **extra)
        assert len(content) <= 16_000
        line, hint, shown = _cut_line_view(content)
        assert line == "     1\t" + flat[:shown]
        assert hint == (
            f"[Output truncated inside line 1 of 1 after {shown:,} of its 102,400 characters "
            "to stay under 16,000 characters; view cannot show more of one line.]"
        )


def test_a_long_line_after_short_ones_starts_the_next_page(h: MemoryHandler, root: Path) -> None:
    (root / "mixed.md").write_text("a\nb\n" + "y" * 30_000 + "\nz\n")
    first = ok(h, command="view", path="/memories/mixed.md")
    assert first == (
        "Here's the content of /memories/mixed.md with line numbers:\n     1\ta\n     2\tb\n"
        "[Output truncated at line 2 of 4 to stay under 16,000 characters. "
        "Use view_range [3, -1] to see the rest.]"
    )
    page = ok(h, command="view", path="/memories/mixed.md", view_range=[3, -1])
    assert len(page) <= 16_000
    assert page.endswith(
        "view cannot show more of one line. Use view_range [4, -1] to see the rest.]"
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(
        st.one_of(st.integers(0, 80), st.integers(0, 40_000)), min_size=1, max_size=400
    ).filter(lambda sizes: sum(sizes) <= 100_000),
    st.integers(1, 400),
)
def test_every_view_fits_16000_characters(tmp_path: Path, sizes: list[int], start: int) -> None:
    h = MemoryHandler(tmp_path / "prop")
    (tmp_path / "prop" / "f.md").write_text("".join("x" * n + "\n" for n in sizes))
    start = min(start, len(sizes))
    for extra in ({}, {"view_range": [start, -1]}, {"view_range": [start, start]}):
        content = ok(h, command="view", path="/memories/f.md", **extra)
        assert len(content) <= 16_000
        if not content.endswith("]"):  # not cut: every line of the range is there
            first = start if extra else 1
            last = start if extra.get("view_range", [0, -1])[1] == start else len(sizes)
            assert content.count("\n") == last - first + 1


def test_a_cut_listing_fits_16000_characters_with_its_hint(h: MemoryHandler, root: Path) -> None:
    for i in range(1000):
        (root / f"note-{i:04d}.md").write_text("x")
    content = ok(h, command="view", path="/memories")
    assert len(content) <= 16_000
    assert content.endswith("View a subdirectory to see the rest.]")


def test_view_line_limit(h: MemoryHandler, root: Path) -> None:
    (root / "many.md").write_bytes(b"\n" * 1_000_000)
    assert err(h, command="view", path="/memories/many.md") == (
        "File /memories/many.md exceeds maximum line limit of 999,999 lines."
    )
    (root / "max.md").write_bytes(b"\n" * 999_999)
    assert ok(h, command="view", path="/memories/max.md", view_range=[999_999, -1]).endswith(
        "\n999999\t"
    )


def test_view_non_utf8_names_the_offset(h: MemoryHandler, root: Path) -> None:
    (root / "bin.md").write_bytes(b"caf\xc3\xa9 ok\n\xff rest")
    message = (
        "Error: The file /memories/bin.md is not valid UTF-8 text: the byte 0xff at byte "
        "offset 9 cannot be decoded. memfs only shows and edits UTF-8 text."
    )
    assert err(h, command="view", path="/memories/bin.md") == message
    assert err(h, command="str_replace", path="/memories/bin.md", old_str="ok") == message
    assert err(h, command="insert", path="/memories/bin.md", insert_line=0, insert_text="x") == (
        message
    )
    assert (root / "bin.md").read_bytes() == b"caf\xc3\xa9 ok\n\xff rest"


@pytest.mark.parametrize(
    ("name", "data", "media"),
    [("p.png", PNG, "image/png"), ("q.JPG", JPEG, "image/jpeg"), ("r.jpeg", JPEG, "image/jpeg")],
)
def test_view_image(h: MemoryHandler, root: Path, name: str, data: bytes, media: str) -> None:
    (root / name).write_bytes(data)
    assert ok(h, command="view", path=f"/memories/{name}") == [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": media,
                "data": base64.b64encode(data).decode(),
            },
        }
    ]


def test_view_image_errors(h: MemoryHandler, root: Path) -> None:
    (root / "fake.png").write_text("not a picture")
    assert err(h, command="view", path="/memories/fake.png") == (
        "Error: The file /memories/fake.png has a PNG name but does not hold a PNG image."
    )
    (root / "huge.jpg").write_bytes(JPEG + b"\x00" * (5 * 1024 * 1024))
    assert err(h, command="view", path="/memories/huge.jpg") == (
        f"Error: The image /memories/huge.jpg is {len(JPEG) + 5 * 1024 * 1024:,} bytes; "
        "view returns images of at most 5,242,880 bytes."
    )
    (root / "p.png").write_bytes(PNG)
    assert err(h, command="view", path="/memories/p.png", view_range=[1, 2]) == (
        "Error: `view_range` applies to text files only, and /memories/p.png is not one."
    )


def test_view_fifo_is_refused_without_hanging(h: MemoryHandler, root: Path, backend: str) -> None:
    dir_only(backend, "a mount holds no special files")
    os.mkfifo(root / "pipe")
    assert err(h, command="view", path="/memories/pipe") == (
        "Error: The path /memories/pipe is not a regular file or directory; "
        "memfs only handles those."
    )


# --- create ----------------------------------------------------------------------------


def test_create_makes_file_0600_and_parents_0700(h: MemoryHandler, root: Path) -> None:
    old = os.umask(0o277)  # strips the owner's write bit from anything not chmod-ed
    try:
        assert ok(h, command="create", path="/memories/a/b/c.md", file_text="hi\n") == (
            "File created successfully at: /memories/a/b/c.md"
        )
    finally:
        os.umask(old)
    assert (root / "a" / "b" / "c.md").read_bytes() == b"hi\n"
    assert stat.S_IMODE(os.stat(root / "a" / "b" / "c.md").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(root / "a").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(root / "a" / "b").st_mode) == 0o700


def test_create_existing_file_is_refused_and_kept(h: MemoryHandler, root: Path) -> None:
    (root / "k.md").write_text("keep me")
    assert err(h, command="create", path="/memories/k.md", file_text="new") == (
        "Error: File /memories/k.md already exists"
    )
    assert (root / "k.md").read_text() == "keep me"


def test_create_with_overwrite_replaces_and_keeps_the_mode(root: Path) -> None:
    h = MemoryHandler(root, overwrite=True)
    (root / "k.md").write_text("old")
    os.chmod(root / "k.md", 0o640)
    ino = os.stat(root / "k.md").st_ino
    assert ok(h, command="create", path="/memories/k.md", file_text="new") == (
        "File created successfully at: /memories/k.md"
    )
    assert (root / "k.md").read_text() == "new"
    assert stat.S_IMODE(os.stat(root / "k.md").st_mode) == 0o640
    assert os.stat(root / "k.md").st_ino != ino  # replaced by rename, not written in place


@pytest.mark.parametrize("overwrite", [False, True])
def test_create_on_a_directory_is_refused(root: Path, overwrite: bool) -> None:
    h = MemoryHandler(root, overwrite=overwrite)
    (root / "d").mkdir()
    (root / "d" / "x.md").write_text("inside")
    for p in ("/memories/d", "/memories/d/", "/memories"):
        assert err(h, command="create", path=p, file_text="x") == (
            f"Error: The path {p} is a directory; create only writes files."
        )
    assert (root / "d" / "x.md").read_text() == "inside"


def test_create_under_a_file_is_refused(h: MemoryHandler, root: Path) -> None:
    (root / "f.md").write_text("x")
    assert err(h, command="create", path="/memories/f.md/g/h.md", file_text="y") == (
        "Error: The path /memories/f.md/g/h.md cannot be used: /memories/f.md is a file, "
        "not a directory."
    )


def test_create_size_cap_writes_nothing(root: Path) -> None:
    h = MemoryHandler(root, max_file_bytes=10)
    text = "é" * 6  # 12 UTF-8 bytes, 6 characters
    assert err(h, command="create", path="/memories/new/x.md", file_text=text) == (
        "Error: The file_text for /memories/new/x.md is 12 bytes; memory files are limited "
        "to 10 bytes. Nothing was written."
    )
    assert list(root.iterdir()) == []
    assert ok(h, command="create", path="/memories/x.md", file_text="é" * 5) == (
        "File created successfully at: /memories/x.md"
    )


def test_default_cap_is_100_kib(h: MemoryHandler, root: Path) -> None:
    assert err(h, command="create", path="/memories/big.md", file_text="x" * 123_456) == (
        "Error: The file_text for /memories/big.md is 123,456 bytes; memory files are "
        "limited to 102,400 bytes. Nothing was written."
    )
    ok(h, command="create", path="/memories/big.md", file_text="x" * 102_400)
    assert (root / "big.md").stat().st_size == 102_400


# --- str_replace -----------------------------------------------------------------------

EDITED = (
    "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
)


def test_str_replace_snippet(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert ok(
        h, command="str_replace", path="/memories/s.md", old_str="line 5", new_str="five\n5b"
    ) == (
        EDITED
        + "     3\tline 3\n     4\tline 4\n     5\tfive\n     6\t5b\n     7\tline 6\n     8\tline 7"
    )
    assert ok(h, command="str_replace", path="/memories/s.md", old_str="line 1\n", new_str="") == (
        EDITED + "     1\tline 2\n     2\tline 3\n     3\tline 4"
    )


def test_str_replace_multiline_and_literal_specials(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("alpha\nbeta\ngamma\n")
    ok(
        h,
        command="str_replace",
        path="/memories/s.md",
        old_str="alpha\nbeta",
        new_str=r"$& \1 \\ \g<0> $1",
    )
    assert (root / "s.md").read_text() == "$& \\1 \\\\ \\g<0> $1\ngamma\n"
    ok(h, command="str_replace", path="/memories/s.md", old_str=r"\1 \\", new_str="(.*)")
    assert (root / "s.md").read_text() == "$& (.*) \\g<0> $1\ngamma\n"


def test_str_replace_lf_lines_copied_from_view_match_a_crlf_file(
    h: MemoryHandler, root: Path
) -> None:
    (root / "w.md").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert ok(
        h, command="str_replace", path="/memories/w.md", old_str="one\ntwo", new_str="1\n2\n2b"
    ) == (EDITED + "     1\t1\n     2\t2\n     3\t2b\n     4\tthree")
    assert (root / "w.md").read_bytes() == b"1\r\n2\r\n2b\r\nthree\r\n"
    ok(h, command="str_replace", path="/memories/w.md", old_str="2b\r\n", new_str="")
    assert (root / "w.md").read_bytes() == b"1\r\n2\r\nthree\r\n"
    assert err(h, command="str_replace", path="/memories/w.md", old_str="2\nfour", new_str="") == (
        "No replacement was performed, old_str `2\nfour` did not appear verbatim in /memories/w.md."
    )


def test_str_replace_without_new_str_deletes(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("keep DROP keep\n")
    ok(h, command="str_replace", path="/memories/s.md", old_str="DROP ")
    assert (root / "s.md").read_text() == "keep keep\n"
    ok(h, command="str_replace", path="/memories/s.md", old_str="keep\n", new_str=None)
    assert (root / "s.md").read_text() == "keep "


def test_str_replace_errors(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("one two\ntwo\nthree two\n")
    (root / "d").mkdir()
    assert err(h, command="str_replace", path="/memories/s.md", old_str="four", new_str="x") == (
        "No replacement was performed, old_str `four` did not appear verbatim in /memories/s.md."
    )
    assert err(h, command="str_replace", path="/memories/s.md", old_str="two", new_str="x") == (
        "No replacement was performed. Multiple occurrences of old_str `two` in lines: 1, 2, 3. "
        "Please ensure it is unique"
    )
    assert err(h, command="str_replace", path="/memories/s.md", old_str="", new_str="x") == (
        "Error: No replacement was performed in /memories/s.md: `old_str` is empty. "
        "Give the exact text to replace."
    )
    for p in ("/memories/none.md", "/memories/d", "/memories", "/memories/d/x/y.md"):
        assert err(h, command="str_replace", path=p, old_str="a", new_str="b") == (
            f"Error: The path {p} does not exist. Please provide a valid path."
        )
    assert (root / "s.md").read_text() == "one two\ntwo\nthree two\n"


def test_str_replace_overlapping_matches_are_ambiguous(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("x\naaa\n")
    assert err(h, command="str_replace", path="/memories/s.md", old_str="aa", new_str="b") == (
        "No replacement was performed. Multiple occurrences of old_str `aa` in lines: 2. "
        "Please ensure it is unique"
    )


def test_str_replace_over_the_cap_writes_nothing(root: Path) -> None:
    h = MemoryHandler(root, max_file_bytes=20)
    (root / "s.md").write_text("0123456789")
    assert err(h, command="str_replace", path="/memories/s.md", old_str="5", new_str="x" * 12) == (
        "Error: The edit would make /memories/s.md 21 bytes; memory files are limited to "
        "20 bytes. Nothing was written."
    )
    assert (root / "s.md").read_text() == "0123456789"


def test_edits_keep_mode(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("a\n")
    os.chmod(root / "s.md", 0o644)
    ok(h, command="str_replace", path="/memories/s.md", old_str="a", new_str="b")
    ok(h, command="insert", path="/memories/s.md", insert_line=0, insert_text="z")
    assert stat.S_IMODE(os.stat(root / "s.md").st_mode) == 0o644
    assert (root / "s.md").read_text() == "z\nb\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_edits_keep_a_persons_ownership(h: MemoryHandler, root: Path) -> None:
    (root / "s.md").write_text("a\n")
    os.chown(root / "s.md", 1234, 2345)
    ok(h, command="str_replace", path="/memories/s.md", old_str="a", new_str="b")
    st = os.stat(root / "s.md")
    assert (st.st_uid, st.st_gid, (root / "s.md").read_text()) == (1234, 2345, "b\n")


# --- insert ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "line", "text", "after"),
    [
        (b"a\nb\n", 0, "x", b"x\na\nb\n"),
        (b"a\nb\n", 1, "x", b"a\nx\nb\n"),
        (b"a\nb\n", 2, "x", b"a\nb\nx\n"),
        (b"a\nb\n", 1, "x\ny\n", b"a\nx\ny\nb\n"),
        (b"a\nb\n", 2, "x\n", b"a\nb\nx\n"),
        (b"a\nb", 2, "x", b"a\nb\nx"),
        (b"a\nb", 2, "x\n", b"a\nb\nx\n"),
        (b"a\nb", 1, "x", b"a\nx\nb"),
        (b"a\r\nb\r\n", 1, "x\ny", b"a\r\nx\r\ny\r\nb\r\n"),
        (b"a\r\nb\r\n", 2, "x", b"a\r\nb\r\nx\r\n"),
        (b"a\r\nb", 2, "x", b"a\r\nb\r\nx"),
        (b"a\r\nb\r\n", 0, "x\r\n", b"x\r\na\r\nb\r\n"),
        (b"a\nb\n", 1, "x\r\n", b"a\nx\r\nb\n"),
        (b"", 0, "x", b"x\n"),
        (b"", 0, "x\ny", b"x\ny\n"),
        (b"a\n", 0, "", b"\na\n"),
        (b"a\n", 1, "", b"a\n\n"),
        (b"a", 1, "", b"a\n"),
        (b"\xc3\xa9\n", 1, "\u00fc", "\u00e9\n\u00fc\n".encode()),
    ],
)
def test_insert_is_byte_exact(
    h: MemoryHandler, root: Path, before: bytes, line: int, text: str, after: bytes
) -> None:
    (root / "i.md").write_bytes(before)
    assert ok(h, command="insert", path="/memories/i.md", insert_line=line, insert_text=text) == (
        "The file /memories/i.md has been edited."
    )
    assert (root / "i.md").read_bytes() == after


@pytest.mark.parametrize(
    ("value", "shown"),
    [(-1, "-1"), (4, "4"), ("1", '"1"'), (1.0, "1.0"), (True, "true"), ([1], "[1]")],
)
def test_insert_bad_line(h: MemoryHandler, root: Path, value: object, shown: str) -> None:
    (root / "i.md").write_text("a\nb\nc\n")
    assert err(h, command="insert", path="/memories/i.md", insert_line=value, insert_text="x") == (
        f"Error: Invalid `insert_line` parameter: {shown}. It should be within the range of "
        "lines of the file: [0, 3]"
    )
    assert (root / "i.md").read_text() == "a\nb\nc\n"


def test_insert_missing_and_directory(h: MemoryHandler, root: Path) -> None:
    (root / "d").mkdir()
    for p in ("/memories/none.md", "/memories/d", "/memories"):
        assert err(h, command="insert", path=p, insert_line=0, insert_text="x") == (
            f"Error: The path {p} does not exist"
        )


def test_insert_over_the_cap_writes_nothing(root: Path) -> None:
    h = MemoryHandler(root, max_file_bytes=5)
    (root / "i.md").write_text("abc\n")
    assert err(h, command="insert", path="/memories/i.md", insert_line=1, insert_text="d") == (
        "Error: The edit would make /memories/i.md 6 bytes; memory files are limited to "
        "5 bytes. Nothing was written."
    )
    assert (root / "i.md").read_text() == "abc\n"


# --- delete ----------------------------------------------------------------------------


def test_delete_file_and_directory_recursively(h: MemoryHandler, root: Path) -> None:
    (root / "f.md").write_text("x")
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "g.md").write_text("y")
    (root / "d" / ".hidden").write_text("z")
    assert ok(h, command="delete", path="/memories/f.md") == "Successfully deleted /memories/f.md"
    assert ok(h, command="delete", path="/memories/d/") == "Successfully deleted /memories/d/"
    assert list(root.iterdir()) == []


def test_delete_errors(h: MemoryHandler, root: Path) -> None:
    (root / "keep.md").write_text("x")
    for p in ("/memories", "/memories/"):
        assert err(h, command="delete", path=p) == (
            "Error: Cannot delete the /memories directory itself"
        )
    for p in ("/memories/none.md", "/memories/no/dir.md", "/memories/keep.md/x"):
        assert err(h, command="delete", path=p) == f"Error: The path {p} does not exist"
    assert (root / "keep.md").read_text() == "x"


# --- rename ----------------------------------------------------------------------------


def test_rename_file_and_directory(h: MemoryHandler, root: Path) -> None:
    (root / "a.md").write_text("A")
    (root / "d").mkdir()
    (root / "d" / "x.md").write_text("X")
    assert ok(
        h, command="rename", old_path="/memories/a.md", new_path="/memories/new/deep/b.md"
    ) == ("Successfully renamed /memories/a.md to /memories/new/deep/b.md")
    assert (root / "new" / "deep" / "b.md").read_text() == "A"
    assert stat.S_IMODE(os.stat(root / "new").st_mode) == 0o700
    assert not (root / "a.md").exists()
    assert ok(h, command="rename", old_path="/memories/d", new_path="/memories/e") == (
        "Successfully renamed /memories/d to /memories/e"
    )
    assert (root / "e" / "x.md").read_text() == "X"


def test_rename_never_overwrites(h: MemoryHandler, root: Path) -> None:
    (root / "a.md").write_text("A")
    (root / "b.md").write_text("B")
    (root / "d").mkdir()
    for dest in ("/memories/b.md", "/memories/d", "/memories/d/", "/memories", "/memories/a.md"):
        assert err(h, command="rename", old_path="/memories/a.md", new_path=dest) == (
            f"Error: The destination {dest} already exists"
        )
    assert (root / "a.md").read_text() == "A"
    assert (root / "b.md").read_text() == "B"
    assert list((root / "d").iterdir()) == []


def test_rename_without_renameat2_still_never_overwrites(
    h: MemoryHandler, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exists-check fallback used where RENAME_NOREPLACE is unavailable."""
    from memfs.handler import posix

    monkeypatch.setattr(posix, "_renameat2", None)
    (root / "a.md").write_text("A")
    (root / "b.md").write_text("B")
    assert err(h, command="rename", old_path="/memories/a.md", new_path="/memories/b.md") == (
        "Error: The destination /memories/b.md already exists"
    )
    assert ok(h, command="rename", old_path="/memories/a.md", new_path="/memories/c.md") == (
        "Successfully renamed /memories/a.md to /memories/c.md"
    )
    assert err(h, command="create", path="/memories/b.md", file_text="new") == (
        "Error: File /memories/b.md already exists"
    )
    assert [(p.name, p.read_text()) for p in sorted(root.iterdir())] == [
        ("b.md", "B"),
        ("c.md", "A"),
    ]


def test_rename_errors(h: MemoryHandler, root: Path) -> None:
    (root / "d" / "e").mkdir(parents=True)
    (root / "f.md").write_text("x")
    for p in ("/memories", "/memories/"):
        assert err(h, command="rename", old_path=p, new_path="/memories/z") == (
            "Error: Cannot rename the /memories directory itself"
        )
    assert err(h, command="rename", old_path="/memories/none", new_path="/memories/z/y") == (
        "Error: The path /memories/none does not exist"
    )
    assert not (root / "z").exists()  # no destination parent made for a failed rename
    assert err(h, command="rename", old_path="/memories/d", new_path="/memories/d/e/f") == (
        "Error: Cannot move /memories/d into itself (/memories/d/e/f). Nothing was renamed."
    )
    assert err(h, command="rename", old_path="/memories/d", new_path="/memories/f.md/x") == (
        "Error: The path /memories/f.md/x cannot be used: /memories/f.md is a file, "
        "not a directory."
    )
    assert sorted(p.name for p in root.iterdir()) == ["d", "f.md"]


# --- input validation and robustness ---------------------------------------------------


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        ({"command": "frobnicate"}, "Error: unknown command frobnicate"),
        ({"command": 7}, "Error: unknown command 7"),
        (
            {"path": "/memories"},
            "Error: The memory tool input needs a `command` "
            "(one of view, create, str_replace, insert, delete, rename).",
        ),
        ({"command": "view"}, "Error: The `view` command needs `path` (a string)."),
        (
            {"command": "view", "path": 3},
            "Error: The `view` command needs `path` (a string), got a number.",
        ),
        (
            {"command": "create", "path": "/memories/x"},
            "Error: The `create` command needs `file_text` (a string).",
        ),
        (
            {"command": "create", "path": "/memories/x", "file_text": ["a"]},
            "Error: The `create` command needs `file_text` (a string), got an array.",
        ),
        (
            {"command": "str_replace", "path": "/memories/x"},
            "Error: The `str_replace` command needs `old_str` (a string).",
        ),
        (
            {"command": "str_replace", "path": "/memories/x", "old_str": "a", "new_str": 1},
            "Error: The `str_replace` command needs `new_str` (a string), got a number.",
        ),
        (
            {"command": "insert", "path": "/memories/x", "insert_text": "a"},
            "Error: The `insert` command needs `insert_line` (an integer).",
        ),
        (
            {"command": "insert", "path": "/memories/x", "insert_line": 0},
            "Error: The `insert` command needs `insert_text` (a string).",
        ),
        (
            {"command": "rename", "old_path": "/memories/a"},
            "Error: The `rename` command needs `new_path` (a string).",
        ),
        (
            {"command": "rename", "old_path": {}, "new_path": "/memories/b"},
            "Error: The `rename` command needs `old_path` (a string), got an object.",
        ),
        (
            {"command": "create", "path": "/memories/x", "file_text": "bad \ud800 here"},
            "Error: The `file_text` of the `create` command contains an unpaired surrogate "
            "at character 4, which cannot be stored as UTF-8. Nothing was changed.",
        ),
        (
            {"command": "view", "path": "/etc/passwd"},
            "Error: The path /etc/passwd is not allowed: it must be /memories or start with "
            "/memories/.",
        ),
        (
            {"command": "rename", "old_path": "/memories/a", "new_path": "/memories/../b"},
            "Error: The path /memories/../b is not allowed: it contains a '..' segment.",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(
    h: MemoryHandler, root: Path, cmd: dict[str, Any], message: str
) -> None:
    assert err(h, **cmd) == message
    assert list(root.iterdir()) == []


def test_non_mapping_input(h: MemoryHandler) -> None:
    for bad in (None, "view /memories", ["view"], 3):
        res = h.execute(bad)
        assert res == Result(
            "Error: The memory tool input must be an object with a `command` field.", True
        )


class Exploding(Mapping[str, Any]):
    """An input whose field lookups fail: the handler must report, not raise."""

    def __getitem__(self, key: str) -> Any:
        if key == "command":
            return "view"
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        return iter(["command", "path"])

    def __len__(self) -> int:
        return 2


def test_internal_error_is_logged_and_reported(
    h: MemoryHandler, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="memfs.handler"):
        res = h.execute(Exploding())
    assert res == Result(
        "Error: memfs hit an internal error while running `view`; it has been logged. "
        "The operation may not have completed: view the path to check.",
        True,
    )
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)


def test_os_error_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "gone"
    h = MemoryHandler(root)
    root.rmdir()
    assert err(h, command="view", path="/memories") == (
        "Error: The `view` command failed: No such file or directory (ENOENT). "
        "The operation may not have completed: view the path to check."
    )


def test_per_command_methods(h: MemoryHandler, root: Path) -> None:
    assert h.create("/memories/m.md", "a\n") == Result(
        "File created successfully at: /memories/m.md", False
    )
    assert h.insert("/memories/m.md", 1, "b") == Result(
        "The file /memories/m.md has been edited.", False
    )
    assert h.str_replace("/memories/m.md", "a\n") == Result(EDITED + "     1\tb", False)
    assert h.view("/memories/m.md", [1, -1]) == Result(
        "Here's the content of /memories/m.md with line numbers:\n     1\tb", False
    )
    assert h.rename("/memories/m.md", "/memories/n.md").is_error is False
    assert h.delete("/memories/n.md") == Result("Successfully deleted /memories/n.md", False)
    assert list(root.iterdir()) == []


# --- the same contract on a memfs FUSE mount ---------------------------------------------

SCRIPT: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": "/memories/a/b.md", "file_text": "one\r\ntwo\r\n"},
    {"command": "create", "path": "/memories/a/b.md", "file_text": "again"},
    {"command": "str_replace", "path": "/memories/a/b.md", "old_str": "two", "new_str": "2"},
    {"command": "str_replace", "path": "/memories/a/b.md", "old_str": "nope", "new_str": "2"},
    {"command": "insert", "path": "/memories/a/b.md", "insert_line": 0, "insert_text": "zero"},
    {"command": "insert", "path": "/memories/a/b.md", "insert_line": 9, "insert_text": "x"},
    {"command": "view", "path": "/memories/a/b.md"},
    {"command": "view", "path": "/memories/a/b.md", "view_range": [2, -1]},
    {"command": "rename", "old_path": "/memories/a/b.md", "new_path": "/memories/c/d.md"},
    {"command": "create", "path": "/memories/c/e.md", "file_text": "e\n"},
    {"command": "rename", "old_path": "/memories/c/d.md", "new_path": "/memories/c/e.md"},
    {"command": "rename", "old_path": "/memories/c", "new_path": "/memories/c/sub"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/c"},
    {"command": "delete", "path": "/memories/c/e.md"},
    {"command": "delete", "path": "/memories/c"},
    {"command": "delete", "path": "/memories"},
    {"command": "view", "path": "/memories/c"},
    {"command": "view", "path": "/memories"},
]


def run_script(h: MemoryHandler) -> list[tuple[Any, bool]]:
    out = []
    for cmd in SCRIPT:
        content, is_error = h.execute(cmd)
        if isinstance(content, str) and content.startswith("Here're the files"):
            # Directory sizes are the file system's own (4.0K on ext4, 0B on the mount).
            head, *rows = content.split("\n")
            content = "\n".join([head, *(row.split("\t", 1)[1] for row in rows)])
        out.append((content, is_error))
    return out


@pytest.mark.fuse
def test_same_results_on_a_memfs_mount(memfs_mount: Any, tmp_path: Path) -> None:
    mountpoint = memfs_mount.mountpoint
    on_mount = run_script(MemoryHandler(mountpoint))
    on_disk = run_script(MemoryHandler(tmp_path / "plain"))
    assert on_mount == on_disk
    assert on_mount[3][1] is False  # the edits did happen
    left = [p.name for p in mountpoint.rglob("*")]
    assert left == ["a"]  # no temp file of any name left on the mount


# --- execute never raises ----------------------------------------------------------------

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=5),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.lists(st.integers(min_value=-2, max_value=4), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(
        ["/memories", "/memories/", "/memories/a", "/memories/a/b.md", "/memories/c.md"]
    ),
)
_commands = st.fixed_dictionaries(
    {
        "command": st.one_of(
            st.sampled_from(["view", "create", "str_replace", "insert", "delete", "rename"]),
            _values,
        )
    },
    optional={
        name: _values
        for name in (
            "path",
            "file_text",
            "old_str",
            "new_str",
            "insert_line",
            "insert_text",
            "old_path",
            "new_path",
            "view_range",
        )
    },
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(_commands, min_size=1, max_size=6))
def test_execute_never_raises(tmp_path: Path, cmds: list[dict[str, Any]]) -> None:
    h = MemoryHandler(tmp_path / "fuzz")
    (tmp_path / "outside.md").write_text("outside")
    for cmd in cmds:
        res = h.execute(cmd)
        assert isinstance(res, Result)
        assert isinstance(res.is_error, bool)
        assert isinstance(res.content, str) and res.content
        assert not res.content.startswith("Error: memfs hit an internal error"), (cmd, res)
    assert leftovers(tmp_path / "fuzz") == []
    assert (tmp_path / "outside.md").read_text() == "outside"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fuzz", "outside.md"]
