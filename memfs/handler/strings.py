"""Every string the handler sends to the model, in one place.

The contract's strings (``/work/shared/spec/memory-tool-contract.md``) are reproduced to
the character; ``{path}`` is always the path exactly as the model sent it. Strings the
contract does not fix are worded here once so the tests can assert them whole.

Formatting decisions made here:

* **Sizes** (:func:`human_size`): below 1,024 bytes the exact count with ``B``
  (``0B``, ``512B``); from 1 KiB on, one decimal and a binary unit (``1.0K``, ``1.5K``,
  ``4.0K``, ``1.2M``, ``3.0G``), always with the decimal so the column reads alike, as
  in the contract's example (``4.0K``).
* **Line numbers**: 1-based, right-aligned in 6 characters, then a tab
  (:func:`numbered`).
* **Listing paths**: the first line shows the path as sent; entries are joined to it
  with one ``/`` (a tolerated trailing ``/`` in the sent path is not doubled), and
  directories end with ``/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

VIEW_CHAR_LIMIT = 16_000
MAX_LINES = 999_999
MAX_IMAGE_BYTES = 5 * 1024 * 1024
LINE_NUMBER_WIDTH = 6

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


def human_size(n: int) -> str:
    """``512B``, ``1.5K``, ``4.0K``, ``1.2M`` (binary units, one decimal from 1 KiB on)."""
    if n < 1024:
        return f"{n}B"
    value = float(n)
    for unit in ("K", "M", "G", "T"):
        value /= 1024
        if value < 1024 or unit == "T":
            # Rounding can carry 1023.96K up to "1024.0K"; show it as the next unit.
            if f"{value:.1f}" == "1024.0" and unit != "T":
                continue
            return f"{value:.1f}{unit}"
    raise AssertionError("unreachable")


def numbered(n: int, line: str) -> str:
    return f"{n:>{LINE_NUMBER_WIDTH}}\t{line}"


def json_value(value: object) -> str:
    """A value as the model wrote it (JSON), for echoing a bad parameter back."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def json_type(value: object) -> str:
    """The JSON name of a value's type, to tell the model what it sent instead."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- input validation ------------------------------------------------------------------

NOT_AN_OBJECT = "Error: The memory tool input must be an object with a `command` field."
NO_COMMAND = (
    "Error: The memory tool input needs a `command` "
    "(one of view, create, str_replace, insert, delete, rename)."
)


def unknown_command(command: object) -> str:
    shown_command = command if isinstance(command, str) else json_value(command)
    return f"Error: unknown command {shown_command}"


def missing_field(command: str, field: str, expected: str) -> str:
    return f"Error: The `{command}` command needs `{field}` ({expected})."


def mistyped_field(command: str, field: str, expected: str, value: object) -> str:
    return f"Error: The `{command}` command needs `{field}` ({expected}), got {json_type(value)}."


def surrogate_in_field(command: str, field: str, index: int) -> str:
    return (
        f"Error: The `{field}` of the `{command}` command contains an unpaired surrogate "
        f"at character {index:,}, which cannot be stored as UTF-8. Nothing was changed."
    )


def internal_error(command: str) -> str:
    return (
        f"Error: memfs hit an internal error while running `{command}`; it has been logged. "
        "The operation may not have completed: view the path to check."
    )


def store_failed(command: str, reason: str) -> str:
    """The store refused with a cause it named (a full disk, a damaged revision)."""
    return (
        f"Error: The `{command}` command failed: {reason}. "
        "The operation may not have completed: view the path to check."
    )


def os_error(command: str, reason: str) -> str:
    return (
        f"Error: The `{command}` command failed: {reason}. "
        "The operation may not have completed: view the path to check."
    )


# --- shared path errors ----------------------------------------------------------------


def through_symlink(path: str, link: str) -> str:
    return (
        f"Error: The path {path} cannot be used: {link} is a symbolic link, "
        "and memfs never follows links."
    )


def not_a_directory(path: str, blocker: str) -> str:
    return f"Error: The path {path} cannot be used: {blocker} is a file, not a directory."


def not_regular(path: str) -> str:
    return f"Error: The path {path} is not a regular file or directory; memfs only handles those."


def hard_linked(path: str) -> str:
    return (
        f"Error: The file {path} has other hard links, which may lead outside /memories, "
        "so memfs neither reads nor edits it. A person can replace it with a plain copy."
    )


def not_utf8(path: str, offset: int, byte: int) -> str:
    return (
        f"Error: The file {path} is not valid UTF-8 text: the byte 0x{byte:02x} at byte offset "
        f"{offset:,} cannot be decoded. memfs only shows and edits UTF-8 text."
    )


def too_large_to_read(path: str, size: int, limit: int) -> str:
    return (
        f"Error: The file {path} is {size:,} bytes; memfs reads files of at most {limit:,} bytes."
    )


def too_large(path: str, field: str, size: int, limit: int) -> str:
    return (
        f"Error: The {field} for {path} is {size:,} bytes; memory files are limited to "
        f"{limit:,} bytes. Nothing was written."
    )


def edit_too_large(path: str, size: int, limit: int) -> str:
    return (
        f"Error: The edit would make {path} {size:,} bytes; memory files are limited to "
        f"{limit:,} bytes. Nothing was written."
    )


_MAKE_ROOM = (
    "Delete memories you no longer need, or shorten long ones, then try again. Nothing was written."
)


def over_file_cap(path: str, used: int, limit: int) -> str:
    return (
        f"Error: Cannot write {path}: the memory already holds {used:,} files and is limited "
        f"to {limit:,} files. {_MAKE_ROOM}"
    )


def over_byte_cap(path: str, would: int, used: int, limit: int) -> str:
    return (
        f"Error: Cannot write {path}: the memory would hold {would:,} bytes, over its limit "
        f"of {limit:,} bytes ({used:,} bytes are used now). {_MAKE_ROOM}"
    )


def memory_full_bytes(path: str, used: int, limit: int) -> str:
    return (
        f"Error: Cannot write {path}: the memory is too full ({used:,} bytes used of its "
        f"limit of {limit:,} bytes). {_MAKE_ROOM}"
    )


def memory_full(command: str, path: str) -> str:
    return (
        f"Error: The `{command}` command on {path} was refused: the memory is at its limit "
        f"of total size or number of files. {_MAKE_ROOM}"
    )


def kept_changing(path: str, tries: int) -> str:
    return (
        f"Error: The file {path} kept changing while memfs was editing it ({tries} tries); "
        "nothing was written. View it again and retry the edit."
    )


# --- view ------------------------------------------------------------------------------


def view_missing(path: str) -> str:
    return f"The path {path} does not exist. Please provide a valid path."


def listing_header(path: str) -> str:
    return (
        f"Here're the files and directories up to 2 levels deep in {path}, "
        "excluding hidden items and node_modules:"
    )


def listing_truncated(shown_count: int, total: int) -> str:
    return (
        f"[Listing truncated after {shown_count:,} of {total:,} entries to stay under "
        f"{VIEW_CHAR_LIMIT:,} characters. View a subdirectory to see the rest.]"
    )


def file_header(path: str) -> str:
    return f"Here's the content of {path} with line numbers:"


def too_many_lines(path: str) -> str:
    return f"File {path} exceeds maximum line limit of 999,999 lines."


def view_truncated(last: int, total: int, end: int) -> str:
    return (
        f"[Output truncated at line {last:,} of {total:,} to stay under "
        f"{VIEW_CHAR_LIMIT:,} characters. Use view_range [{last + 1}, {end}] to see the rest.]"
    )


def view_line_cut(line: int, total: int, shown: int, length: int, end: int | None) -> str:
    """The last line of a view that cut line ``line`` after ``shown`` of its ``length``
    characters. view_range counts whole lines, so the rest of this one cannot be paged
    to; ``end`` is the view_range end for the lines after it (None: the range ends here).
    """
    cut = (
        f"[Output truncated inside line {line:,} of {total:,} after {shown:,} of its "
        f"{length:,} characters to stay under {VIEW_CHAR_LIMIT:,} characters; view cannot "
        "show more of one line."
    )
    if end is None:
        return cut + "]"
    return cut + f" Use view_range [{line + 1}, {end}] to see the rest.]"


def view_range_shape(value: object) -> str:
    return (
        f"Error: Invalid `view_range` parameter: {json_value(value)}. It should be a list "
        "of two integers [start, end], where end may be -1 for the end of the file."
    )


def view_range_start(value: object, n_lines: int) -> str:
    return (
        f"Error: Invalid `view_range` parameter: {json_value(value)}. Its first element "
        f"should be within the range of lines of the file: [1, {n_lines}]."
    )


def view_range_end(value: object, start: int, n_lines: int) -> str:
    return (
        f"Error: Invalid `view_range` parameter: {json_value(value)}. Its second element "
        f"should be -1 or within [{start}, {n_lines}] (the file has {n_lines} lines)."
    )


def view_range_empty(value: object) -> str:
    return (
        f"Error: Invalid `view_range` parameter: {json_value(value)}. The file is empty; "
        "view it without a view_range."
    )


def view_range_not_text(path: str) -> str:
    return f"Error: `view_range` applies to text files only, and {path} is not one."


def image_too_large(path: str, size: int) -> str:
    return (
        f"Error: The image {path} is {size:,} bytes; view returns images of at most "
        f"{MAX_IMAGE_BYTES:,} bytes."
    )


def image_mismatch(path: str, kind: str) -> str:
    return f"Error: The file {path} has a {kind} name but does not hold a {kind} image."


# --- create ----------------------------------------------------------------------------


def created(path: str) -> str:
    return f"File created successfully at: {path}"


def file_exists(path: str) -> str:
    return f"Error: File {path} already exists"


def create_on_directory(path: str) -> str:
    return f"Error: The path {path} is a directory; create only writes files."


# --- str_replace -----------------------------------------------------------------------


def missing_file(path: str) -> str:
    return f"Error: The path {path} does not exist. Please provide a valid path."


def empty_old_str(path: str) -> str:
    return (
        f"Error: No replacement was performed in {path}: `old_str` is empty. "
        "Give the exact text to replace."
    )


def not_found(path: str, old_str: str) -> str:
    return f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."


def multiple(old_str: str, lines: Iterable[int]) -> str:
    joined = ", ".join(str(n) for n in lines)
    return (
        f"No replacement was performed. Multiple occurrences of old_str `{old_str}` "
        f"in lines: {joined}. Please ensure it is unique"
    )


def replaced(snippet: str) -> str:
    return (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n" + snippet
    )


# --- insert ----------------------------------------------------------------------------


def path_missing(path: str) -> str:
    return f"Error: The path {path} does not exist"


def bad_insert_line(value: object, n_lines: int) -> str:
    shown_value = value if type(value) is int else json_value(value)
    return (
        f"Error: Invalid `insert_line` parameter: {shown_value}. It should be within the "
        f"range of lines of the file: [0, {n_lines}]"
    )


def inserted(path: str) -> str:
    return f"The file {path} has been edited."


# --- secrets ---------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def secrets_redacted(field: str, found: Iterable[tuple[int, str, str]]) -> str:
    """The note after a success string when ``field`` had credentials redacted: one line
    per ``(line, kind, why)``, line counted in the field's text."""
    found = list(found)
    lines = [f"- {field} line {line}: [REDACTED:{kind}], {why}" for line, kind, why in found]
    return (
        f"\n\nNote: memfs replaced {_plural(len(found), 'likely credential')} in the "
        f"{field} with [REDACTED:kind] markers before storing it, because credentials must "
        "not be stored in memory (keep a pointer to where they live instead):\n" + "\n".join(lines)
    )


