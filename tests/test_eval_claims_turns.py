"""eval/claims_turns.py: the reading of every person's turn, and the turns two readings differ on."""

from __future__ import annotations

from pathlib import Path

from eval.claims_turns import differing, person_turns, reading
from eval.updates_data import load_fixture

FIXTURE = Path(__file__).parent / "fixtures" / "updates.json"


def test_person_turns_are_every_persons_turn_once() -> None:
    found = list(person_turns([FIXTURE], None, None))
    persons = [t for c in load_fixture(FIXTURE) for s in c.sessions for t in s.turns if t.role == "user"]
    assert [key for key, _, _ in found] == [t.id for t in persons]


def test_a_reading_holds_claims_and_topics() -> None:
    assert reading("Danny", "I live in Portland.")[0] == ["speaker", "residence", "Portland", False, False]
    assert reading("", "What a lovely day.") == []


def test_turns_read_differently_or_in_one_dump_only_differ() -> None:
    before = {"a": [["speaker", "car", "Civic", False, False]], "b": [], "c": []}
    after = {"a": [["speaker", "car", "Civic", True, False]], "b": [], "d": []}
    assert differing(before, after) == ["a", "c", "d"]
