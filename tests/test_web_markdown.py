"""memfs web renders a note the way its writer laid it out: a line per entry stays a
line (a soft break is a <br>), while raw HTML is still never passed through."""

from __future__ import annotations

from memfs.web.render import markdown


def test_a_line_per_entry_note_keeps_its_lines() -> None:
    note = "2026-12-01 called Alice\n2026-12-02 sent the draft\n2026-12-03 signed\n"
    assert markdown(note) == (
        "<p>2026-12-01 called Alice<br>\n2026-12-02 sent the draft<br>\n2026-12-03 signed</p>\n"
    )


def test_paragraphs_lists_and_no_raw_html() -> None:
    assert markdown("- a\n- b\n\none\n\ntwo\n") == (
        "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<p>one</p>\n<p>two</p>\n"
    )
    assert "<script>" not in markdown("<script>alert(1)</script>\n")
