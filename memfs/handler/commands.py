"""The six memory commands, given arguments the dispatcher validated, over any
:class:`~memfs.handler.backend.Backend` (a directory, or a mount's store).

Each method returns a :class:`Result` for success and raises :class:`Refused` (a
message for the model) for anything the model can correct. Paths arrive twice: ``raw``
exactly as the model sent it (every string echoes that) and the gate's
:class:`~memfs.paths.MemPath` (every file operation uses that).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from memfs.errors import AlreadyExists, Conflict, IsADirectory, NotADirectory, NotFound
from memfs.handler import strings, text
from memfs.handler.backend import (
    EDIT_TRIES,
    READ_LIMIT,
    Backend,
    HardLinked,
    Node,
    NotRegular,
    SymlinkRefused,
    TooBigToRead,
)
from memfs.handler.keeping import Keeping
from memfs.paths import MemPath, name_problem

_IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg"}
_IMAGE_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n", "PNG"), "image/jpeg": (b"\xff\xd8\xff", "JPEG")}


class Result(NamedTuple):
    """What goes back to the model: text, or content blocks (images only)."""

    content: str | list[dict[str, Any]]
    is_error: bool


class Refused(Exception):
    """The command cannot be done as asked; ``message`` tells the model why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _ok(message: str) -> Result:
    return Result(message, False)


