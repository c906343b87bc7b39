"""Model paths the gate must refuse, each with a short label naming the trick.

A plain data module shared by the gate's unit tests, the traversal tests (every command
against a real root) and the Hypothesis model test. Each entry is a
:class:`Hostile` ``(label, path, category)``; labels are unique so they serve as pytest
ids. ``path`` is ``object`` because the model can send any JSON value.
"""

from __future__ import annotations

from typing import NamedTuple


class Hostile(NamedTuple):
    label: str
    path: object
    category: str


def _cat(category: str, entries: list[tuple[str, object]]) -> list[Hostile]:
    return [Hostile(label, path, category) for label, path in entries]


_PREFIX = _cat(
    "prefix",
    [
        ("prefix-no-boundary", "/memoriesX/a"),
        ("prefix-dotdot-glued", "/memories.."),
        ("prefix-dotdot-glued-child", "/memories../secrets.env"),
        ("prefix-relative", "memories/a"),
        ("prefix-dot-relative", "./memories/a"),
        ("prefix-parent-relative", "../memories/a"),
        ("prefix-case", "/Memories/a"),
        ("prefix-upper", "/MEMORIES"),
        ("prefix-double-slash", "//memories/a"),
        ("prefix-dot-before", "/./memories"),
        ("prefix-dot-before-child", "/./memories/a"),
        ("prefix-via-tmp-parent", "/tmp/../memories/a"),
        ("prefix-tilde", "~/memories"),
        ("prefix-tilde-child", "~/memories/a"),
        ("prefix-file-url", "file:///memories/a"),
        ("prefix-http-url", "http://localhost/memories/a"),
        ("prefix-leading-space", " /memories/a"),
        ("prefix-leading-tab", "\t/memories/a"),
        ("prefix-space-after-root", "/memories /a"),
        ("prefix-empty", ""),
        ("prefix-slash-only", "/"),
        ("prefix-truncated", "/memorie"),
        ("prefix-sibling-backup", "/memories_backup/x"),
        ("prefix-sibling-dash", "/memories-evil/x"),
        ("prefix-absolute-elsewhere", "/etc/passwd"),
        ("prefix-backslash-root", "\\memories\\a"),
        ("prefix-encoded-slash-after-root", "/memories%2fa"),
        ("prefix-encoded-leading-slash", "%2fmemories/a"),
        ("prefix-nested-root", "/private/memories/a"),
        ("prefix-nul-after-root", "/memories\x00/a"),
    ],
)

_DOTS = _cat(
    "dot-segment",
    [
        ("dot-parent-of-root", "/memories/.."),
        ("dot-parent-of-root-slash", "/memories/../"),
        ("dot-secrets", "/memories/../secrets.env"),
        ("dot-secrets-twice", "/memories/../../secrets.env"),
        ("dot-canary", "/memories/../canary/x"),
        ("dot-sibling-backup", "/memories/../memories_backup/x"),
        ("dot-back-into-root", "/memories/../memories/a"),
        ("dot-deep-escape", "/memories/a/../../secrets.env"),
        ("dot-inside-only", "/memories/a/../b"),
        ("dot-current", "/memories/."),
        ("dot-current-child", "/memories/./a"),
        ("dot-current-trailing", "/memories/a/."),
        ("dot-parent-trailing", "/memories/a/.."),
        ("dot-triple", "/memories/..."),
        ("dot-quadruple", "/memories/...."),
        ("dot-escape-to-encoded-canary", "/memories/../%2e%2e"),
    ],
)

_TRAILING = _cat(
    "trailing",
    [
        ("trail-dot", "/memories/a."),
        ("trail-space", "/memories/a "),
        ("trail-dot-space", "/memories/a. "),
        ("trail-dotdot-space", "/memories/.. "),
        ("trail-space-dotdot", "/memories/ .."),
        ("trail-dot-extension", "/memories/notes.md."),
        ("trail-dot-dir", "/memories/dir./x"),
        ("trail-space-only", "/memories/ "),
        # Windows drops trailing spaces; these become ".." once a layer folds or decodes
        # the space into an ASCII one.
        ("trail-dotdot-nbsp", "/memories/..\u00a0"),
        ("trail-dotdot-ideographic-space", "/memories/..\u3000"),
        ("trail-dot-en-space", "/memories/.\u2002"),
        ("trail-dotdot-encoded-space", "/memories/%2e%2e%20"),
        ("trail-fullwidth-dotdot-nbsp", "/memories/\uff0e\uff0e\u00a0/secrets.env"),
    ],
)

