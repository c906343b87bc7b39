"""memfs.secrets on the corpus: every credential caught whole (or a documented miss),
every look-alike left alone, redaction that removes the secret and stays put, masks
that never show it, and the catch/miss table (printed with ``pytest -s``)."""

from __future__ import annotations

import itertools

import pytest

from memfs.secrets import check_policy, mask, redact, scan
from tests.secrets_corpus import CREDENTIALS, LOOK_ALIKES, Case

CAUGHT = [c for c in CREDENTIALS if c.caught]
MISSED = [c for c in CREDENTIALS if not c.caught]


@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.name)
def test_each_credential_is_found_whole_with_its_kind(case: Case) -> None:
    findings = scan(case.text)
    assert [(f.kind, f.value) for f in findings] == [(case.kind, case.secret)]
    start = case.text.index(case.secret)
    assert (findings[0].start, findings[0].end) == (start, start + len(case.secret))
    assert findings[0].line == case.text[:start].count("\n") + 1
    assert findings[0].why  # said to the model: never empty


@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.name)
def test_redaction_replaces_the_secret_and_finds_nothing_more(case: Case) -> None:
    redacted = redact(case.text, scan(case.text))
    assert redacted == case.text.replace(case.secret, f"[REDACTED:{case.kind}]")
    assert scan(redacted) == []  # the marker is not itself a finding


@pytest.mark.parametrize("case", MISSED, ids=lambda c: c.name)
def test_documented_misses_are_still_missed(case: Case) -> None:
    # If one of these starts being caught, move it to the caught cases (and the README).
    assert case.why
    assert all(case.secret not in f.value for f in scan(case.text))


@pytest.mark.parametrize("case", LOOK_ALIKES, ids=lambda c: c.name)
def test_look_alikes_are_left_alone(case: Case) -> None:
    assert scan(case.text) == []


@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.name)
def test_a_mask_shows_at_most_four_characters_and_a_quarter(case: Case) -> None:
    shown = mask(case.secret)
    head = shown.split("…", 1)[0]
    assert shown == f"{head}… ({len(case.secret)} chars)"
    assert len(head) <= min(4, len(case.secret) // 4)
    assert case.secret not in shown


def test_findings_in_one_text_do_not_overlap_and_keep_their_lines() -> None:
    text = "".join(c.text for c in CAUGHT)
    findings = scan(text)
    assert [(f.kind, f.value) for f in findings] == [(c.kind, c.secret) for c in CAUGHT]
    for f in findings:
        assert f.line == text[: f.start].count("\n") + 1
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))


def test_the_policy_names() -> None:
    assert [check_policy(p) for p in ("redact", "refuse", "allow")] == ["redact", "refuse", "allow"]
    with pytest.raises(ValueError, match="secrets policy must be one of redact, refuse, allow"):
        check_policy("warn")


def catch_miss_table() -> list[str]:
    rows = [f"{'case':<34} {'expected':<22} result"]
    for case in CREDENTIALS:
        found = [f.kind for f in scan(case.text) if case.secret in f.value]
        result = f"caught as {found[0]}" if found else f"MISSED ({case.why})"
        rows.append(f"{case.name:<34} {case.kind:<22} {result}")
    for case in LOOK_ALIKES:
        found = [f.kind for f in scan(case.text)]
        result = "left alone" if not found else f"FALSE POSITIVE {found}"
        rows.append(f"{case.name:<34} {'(look-alike)':<22} {result}")
    return rows


def test_catch_miss_table() -> None:
    rows = catch_miss_table()
    print("\n" + "\n".join(rows))
    kinds = {c.kind for c in CAUGHT}
    assert len(kinds) >= 15, kinds
    assert len(LOOK_ALIKES) >= len(CREDENTIALS)
    assert sum("caught as" in r for r in rows) == len(CAUGHT) == 43
    assert sum("MISSED" in r for r in rows) == len(MISSED) == 3
    assert sum(r.endswith(" left alone") for r in rows) == len(LOOK_ALIKES)
    assert not any("FALSE POSITIVE" in r for r in rows)
