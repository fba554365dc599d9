"""The profile-shares bench counts each sample once per function at or below the focus frame."""

from __future__ import annotations

from bench.profile_shares import function, shares

LINES = [
    "<module> (run.py:3);recall (h/engine.py:10);search (h/bm25.py:40);read (h/postings.py:9) 6",
    "<module> (run.py:3);recall (h/engine.py:10);search (h/bm25.py:41);score (h/bm25.py:80) 2",
    # a recursive call counts once for its function
    "<module> (run.py:3);recall (h/engine.py:10);search (h/bm25.py:40);search (h/bm25.py:40) 2",
    "<module> (run.py:3);load (h/engine.py:90) 30",
    "not a sample line",
]


def test_shares_are_inclusive_under_the_focus_only() -> None:
    result = shares(LINES, r"^search \(", top=10)
    assert result.samples == 10
    assert result.shares == {"search (bm25.py)": 100.0, "read (postings.py)": 60.0, "score (bm25.py)": 20.0}


def test_top_keeps_the_largest_and_a_frame_is_named_without_its_line() -> None:
    assert list(shares(LINES, "recall", top=2).shares) == ["recall (engine.py)", "search (bm25.py)"]
    assert function("read (h/postings.py:9)") == "read (postings.py)"
    assert function("<native>") == "<native>"
