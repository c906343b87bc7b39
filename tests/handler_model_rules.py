"""The model's own rules for the handler's text layout, independent of memfs's code.

Written from the contract and the handler's documented choices (lines split on '\\n'
only, a final newline ends the last line, a '\\r' before it is not shown, the insert
placement rule), so the state machine in test_handler_model can check the handler
against something it did not compute itself.
"""

from __future__ import annotations

Parts = tuple[str, ...]


def model_path(parts: Parts) -> str:
    return "/memories" + "".join("/" + p for p in parts)


def split_lines(content: str) -> list[str]:
    """Lines on '\\n' only; a final '\\n' ends the last line instead of opening one."""
    pieces = content.split("\n")
    if pieces[-1] == "":
        pieces.pop()
    return pieces


def numbered(n: int, line: str) -> str:
    # A '\r' ending a line belongs to its line ending and is not shown.
    return f"{n:>6}\t{line[:-1] if line.endswith(chr(13)) else line}"


def insert_text_at(content: str, line: int, insert: str) -> str:
    """The handler's documented insert rule, built on a list of newline-ended lines."""
    first_nl = content.find("\n")
    eol = "\r\n" if first_nl > 0 and content[first_nl - 1] == "\r" else "\n"
    if eol == "\r\n":
        insert = insert.replace("\r\n", "\n").replace("\n", "\r\n")
    rows = [row + "\n" for row in content.split("\n")]
    rows[-1] = rows[-1][:-1]  # the piece after the last '\n' has no newline of its own
    if rows[-1] == "":
        rows.pop()
    if line < len(rows):
        rows.insert(line, insert if insert.endswith("\n") else insert + eol)
    elif rows and not rows[-1].endswith("\n"):
        rows[-1] += eol
        rows.append(insert)
    else:
        rows.append(insert if insert.endswith("\n") else insert + eol)
    return "".join(rows)
