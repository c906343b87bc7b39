"""The created-file handle table: bounded, because RELEASE never comes in no-open mode.

Plain objects, no mount: the kernel's side (no RELEASE after the first ENOSYS open) is
in docs/mount-notes.md; these pin the table's bookkeeping.
"""

from __future__ import annotations

from memfs.mount.handles import MAX_HANDLES, MAX_ORPHANS, Handles, Orphan


def test_only_the_newest_handles_are_kept() -> None:
    h = Handles()
    fhs = [h.new(f"d/f{i}") for i in range(MAX_HANDLES + 10)]
    assert len(h) == MAX_HANDLES
    assert h.open_on("d/f0") == []
    assert h.open_on(f"d/f{MAX_HANDLES + 9}") == [fhs[-1]]


def test_a_released_handle_is_gone() -> None:
    h = Handles()
    a, b = h.new("x"), h.new("x")
    assert h.release(a) is None  # another handle still has it open
    assert h.open_on("x") == [b]
    assert h.release(b) == "x"  # its last handle: the path's readers may go
    assert h.open_on("x") == [] and len(h) == 0


def test_rename_moves_a_files_handles_onto_the_destination() -> None:
    h = Handles()
    tmp, kept = h.new("d/.tmp1"), h.new("d/target")
    h.moved("d/.tmp1", "d/target", subtree=False)
    assert h.open_on("d/.tmp1") == []
    assert h.open_on("d/target") == sorted([tmp, kept])


def test_rename_of_a_directory_moves_handles_below_it_only_when_asked() -> None:
    h = Handles()
    inner, sibling = h.new("a/b/c"), h.new("ab/c")
    h.moved("a", "z", subtree=False)
    assert h.open_on("a/b/c") == [inner]
    h.moved("a", "z", subtree=True)
    assert h.open_on("z/b/c") == [inner]
    assert h.open_on("a/b/c") == []
    assert h.open_on("ab/c") == [sibling]


def test_orphans_are_bounded_and_found_by_handle() -> None:
    h = Handles()
    fhs = [h.new(f"o{i}") for i in range(MAX_ORPHANS + 5)]
    for i, fh in enumerate(fhs):
        h.orphan(fh, Orphan(f"o{i}", bytearray(b"data"), mode=0o644))
    assert h.orphaned(fhs[0]) is None
    newest = h.orphaned(fhs[-1])
    assert newest is not None and bytes(newest.data) == b"data"
    assert h.open_on(f"o{MAX_ORPHANS + 4}") == []
    assert len(h) == MAX_ORPHANS


def test_orphans_are_bounded_by_bytes_too() -> None:
    from memfs.mount.handles import MAX_ORPHAN_BYTES

    h = Handles()
    big = MAX_ORPHAN_BYTES // 3 + 1
    fhs = [h.new(f"b{i}") for i in range(4)]
    for i, fh in enumerate(fhs):
        h.orphan(fh, Orphan(f"b{i}", bytearray(big), mode=0o600))
    assert h.orphaned(fhs[0]) is None  # the oldest went to make room
    assert all(h.orphaned(fh) is not None for fh in fhs[2:])
