"""Unit tests of the path gate: canonical forms accepted, the hostile corpus refused."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memfs.errors import MemfsError, PathError
from memfs.paths import (
    MAX_DEPTH,
    MAX_PATH_BYTES,
    MAX_SEGMENT_BYTES,
    ROOT_PATH,
    MemPath,
    name_problem,
    parent_of,
    parse,
    parse_rel,
)
from tests.hostile_paths import HOSTILE, HOSTILE_STRINGS, Hostile

ACCEPTED: list[tuple[str, tuple[str, ...]]] = [
    ("/memories", ()),
    ("/memories/", ()),
    ("/memories/a", ("a",)),
    ("/memories/a/", ("a",)),
    ("/memories/a/b/c.md", ("a", "b", "c.md")),
    ("/memories/café.md", ("café.md",)),
    ("/memories/日本語/メモ.txt", ("日本語", "メモ.txt")),
    ("/memories/100%", ("100%",)),
    ("/memories/%41", ("%41",)),
    ("/memories/%zz", ("%zz",)),
    ("/memories/%", ("%",)),
    ("/memories/.hidden", (".hidden",)),
    ("/memories/node_modules", ("node_modules",)),
    ("/memories/a..b", ("a..b",)),
    ("/memories/...a", ("...a",)),
    ("/memories/a b", ("a b",)),
    ("/memories/consul.md", ("consul.md",)),
    ("/memories/memfs-notes", ("memfs-notes",)),
    ("/memories/😀", ("😀",)),
    # A slash lookalike is text when no dot segment stands next to it.
    ("/memories/1\u22152 cup.md", ("1\u22152 cup.md",)),
    ("/memories/a\u2044b", ("a\u2044b",)),
    ("/memories/x..\u2215y", ("x..\u2215y",)),
]


@pytest.mark.parametrize(("path", "parts"), ACCEPTED, ids=[p for p, _ in ACCEPTED])
def test_accepted_paths_parse_to_their_canonical_parts(path: str, parts: tuple[str, ...]) -> None:
    parsed = parse(path)
    assert parsed.parts == parts
    assert parsed.model == (path[:-1] if path.endswith("/") else path)
    # The canonical form is a fixed point of the gate.
    assert parse(parsed.model) == parsed


def test_root_forms_are_the_root_path() -> None:
    assert parse("/memories") == ROOT_PATH
    assert parse("/memories/").is_root
    assert ROOT_PATH.rel == ""
    assert ROOT_PATH.model == "/memories"
    assert ROOT_PATH.name == ""


def test_mempath_properties() -> None:
    p = parse("/memories/a/b/c.md")
    assert p.rel == "a/b/c.md"
    assert p.model == "/memories/a/b/c.md"
    assert str(p) == "/memories/a/b/c.md"
    assert p.name == "c.md"
    assert p.parent == MemPath(("a", "b"))
    assert p.parent.child("c.md") == p
    assert p.is_within(parse("/memories/a"))
    assert p.is_within(ROOT_PATH)
    assert p.is_within(p)
    assert not p.is_within(parse("/memories/a/b/c"))
    assert not parse("/memories/ab").is_within(parse("/memories/a"))
    assert not p.is_root


def test_limits_are_inclusive() -> None:
    deepest = "/memories/" + "/".join(["d"] * MAX_DEPTH)
    assert len(parse(deepest).parts) == MAX_DEPTH
    assert parse("/memories/" + "a" * MAX_SEGMENT_BYTES).name == "a" * MAX_SEGMENT_BYTES
    two_byte = "é" * 127 + "a"  # 255 bytes in 128 characters
    assert len(two_byte.encode()) == MAX_SEGMENT_BYTES
    assert parse("/memories/" + two_byte).name == two_byte
    filler = MAX_PATH_BYTES - len("/memories/") - 3 * len("/")
    segs = [
        "x" * (filler // 4),
        "y" * (filler // 4),
        "z" * (filler // 4),
        "w" * (filler - 3 * (filler // 4)),
    ]
    longest = "/memories/" + "/".join(segs)
    assert len(longest.encode()) == MAX_PATH_BYTES
    assert parse(longest).parts == tuple(segs)


def test_corpus_is_large_and_covers_every_category() -> None:
    assert len(HOSTILE) >= 120
    categories = {h.category for h in HOSTILE}
    assert categories >= {
        "prefix",
        "dot-segment",
        "trailing",
        "empty-segment",
        "backslash",
        "percent",
        "control",
        "format",
        "lookalike",
        "non-nfc",
        "length",
        "reserved",
        "non-string",
    }


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.label for h in HOSTILE])
def test_hostile_path_is_refused_with_one_sentence(hostile: Hostile) -> None:
    with pytest.raises(PathError) as info:
        parse(hostile.path)
    message = str(info.value)
    assert message.startswith("Error: The path")
    assert message.endswith(".")
    assert isinstance(info.value, MemfsError)


@pytest.mark.parametrize("hostile", HOSTILE_STRINGS, ids=[h.label for h in HOSTILE_STRINGS])
def test_refusal_message_shows_no_raw_invisible_characters(hostile: Hostile) -> None:
    with pytest.raises(PathError) as info:
        parse(hostile.path)
    message = str(info.value)
    hidden = [ch for ch in message if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")]
    assert hidden == [], f"raw invisible characters in {message!r}"
    # The message is one line whatever the model sent, and not a dump of a huge input.
    assert "\n" not in message
    assert len(message) < 700
    assert info.value.path == hostile.path


def test_refusal_names_the_reason() -> None:
    cases = {
        "/memories/../secrets.env": "it contains a '..' segment",
        "/memories//a": "it contains an empty segment",
        "/memoriesX/a": "it must be /memories or start with /memories/",
        "/memories/a\\b": "it contains a backslash",
        "/memories/e\u0301": "it is not in Unicode NFC form",
        "/memories/a\x00": "U+0000",
        "/memories/%2e%2e": "becomes a dot segment when percent-decoded",
        "/memories/CON": "reserved device name",
        "/memories/.memfs-tmp-1": "reserved for memfs",
        "/memories/a ": "cannot end with a space or a dot",
        "/memories/..\u00a0": "the segment '..\\xa0' reads as a dot segment",
        "/memories/%2e%2e%20": "becomes a dot segment when percent-decoded",
    }
    for path, reason in cases.items():
        with pytest.raises(PathError, match="is not allowed") as info:
            parse(path)
        assert reason in str(info.value), (path, str(info.value))


def test_non_string_message_names_the_type() -> None:
    for value, type_name in ((None, "NoneType"), (5, "int"), (b"/memories", "bytes")):
        with pytest.raises(PathError) as info:
            parse(value)
        assert str(info.value) == f"Error: The path must be a string, got {type_name}."


def test_long_path_is_shortened_in_the_message() -> None:
    path = "/memories/" + "/".join(["a" * 100] * 11)
    with pytest.raises(PathError) as info:
        parse(path)
    assert "..." in str(info.value)
    assert "longer than 1024 bytes" in str(info.value)


def test_parse_rel_uses_the_same_rule() -> None:
    assert parse_rel("") == ROOT_PATH
    assert parse_rel("a/b.md").parts == ("a", "b.md")
    for bad in ("../x", "/a", "a//b", "a/./b", "%2e%2e", "a\\b"):
        with pytest.raises(PathError):
            parse_rel(bad)


PEOPLE_NAMES_OK = [
    "notes.md",
    ".hidden",
    ".gitignore",
    "node_modules",
    "100%",
    "%41",
    "a..b",
    "...a",
    "日本語.txt",
    "café",
    "a b",
    "Ü" * 127,
    "README",
    "console.md",  # only the device stem itself (with any extension) is reserved
]

PEOPLE_NAMES_BAD = [
    "",
    ".",
    "..",
    "...",
    "a/b",
    "a\\b",
    "CON",
    "nul.txt",
    ".memfs-tmp-x",
    ".memfs",
    "a.",
    "a ",
    "e\u0301",
    "a\x00",
    "a\n",
    "a\u202e",
    "a" * 256,
    "%2e%2e",
    "%252e",
    "a%2fb",
    "\uff0e\uff0e",
    "\u2025",
    "%ff",
]


@pytest.mark.parametrize("name", PEOPLE_NAMES_OK)
def test_name_problem_accepts_ordinary_names(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize("name", PEOPLE_NAMES_BAD, ids=[ascii(n)[:40] for n in PEOPLE_NAMES_BAD])
def test_name_problem_refuses_unsafe_names(name: str) -> None:
    problem = name_problem(name)
    assert isinstance(problem, str)
    assert problem  # a reason a person can read, not just a flag


def test_name_problem_of_non_text() -> None:
    assert name_problem(5) == "a name must be text"  # type: ignore[arg-type]
    assert name_problem(b"a") == "a name must be text"  # type: ignore[arg-type]


@given(st.text(st.characters(exclude_characters="/"), max_size=40))
def test_name_problem_agrees_with_parse(name: str) -> None:
    """A name is acceptable alone exactly when it is acceptable as a path segment."""
    path = "/memories/" + name
    problem = name_problem(name)
    if problem is None:
        assert parse(path).parts == (name,)
    elif name != "":  # "/memories/" is the root, an allowed path
        with pytest.raises(PathError):
            parse(path)


@given(st.lists(st.text(min_size=0, max_size=12), min_size=0, max_size=6))
def test_parse_is_total_and_canonical(segments: list[str]) -> None:
    """Any text either parses to a path of acceptable names or raises PathError, nothing else."""
    path = "/memories/" + "/".join(segments)
    try:
        parsed = parse(path)
    except PathError as err:
        assert str(err).startswith("Error: The path")
        return
    for part in parsed.parts:
        assert name_problem(part) is None
        assert part not in (".", "..")
        assert "/" not in part and "\\" not in part
    assert parse(parsed.model) == parsed
    assert path in (parsed.model, parsed.model + "/")


@pytest.mark.parametrize(
    ("rel", "parent"), [("a/b/c.md", "a/b"), ("a/b", "a"), ("notes.md", ""), ("", "")]
)
def test_parent_of_a_store_path(rel: str, parent: str) -> None:
    assert parent_of(rel) == parent


@given(st.lists(st.sampled_from(["a", "b.md", "café", "x y"]), min_size=1, max_size=6))
def test_parent_of_agrees_with_the_gate(segments: list[str]) -> None:
    """The parent of a canonical path is the canonical path of its parent directory."""
    parsed = parse_rel("/".join(segments))
    assert parent_of(parsed.rel) == parsed.parent.rel
