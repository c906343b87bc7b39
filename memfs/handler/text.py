"""Pure text operations behind view, str_replace and insert (no I/O).

Lines are split on ``"\\n"`` only. A final ``"\\n"`` ends the last line rather than
starting an empty one, so ``"a\\nb\\n"`` and ``"a\\nb"`` both have 2 lines and the
empty file has 0. A ``"\\r"`` before the ``"\\n"`` stays part of the file's bytes and is
only hidden when a line is displayed.
"""

from __future__ import annotations

from memfs.handler import strings


def split_lines(text: str) -> list[str]:
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def shown_line(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def numbered_view(lines: list[str], start: int, end: int, room: int, end_asked: int) -> str:
    """Numbered lines ``start..end`` (1-based, inclusive) in at most ``room`` characters.

    When they do not all fit, the view ends with a hint line, counted in ``room``: after
    as many whole lines as fit with it, the hint names the view_range of the rest
    (``end_asked`` is the range's end as the model gave it, -1 for "to the end"). When
    not even the first line fits whole, it is cut and the hint says where.
    """
    total = len(lines)
    out: list[str] = []
    used = -1  # the first line has no newline before it
    for n in range(start, end + 1):
        line = strings.numbered(n, shown_line(lines[n - 1]))
        if used + 1 + len(line) <= room:
            out.append(line)
            used += 1 + len(line)
            continue
        # Cut here; give back whole lines until the hint fits too (a shorter view never
        # needs a longer hint: its numbers are no larger).
        while out:
            hint = strings.view_truncated(start + len(out) - 1, total, end_asked)
            if used + 1 + len(hint) <= room:
                return "\n".join(out) + "\n" + hint
            used -= 1 + len(out.pop())
        return _cut_line(lines, start, end, room, end_asked)
    return "\n".join(out)


def _cut_line(lines: list[str], n: int, end: int, room: int, end_asked: int) -> str:
    """Line ``n`` alone, cut to fit ``room`` with the hint that says where."""
    text = shown_line(lines[n - 1])
    prefix = strings.numbered(n, "")
    after = end_asked if n < end else None

    def size(shown: int) -> int:
        hint = strings.view_line_cut(n, len(lines), shown, len(text), after)
        return len(prefix) + shown + 1 + len(hint)

    # The hint for the whole length has the most digits, so this many always fit; a
    # shorter count may free a digit or two for more text.
    shown = max(0, room - (size(len(text)) - len(text)))
    while shown + 1 < len(text) and size(shown + 1) <= room:
        shown += 1
    hint = strings.view_line_cut(n, len(lines), shown, len(text), after)
    return prefix + text[:shown] + "\n" + hint


def eol_of(text: str) -> str:
    """The file's line ending, judged by its first line: ``"\\r\\n"`` or ``"\\n"``."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def insert_at(text: str, line: int, insert_text: str) -> str:
    """``text`` with ``insert_text`` inserted after line ``line`` (0: at the beginning).

    The rule, chosen to change no byte of the file beyond the inserted text and the
    line ending it needs:

    * In a CRLF file (its first line ends with ``"\\r\\n"``), every ``"\\n"`` of the
      inserted text that is not already preceded by ``"\\r"`` becomes ``"\\r\\n"``; in
      any other file the inserted text is kept as sent.
    * Before an existing line, the inserted text gets the file's line ending if it does
      not end with ``"\\n"`` already (so it never glues onto the next line).
    * After the last line of a file that ends without a newline, the file's line ending
      is put between the old last line and the inserted text, and nothing is added after
      it: the file still ends the way the inserted text ends.
    * After the last line of a file that ends with a newline (and in an empty file),
      the inserted text gets the file's line ending if it lacks one, so the file keeps
      ending with a newline.

    An empty ``insert_text`` therefore inserts one empty line, except after the last line
    of a file without a final newline, where it only adds that newline.
    """
    eol = eol_of(text)
    if eol == "\r\n":
        insert_text = insert_text.replace("\r\n", "\n").replace("\n", "\r\n")
    offset = 0
    for _ in range(line):
        nl = text.find("\n", offset)
        if nl == -1:
            offset = len(text)
            break
        offset = nl + 1
    if offset < len(text):
        piece = insert_text if insert_text.endswith("\n") else insert_text + eol
        return text[:offset] + piece + text[offset:]
    if text and not text.endswith("\n"):
        return text + eol + insert_text
    return text + (insert_text if insert_text.endswith("\n") else insert_text + eol)


def crlf_match(content: str, old_str: str, new_str: str) -> tuple[str, str]:
    """The text to find and the text to put for a str_replace on ``content``.

    view hides the ``"\r"`` of CRLF line ends, so a model copying lines from it sends
    ``"\n"`` only. When such a multi-line ``old_str`` is not in a CRLF file verbatim but
    is with CRLF line ends, that is what is meant: both strings get the file's line
    ends. Anything found verbatim is used verbatim.
    """
    if "\n" not in old_str or "\r\n" in old_str or old_str in content or eol_of(content) != "\r\n":
        return old_str, new_str
    crlf_old = old_str.replace("\n", "\r\n")
    if crlf_old not in content:
        return old_str, new_str
    return crlf_old, new_str.replace("\r\n", "\n").replace("\n", "\r\n")


def occurrence_lines(text: str, needle: str) -> list[int]:
    """1-based line of every start of ``needle`` in ``text``, overlapping ones included.

    Each line is listed once, in order. Overlaps count because a match that overlaps
    another is just as ambiguous to the model.
    """
    lines: list[int] = []
    line = 1
    last = 0
    pos = text.find(needle)
    while pos != -1:
        line += text.count("\n", last, pos)
        last = pos
        if not lines or lines[-1] != line:
            lines.append(line)
        pos = text.find(needle, pos + 1)
    return lines


def snippet(text: str, first_line: int, last_line: int) -> str:
    """Numbered lines from 2 before ``first_line`` to 2 after ``last_line`` (1-based)."""
    lines = split_lines(text)
    start = max(1, first_line - 2)
    end = min(len(lines), last_line + 2)
    return "\n".join(strings.numbered(n, shown_line(lines[n - 1])) for n in range(start, end + 1))
