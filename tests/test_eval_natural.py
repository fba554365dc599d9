"""The natural-question fixtures are well formed, and eval/natural.py's metrics match hand-computed values."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from eval.natural import QuestionScore, empty_lines, summary
from eval.natural_data import CLASSES, Fixture, fixture_problems, holds, load_fixture

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("natural_*.json"))


@pytest.fixture(scope="module", params=FIXTURES, ids=[p.stem for p in FIXTURES])
def fixture(request: pytest.FixtureRequest) -> Fixture:
    return load_fixture(request.param)


def test_there_are_at_least_three_sets() -> None:
    assert len(FIXTURES) >= 3


def test_a_set_is_well_formed(fixture: Fixture) -> None:
    assert fixture_problems(fixture) == []


def test_a_set_has_five_conversations_of_four_to_six_sessions_in_several_offsets(fixture: Fixture) -> None:
    assert len(fixture.conversations) >= 5
    assert all(4 <= len(c.sessions) <= 6 for c in fixture.conversations)
    offsets = {s.date.utcoffset() for c in fixture.conversations for s in c.sessions}
    assert len(offsets) >= 3


def test_a_set_asks_ten_questions_per_conversation_across_every_class(fixture: Fixture) -> None:
    assert all(len(c.questions) >= 10 for c in fixture.conversations)
    per_class = Counter(q.cls for c in fixture.conversations for q in c.questions)
    assert set(per_class) == set(CLASSES) and min(per_class.values()) >= 5


def test_fixture_problems_name_what_is_wrong() -> None:
    asked = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    broken = Fixture.model_validate({"name": "x", "conversations": [{
        "id": "c", "user": "Ann", "assistant": "Ava", "timezone": "America/Denver",
        "sessions": [{"id": "s1", "date": "2024-05-02T10:00:00+00:00", "turns": [
            {"id": "s1-t0", "speaker": "Ann", "role": "user", "text": "I moved to Oslo."}]}],
        "questions": [{"id": "q1", "class": "promise", "question": "What did you promise?", "answer": "x",
                       "query_time": asked.isoformat(), "answer_turns": ["s1-t0", "s9-t9"]},
                      {"id": "q1", "class": "current", "question": "Where now?", "answer": "Oslo",
                       "query_time": "2024-06-01T09:00:00-06:00", "answer_turns": ["s1-t0"]}]}]})
    problems = fixture_problems(broken)
    assert "id q1 is used twice" in problems
    assert "s1: 2024-05-02T10:00:00+00:00 is not America/Denver's offset on that day" in problems
    assert "q1: s1-t0 is said after the question is asked" in problems
    assert "q1: s9-t9 is no turn of c" in problems
    assert "q1: a promise is the assistant's turn" in problems
    assert "q1: a current-fact question names the old statement's turns" in problems


def test_a_note_is_held_by_the_units_of_its_document() -> None:
    assert holds(["c0"], "s5", "s5") and holds(["s1-t2"], "s1", "s1-t2") and not holds(["c0"], "s4", "s5")


def test_summary_counts_ranks_and_the_current_fact_first() -> None:
    scores = [QuestionScore("a", "paraphrase", 1, recalled_lines=4, empty_lines=1),
              QuestionScore("b", "period", 3), QuestionScore("c", "plan", None),
              QuestionScore("d", "current", 2, old_rank=1, recalled_lines=4),
              QuestionScore("e", "current", 1, old_rank=None)]
    assert summary(scores) == {"questions": 5, "top1": 0.4, "top3": 0.8, "empty_recalled_lines": 0.125,
                               "current_over_old": 0.5}


def test_an_empty_recalled_line_is_a_speaker_and_an_elision_only() -> None:
    lines = ["- Tuesday, 2024-05-07 (2 days ago): Ava: … [120 tokens of the assistant's reply]",
             "  Ava: … [33 tokens of the assistant's reply]",
             "- Tuesday, 2024-05-07 (2 days ago): Maya: I moved to Oslo.",
             "  Ava: … [33 tokens of the assistant's reply] Pack two auto-injectors."]
    assert empty_lines(lines) == 2