def _decode(data: bytes, raw: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(strings.not_utf8(raw, exc.start, data[exc.start])) from None


def _image_type(path: MemPath) -> str | None:
    _, dot, ext = path.name.rpartition(".")
    return _IMAGE_TYPES.get(ext.lower()) if dot else None


class Commands:
    def __init__(
        self,
        tree: Backend[Any],
        *,
        overwrite: bool,
        max_file_bytes: int,
        keeping: Keeping | None = None,
    ) -> None:
        self.tree = tree
        self.overwrite = overwrite
        self.max_file_bytes = max_file_bytes
        self.keeping = keeping or Keeping(None)

    def _fits(self, raw: str, grow: int, new_file: bool) -> None:
        """Refuse a write that would take the memory past a cap of its store."""
        refusal = self.keeping.refusal(raw, grow, new_file)
        if refusal is not None:
            raise Refused(refusal)

    # --- view ---------------------------------------------------------------------

    def view(self, raw: str, path: MemPath, view_range: object) -> Result:
        missing = strings.view_missing(raw)
        with _refusing(raw, missing), self.tree.directory(path.parent) as parent:
            if path.is_root:
                if view_range is not None:
                    raise Refused(strings.view_range_not_text(raw))
                return _ok(self._listing(raw, parent, self.tree.own(parent)))
            st = self.tree.entry(parent, path)
            if st is None:
                raise Refused(missing)
            if st.kind == "dir":
                if view_range is not None:
                    raise Refused(strings.view_range_not_text(raw))
                with self.tree.subdir(parent, path.name) as fd:
                    if fd is None:
                        raise Refused(missing)
                    return _ok(self._listing(raw, fd, self.tree.own(fd)))
            if st.kind != "file":
                raise Refused(strings.not_regular(raw))
            media_type = _image_type(path)
            if media_type is not None:
                result = self._image(raw, parent, path, st, media_type, view_range)
            else:
                result = _ok(self._file(raw, self.tree.read(parent, path), view_range))
            self.keeping.used(path)  # a file the model read is in use (listings are not)
            return result

    def _listing(self, raw: str, fd: object, st: Node) -> str:
        base = raw[:-1] if raw.endswith("/") else raw
        entries: list[str] = []

        def walk(dir_fd: object, prefix: str, depth: int) -> None:
            try:
                children = sorted(self.tree.listdir(dir_fd), key=lambda item: item[0])
            except PermissionError:
                return
            for name, child in children:
                # Hidden names, node_modules, and names the gate would refuse (the model
                # could not address them, and a raw newline would forge listing lines).
                if name.startswith(".") or name == "node_modules" or name_problem(name) is not None:
                    continue
                size = strings.human_size(child.size)
                if child.kind == "dir":
                    entries.append(f"{size}\t{base}/{prefix}{name}/")
                    if depth < 2:
                        with self.tree.subdir(dir_fd, name) as sub:
                            if sub is not None:
                                walk(sub, f"{prefix}{name}/", depth + 1)
                elif child.kind == "file":
                    entries.append(f"{size}\t{base}/{prefix}{name}")

        walk(fd, "", 1)
        own = strings.human_size(st.size)
        header = strings.listing_header(raw)
        lines = [header, f"{own}\t{raw}"]
        used = len(header) + 1 + len(lines[1])
        for entry in entries:
            if used + 1 + len(entry) > strings.VIEW_CHAR_LIMIT:
                break
            lines.append(entry)
            used += 1 + len(entry)
        else:
            return "\n".join(lines)
        # Cut: give back entries until the hint fits under the limit too.
        while True:
            hint = strings.listing_truncated(len(lines) - 2, len(entries))
            if used + 1 + len(hint) <= strings.VIEW_CHAR_LIMIT or len(lines) == 2:
                return "\n".join([*lines, hint])
            used -= 1 + len(lines.pop())

    def _file(self, raw: str, data: bytes, view_range: object) -> str:
        content = _decode(data, raw)
        lines = text.split_lines(content)
        n = len(lines)
        if n > strings.MAX_LINES:
            raise Refused(strings.too_many_lines(raw))
        start, end, asked_end = 1, n, -1
        if view_range is not None:
            start, end, asked_end = _check_range(view_range, n)
        header = strings.file_header(raw)
        if n == 0:
            return header
        room = strings.VIEW_CHAR_LIMIT - len(header) - 1
        return header + "\n" + text.numbered_view(lines, start, end, room, asked_end)

    def _image(
        self,
        raw: str,
        parent: object,
        path: MemPath,
        st: Node,
        media_type: str,
        view_range: object,
    ) -> Result:
        if view_range is not None:
            raise Refused(strings.view_range_not_text(raw))
        if st.size > strings.MAX_IMAGE_BYTES:
            raise Refused(strings.image_too_large(raw, st.size))
        data = self.tree.read(parent, path)
        if len(data) > strings.MAX_IMAGE_BYTES:
            raise Refused(strings.image_too_large(raw, len(data)))
        magic, kind = _IMAGE_MAGIC[media_type]
        # The API rejects a request whose image does not decode; refusing here keeps the
        # conversation going instead.
        if not data.startswith(magic):
            raise Refused(strings.image_mismatch(raw, kind))
        source = {
            "type": "base64",
            "media_type": media_type,
            "data": base64.b64encode(data).decode(),
        }
        return Result([{"type": "image", "source": source}], False)

    # --- create -------------------------------------------------------------------

    def create(self, raw: str, path: MemPath, file_text: str) -> Result:
        if path.is_root:
            raise Refused(strings.create_on_directory(raw))
        data = file_text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise Refused(strings.too_large(raw, "file_text", len(data), self.max_file_bytes))
        try:
            with self.tree.directory(path.parent, create=True) as parent:
                # A concurrent writer can make or remove the file between the check and
                # the write; each such race sends us round again on what is there now.
                for _ in range(3):
                    st = self.tree.entry(parent, path)
                    if st is None:
                        self._fits(raw, len(data), True)
                        try:
                            self.tree.create(parent, path, data)
                        except AlreadyExists:
                            continue
                        return _ok(strings.created(raw))
                    if st.kind == "dir":
                        raise Refused(strings.create_on_directory(raw))
                    if st.kind != "file":
                        raise Refused(strings.not_regular(raw))
                    if not self.overwrite:
                        raise Refused(strings.file_exists(raw))
                    self._fits(raw, len(data) - st.size, False)
                    try:
                        self.tree.edit(parent, path, lambda _old: data, read_old=False)
                    except NotFound:
                        continue
                    return _ok(strings.created(raw))
                raise Refused(strings.kept_changing(raw, 3))
        except NotADirectory as exc:
            raise Refused(strings.not_a_directory(raw, exc.path)) from None
        except IsADirectory:
            raise Refused(strings.create_on_directory(raw)) from None
        except SymlinkRefused as exc:
            raise Refused(strings.through_symlink(raw, exc.path)) from None
        except NotRegular:
            raise Refused(strings.not_regular(raw)) from None
        except HardLinked:
            raise Refused(strings.hard_linked(raw)) from None
        except Conflict:
            raise Refused(strings.kept_changing(raw, EDIT_TRIES)) from None

    # --- str_replace and insert ---------------------------------------------------

    def _edit(self, raw: str, path: MemPath, missing: str, change: Any) -> None:
        if path.is_root:
            raise Refused(missing)
        with _refusing(raw, missing), self.tree.directory(path.parent) as parent:
            self.tree.edit(parent, path, change)

    def _encode_capped(self, raw: str, new_text: str, old: bytes) -> bytes:
        data = new_text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise Refused(strings.edit_too_large(raw, len(data), self.max_file_bytes))
        self._fits(raw, len(data) - len(old), False)
        return data

    def str_replace(self, raw: str, path: MemPath, old_str: str, new_str: str) -> Result:
        if old_str == "":
            raise Refused(strings.empty_old_str(raw))
        shown: list[str] = []

        def change(old: bytes) -> bytes:
            content = _decode(old, raw)
            find, put = text.crlf_match(content, old_str, new_str)
            lines = text.occurrence_lines(content, find)
            if not lines:
                raise Refused(strings.not_found(raw, old_str))
            pos = content.find(find)
            if content.find(find, pos + 1) != -1:
                raise Refused(strings.multiple(old_str, lines))
            new_content = content[:pos] + put + content[pos + len(find) :]
            data = self._encode_capped(raw, new_content, old)
            first = lines[0]
            shown[:] = [text.snippet(new_content, first, first + new_str.count("\n"))]
            return data

        self._edit(raw, path, strings.missing_file(raw), change)
        return _ok(strings.replaced(shown[0]))

    def insert(self, raw: str, path: MemPath, insert_line: object, insert_text: str) -> Result:
        def change(old: bytes) -> bytes:
            content = _decode(old, raw)
            n = len(text.split_lines(content))
            if type(insert_line) is not int or not 0 <= insert_line <= n:
                raise Refused(strings.bad_insert_line(insert_line, n))
            return self._encode_capped(raw, text.insert_at(content, insert_line, insert_text), old)

        self._edit(raw, path, strings.path_missing(raw), change)
        return _ok(strings.inserted(raw))

    # --- delete and rename --------------------------------------------------------

    def delete(self, raw: str, path: MemPath) -> Result:
        if path.is_root:
            raise Refused(strings.delete_root())
        try:
            with self.tree.directory(path.parent) as parent:
                self.tree.remove(parent, path)
        except (NotFound, NotADirectory):
            raise Refused(strings.path_missing(raw)) from None
        except SymlinkRefused as exc:
            raise Refused(strings.through_symlink(raw, exc.path)) from None
        return _ok(strings.deleted(raw))

    def rename(self, raw_old: str, old: MemPath, raw_new: str, new: MemPath) -> Result:
        if old.is_root:
            raise Refused(strings.rename_root())
        if new.is_root or new == old:
            raise Refused(strings.destination_exists(raw_new))
        if new.is_within(old):
            raise Refused(strings.into_itself(raw_old, raw_new))
        try:
            with self.tree.directory(old.parent) as src:
                if self.tree.entry(src, old) is None:
                    raise Refused(strings.path_missing(raw_old))
                self._check_destination(raw_new, new)
                with self.tree.directory(new.parent, create=True) as dst:
                    try:
                        self.tree.rename(src, old, dst, new)
                    except AlreadyExists:
                        raise Refused(strings.destination_exists(raw_new)) from None
        except (NotFound, NotADirectory):
            raise Refused(strings.path_missing(raw_old)) from None
        except SymlinkRefused as exc:
            raise Refused(strings.through_symlink(raw_old, exc.path)) from None
        return _ok(strings.renamed(raw_old, raw_new))

    def _check_destination(self, raw_new: str, new: MemPath) -> None:
        """Refuse an existing or unusable destination before creating any parent."""
        try:
            with self.tree.directory(new.parent) as dst:
                if self.tree.exists(dst, new.name):
                    raise Refused(strings.destination_exists(raw_new))
        except NotFound:
            return  # its parents will be made
        except NotADirectory as exc:
            raise Refused(strings.not_a_directory(raw_new, exc.path)) from None
        except SymlinkRefused as exc:
            raise Refused(strings.through_symlink(raw_new, exc.path)) from None


@contextlib.contextmanager
def _refusing(raw: str, missing: str) -> Iterator[None]:
    """Turn the tree's errors while reading or editing the file ``raw`` into the model's
    strings; anything missing on the way (or of the wrong kind) reads as ``missing``."""
    try:
        yield
    except (NotFound, NotADirectory, IsADirectory):
        raise Refused(missing) from None
    except SymlinkRefused as exc:
        raise Refused(strings.through_symlink(raw, exc.path)) from None
    except NotRegular:
        raise Refused(strings.not_regular(raw)) from None
    except HardLinked:
        raise Refused(strings.hard_linked(raw)) from None
    except TooBigToRead as exc:
        raise Refused(strings.too_large_to_read(raw, exc.size, READ_LIMIT)) from None
    except Conflict:
        raise Refused(strings.kept_changing(raw, EDIT_TRIES)) from None


def _check_range(view_range: object, n: int) -> tuple[int, int, int]:
    """Validated ``(start, end, end_as_asked)`` of a view_range over ``n`` lines."""
    if (
        not isinstance(view_range, list | tuple)
        or len(view_range) != 2
        or not all(type(v) is int for v in view_range)
    ):
        raise Refused(strings.view_range_shape(view_range))
    start, end = view_range
    shown_range = list(view_range)
    if n == 0:
        raise Refused(strings.view_range_empty(shown_range))
    if not 1 <= start <= n:
        raise Refused(strings.view_range_start(shown_range, n))
    if end != -1 and not start <= end <= n:
        raise Refused(strings.view_range_end(shown_range, start, n))
    return start, (n if end == -1 else end), end