_EMPTY = _cat(
    "empty-segment",
    [
        ("empty-after-root", "/memories//a"),
        ("empty-middle", "/memories/a//b"),
        ("empty-double-trailing-root", "/memories//"),
        ("empty-double-trailing", "/memories/a//"),
        ("empty-triple-trailing", "/memories///"),
    ],
)

_BACKSLASH = _cat(
    "backslash",
    [
        ("bs-root-escape", "/memories\\..\\x"),
        ("bs-dotdot-secrets", "/memories/..\\secrets.env"),
        ("bs-deep-escape", "/memories/a\\..\\..\\secrets.env"),
        ("bs-dotdot-trailing", "/memories/..\\"),
        ("bs-inside-name", "/memories/a\\b"),
        ("bs-alone", "/memories/\\"),
    ],
)

_PERCENT = _cat(
    "percent",
    [
        ("pct-dotdot", "/memories/%2e%2e"),
        ("pct-dotdot-upper", "/memories/%2E%2E"),
        ("pct-dotdot-secrets", "/memories/%2e%2e/secrets.env"),
        ("pct-dotdot-slash", "/memories/%2e%2e%2fsecrets.env"),
        ("pct-slash-only", "/memories/..%2fsecrets.env"),
        ("pct-dotdot-backslash", "/memories/%2e%2e%5csecrets.env"),
        ("pct-dot", "/memories/%2e"),
        ("pct-half-dotdot-a", "/memories/.%2e"),
        ("pct-half-dotdot-b", "/memories/%2e."),
        ("pct-double-dotdot", "/memories/%252e%252e"),
        ("pct-triple-dotdot", "/memories/%25252e%25252e"),
        ("pct-double-slash", "/memories/%2e%2e%252f"),
        ("pct-encoded-slash", "/memories/a%2fb"),
        ("pct-encoded-backslash", "/memories/a%5cb"),
        ("pct-double-encoded-slash", "/memories/a%252fb"),
        ("pct-overlong-dots", "/memories/%c0%ae%c0%ae"),
        ("pct-overlong-slash", "/memories/%c0%af"),
        ("pct-overlong-3byte-dot", "/memories/%e0%80%ae"),
        ("pct-invalid-byte", "/memories/%ff"),
        ("pct-nul", "/memories/%00"),
        ("pct-newline", "/memories/a%0a"),
        ("pct-chain-escape", "/memories/%2e%2e%2f%2e%2e%2fsecrets.env"),
        ("pct-percent-of-hex", "/memories/%%32%65%%32%65"),
        ("pct-fullwidth-dots-utf8", "/memories/%ef%bc%8e%ef%bc%8e"),
        ("pct-dotdot-nul", "/memories/%2e%2e%00"),
        ("pct-nested-9-dotdot", "/memories/" + ("%" + "25" * 9 + "2e") * 2),
        ("pct-nested-9-letter", "/memories/%" + "25" * 9 + "41"),
    ],
)

_CONTROL = _cat(
    "control",
    [
        ("ctl-nul", "/memories/a\x00b"),
        ("ctl-nul-alone", "/memories/\x00"),
        ("ctl-nul-after-dotdot", "/memories/..\x00"),
        ("ctl-newline", "/memories/a\nb"),
        ("ctl-cr", "/memories/a\rb"),
        ("ctl-tab", "/memories/a\tb"),
        ("ctl-del", "/memories/a\x7f"),
        ("ctl-c1-nel", "/memories/a\x85b"),
        ("ctl-escape-seq", "/memories/a\x1b[31m"),
        ("ctl-vertical-tab", "/memories/a\x0bb"),
        ("ctl-form-feed", "/memories/a\x0cb"),
        ("ctl-lone-surrogate", "/memories/a\ud800"),
        ("ctl-unassigned", "/memories/a\U000e0080"),
    ],
)

_FORMAT = _cat(
    "format",
    [
        ("fmt-rlo", "/memories/a\u202eb"),
        ("fmt-rlo-extension", "/memories/\u202egpj.exe"),
        ("fmt-zwsp-before-dotdot", "/memories/\u200b.."),
        ("fmt-zwsp-after-dotdot", "/memories/..\u200b"),
        ("fmt-bom", "/memories/\ufeffa"),
        ("fmt-lri", "/memories/a\u2066b"),
        ("fmt-pdi", "/memories/a\u2069"),
        ("fmt-zwj", "/memories/a\u200db"),
        ("fmt-soft-hyphen", "/memories/a\u00adb"),
        ("sep-line", "/memories/a\u2028b"),
        ("sep-paragraph", "/memories/a\u2029b"),
    ],
)