def secrets_refused(path: str, field: str, found: Iterable[tuple[int, str, str]]) -> str:
    found = list(found)
    listed = ", ".join(f"{kind} on line {line}" for line, kind, _why in found)
    return (
        f"Error: The {field} for {path} contains {_plural(len(found), 'likely credential')} "
        f"({listed}); credentials must not be stored in memory. Nothing was written. "
        "Leave the credential out, or write where it is kept (a vault entry, an "
        "environment variable) instead."
    )


def secret_name_refused(shown: str, found: Iterable[tuple[str, str]]) -> str:
    """A create or rename refused because the new name holds credentials; ``shown`` is
    the name with each one replaced by its marker (the secret is never echoed)."""
    found = list(found)
    kinds = ", ".join(kind for kind, _why in found)
    return (
        f"Error: The path {shown} contains {_plural(len(found), 'likely credential')} "
        f"({kinds}) in its name; credentials must not be stored in memory, in names either. "
        "Nothing was written. Name the file after what it holds instead."
    )


def secret_name_redacted(shown: str, found: Iterable[tuple[str, str]]) -> str:
    """The note after a success string when the new name had credentials redacted."""
    found = list(found)
    lines = [f"- [REDACTED:{kind}], {why}" for kind, why in found]
    return (
        f"\n\nNote: memfs replaced {_plural(len(found), 'likely credential')} in the name "
        f"with [REDACTED:kind] markers, because credentials must not be stored in memory; "
        f"the entry is {shown}:\n" + "\n".join(lines)
    )


# --- delete and rename -----------------------------------------------------------------


def deleted(path: str) -> str:
    return f"Successfully deleted {path}"


def delete_root() -> str:
    return "Error: Cannot delete the /memories directory itself"


def rename_root() -> str:
    return "Error: Cannot rename the /memories directory itself"


def renamed(old_path: str, new_path: str) -> str:
    return f"Successfully renamed {old_path} to {new_path}"


def destination_exists(new_path: str) -> str:
    return f"Error: The destination {new_path} already exists"


def into_itself(old_path: str, new_path: str) -> str:
    return f"Error: Cannot move {old_path} into itself ({new_path}). Nothing was renamed."
