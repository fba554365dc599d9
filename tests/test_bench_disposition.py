"""The disposition bench's verdicts and counts (bench/disposition_direction.py); the model run is in
tests/test_reflect_real.py."""

from __future__ import annotations

from bench.disposition_direction import Pair, summary, verdict


def test_a_verdict_is_the_answers_first_word() -> None:
    assert verdict("Yes. Bob's supplement ...") == "yes"
    assert verdict("no, I doubt it [1]") == "no"
    assert verdict("  **No**") == "no"
    assert verdict("I think not.") == "other"
    assert verdict("Yesterday he said so.") == "other"
    assert verdict("") == "other"


def test_the_summary_counts_each_direction() -> None:
    pairs = [Pair("a", "No.", "Yes."), Pair("b", "Yes.", "No."), Pair("c", "No.", "No."), Pair("d", "Maybe", "Yes")]
    assert summary(pairs) == {"pairs": 4, "skeptic_yes": 1, "believer_yes": 2, "stated_direction": 1, "reversed": 1,
                              "other": 1}