_LOOKALIKE = _cat(
    "lookalike",
    [
        ("look-fullwidth-dotdot", "/memories/\uff0e\uff0e"),
        ("look-fullwidth-dot", "/memories/\uff0e"),
        ("look-fullwidth-escape", "/memories/\uff0e\uff0e/secrets.env"),
        ("look-one-dot-leader", "/memories/\u2024\u2024"),
        ("look-one-dot-leader-mixed", "/memories/.\u2024"),
        ("look-two-dot-leader", "/memories/\u2025"),
        ("look-small-full-stop", "/memories/\ufe52\ufe52"),
        ("look-ideographic-stop", "/memories/\u3002\u3002"),
        ("look-halfwidth-ideographic", "/memories/\uff61\uff61"),
        ("look-ellipsis", "/memories/\u2026"),
        ("look-middle-dot", "/memories/\u00b7\u00b7"),
        ("look-fullwidth-solidus", "/memories/a\uff0fb"),
        ("look-fullwidth-backslash", "/memories/a\uff3cb"),
        ("look-division-slash-up", "/memories/..\u2215x"),
        ("look-fraction-slash-up", "/memories/..\u2044x"),
        ("look-division-slash-up-twice", "/memories/..\u2215..\u2215secrets.env"),
        ("look-division-slash-dot", "/memories/a\u2215.\u2215b"),
        ("look-fraction-slash-trailing-up", "/memories/notes\u2044.."),
        ("look-big-solidus-up", "/memories/..\u29f8x"),
        ("look-set-minus-up", "/memories/..\u2216x"),
        ("look-reverse-solidus-operator-up", "/memories/..\u29f5x"),
        ("look-slash-and-dot-leader-up", "/memories/\u2024\u2024\u2215x"),
    ],
)

_NFC = _cat(
    "non-nfc",
    [
        ("nfd-e-acute", "/memories/e\u0301"),
        ("nfd-cafe", "/memories/cafe\u0301.md"),
        ("nfd-a-ring", "/memories/A\u030a"),
        ("nfc-angstrom-sign", "/memories/\u212b"),
        ("nfd-hangul-jamo", "/memories/\u1100\u1161"),
    ],
)

_LENGTH = _cat(
    "length",
    [
        ("len-segment-256-ascii", "/memories/" + "a" * 256),
        ("len-segment-256-two-byte", "/memories/" + "é" * 128),
        ("len-segment-258-three-byte", "/memories/" + "€" * 86),
        ("len-segment-256-emoji", "/memories/" + "😀" * 64),
        ("len-path-1120", "/memories/" + "/".join(["a" * 100] * 11)),
        ("len-path-1025", "/memories/" + "/".join(["b" * 200] * 5) + "/" + "c" * 10),
        ("len-path-multibyte", "/memories/" + "/".join(["é" * 100] * 6)),
        ("depth-21", "/memories/" + "/".join(["d"] * 21)),
        ("depth-21-trailing-slash", "/memories/" + "/".join(["d"] * 21) + "/"),
    ],
)

_RESERVED = _cat(
    "reserved",
    [
        ("res-con", "/memories/CON"),
        ("res-con-lower", "/memories/con"),
        ("res-nul-ext", "/memories/nul.txt"),
        ("res-aux-md", "/memories/Aux.md"),
        ("res-com1", "/memories/COM1"),
        ("res-com-superscript", "/memories/COM\u00b9"),
        ("res-lpt9", "/memories/lpt9.log"),
        ("res-prn-nested", "/memories/a/PRN"),
        ("res-memfs-tmp", "/memories/.memfs-tmp-x"),
        ("res-memfs-bare", "/memories/.memfs"),
        ("res-memfs-nested", "/memories/a/.memfs-state"),
    ],
)

_NON_STRING = _cat(
    "non-string",
    [
        ("type-none", None),
        ("type-int", 5),
        ("type-float", 1.5),
        ("type-bool", True),
        ("type-list", ["/memories/a"]),
        ("type-dict", {"path": "/memories/a"}),
        ("type-bytes", b"/memories/a"),
    ],
)

HOSTILE: list[Hostile] = [
    *_PREFIX,
    *_DOTS,
    *_TRAILING,
    *_EMPTY,
    *_BACKSLASH,
    *_PERCENT,
    *_CONTROL,
    *_FORMAT,
    *_LOOKALIKE,
    *_NFC,
    *_LENGTH,
    *_RESERVED,
    *_NON_STRING,
]

# Only the text paths: what a JSON string field can carry.
HOSTILE_STRINGS: list[Hostile] = [h for h in HOSTILE if isinstance(h.path, str)]

assert len({h.label for h in HOSTILE}) == len(HOSTILE), "labels must be unique"
