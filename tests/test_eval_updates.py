"""The knowledge-update fixture is well formed, and eval/updates.py's metrics match hand-computed values."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest

from eval.updates import CaseScore, RankedUnit, per_attribute, score_case, summary
from eval.updates_data import Case, Conversation, Session, Turn, fixture_problems, load_fixture

FIXTURE = Path(__file__).parent / "fixtures" / "updates.json"
# Written blind to the detection (c11 to c20), to measure it on conversations nobody tuned it on.
HELD_OUT = Path(__file__).parent / "fixtures" / "updates_heldout.json"
# A second blind set (c21 to c30), written after the first had been read while improving the detection.
BLIND2 = Path(__file__).parent / "fixtures" / "updates_blind2.json"
# A third (c31 to c40), written by another engineer after the second had been looked at in aggregate only.
BLIND3 = Path(__file__).parent / "fixtures" / "updates_blind3.json"
# A fourth (c41 to c50), written after the third had been read.
BLIND4 = Path(__file__).parent / "fixtures" / "updates_blind4.json"
# A fifth (c51 to c60), written after the fourth had been read, a sixth (c61 to c70) after the fifth had been, a
# seventh (c71 to c80) while the sixth was still unread, an eighth (c81 to c90) while the sixth and the seventh's
# update cases were, a ninth (c91 to c100) while the eighth's were, and a tenth (c101 to c110) while the ninth's were.
BLIND5 = Path(__file__).parent / "fixtures" / "updates_blind5.json"
BLIND6 = Path(__file__).parent / "fixtures" / "updates_blind6.json"
BLIND7 = Path(__file__).parent / "fixtures" / "updates_blind7.json"
BLIND8 = Path(__file__).parent / "fixtures" / "updates_blind8.json"
BLIND9 = Path(__file__).parent / "fixtures" / "updates_blind9.json"
BLIND10 = Path(__file__).parent / "fixtures" / "updates_blind10.json"
FIXTURES = (FIXTURE, HELD_OUT, BLIND2, BLIND3, BLIND4, BLIND5, BLIND6, BLIND7, BLIND8, BLIND9, BLIND10)
KINDS = ("residence", "workplace", "school", "partner", "diet", "club", "car", "phone")


@pytest.fixture(scope="module", params=FIXTURES,
                ids=["updates", "updates_heldout", "blind2", "blind3", "blind4", "blind5", "blind6", "blind7",
                     "blind8", "blind9", "blind10"])
def conversations(request: pytest.FixtureRequest) -> list[Conversation]:
    return load_fixture(request.param)


def test_the_held_out_fixture_shares_no_id_with_the_other() -> None:
    assert fixture_problems([c for f in FIXTURES for c in load_fixture(f)]) == []


def test_the_fixture_validates(conversations: list[Conversation]) -> None:
    assert fixture_problems(conversations) == []
    cases = [c for conv in conversations for c in conv.cases]
    kinds = Counter(c.kind for c in cases)
    assert kinds["update"] >= 40 and kinds["non_update"] >= 40
    per_kind = Counter(c.attribute for c in cases if c.kind == "update")
    assert all(per_kind[k] >= 4 for k in KINDS), per_kind
    assert sum(1 for c in cases if c.kind == "update" and c.past_question) >= 15


def test_the_fixture_is_multi_session_chat(conversations: list[Conversation]) -> None:
    assert len(conversations) >= 8
    for conv in conversations:
        assert 3 <= len(conv.sessions) <= 6, conv.id
        dates = [s.date for s in conv.sessions]
        assert all(b - a >= timedelta(days=7) for a, b in pairwise(dates)), conv.id
        for session in conv.sessions:
            assert 6 <= len(session.turns) <= 14, session.id
            roles = [t.role for t in session.turns]
            assert roles == ["user", "assistant"] * (len(roles) // 2), session.id


def conversation(cases: list[Case]) -> Conversation:
    def turns(session: str) -> list[Turn]:
        return [Turn(id=f"{session}-t0", speaker="Ann", role="user", text="I live in Oslo."),
                Turn(id=f"{session}-t1", speaker="Bot", role="assistant", text="Nice.")]

    return Conversation(id="x", sessions=[Session(id="x-s1", date=datetime(2024, 1, 1), turns=turns("x-s1")),
                                          Session(id="x-s2", date=datetime(2024, 2, 1), turns=turns("x-s2"))],
                        cases=cases)


def case(old: str = "x-s1-t0", new: str = "x-s2-t0", kind: str = "update", id: str = "x-u1") -> Case:
    return Case(id=id, kind=kind, attribute="residence", subject="Ann", old=old, new=new,  # type: ignore[arg-type]
                question="Where does Ann live now?")


def test_fixture_problems_name_each_fault() -> None:
    assert fixture_problems([conversation([case()])]) == []
    assert fixture_problems([conversation([case(), case()])]) == ["id x-u1 is used twice"]
    assert fixture_problems([conversation([case(new="x-s2-t1")])]) == ["x-u1: new is an assistant's turn"]
    assert fixture_problems([conversation([case(old="x-s9-t0")])]) == ["x-u1: old is no turn of x"]
    assert fixture_problems([conversation([case(old="x-s2-t0", new="x-s1-t0")])]) == [
        "x-u1: old is not from an earlier session than new"]
    assert fixture_problems([conversation([case(new="x-s1-t0")])]) == [
        "x-u1: old is not from an earlier session than new"]


OLD = RankedUnit("u-old", ("x-s1-t0", "x-s1-t1"))
NEW = RankedUnit("u-new", ("x-s2-t0", "x-s2-t1"))
OTHER = RankedUnit("u-other", ("x-s3-t0",))


@pytest.mark.parametrize(
    ("hits", "old_rank", "new_rank", "new_first"),
    [
        ([NEW, OTHER, OLD], 3, 1, True),
        ([OTHER, OLD, NEW], 2, 3, False),
        ([OTHER, NEW], None, 2, True),  # the older statement is not recalled at all
        ([OLD, OTHER], 1, None, False),  # the newer statement is not recalled
        ([OTHER], None, None, False),
    ],
)
def test_ranks_and_new_first(hits: list[RankedUnit], old_rank: int | None, new_rank: int | None,
                             new_first: bool) -> None:
    score = score_case(case(), hits, {"u-new"})
    assert (score.old_rank, score.new_rank, score.new_first) == (old_rank, new_rank, new_first)
    assert not score.marked and not score.past_asked


def test_marked_only_when_the_old_hit_names_a_unit_of_the_new_turn() -> None:
    marked_old = RankedUnit("u-old", OLD.turn_ids, superseded_by="u-new")
    assert score_case(case(), [NEW, marked_old], {"u-new"}).marked
    # The new unit need not be among the hits: superseded_by names it by id.
    assert score_case(case(), [marked_old], {"u-new"}).marked
    assert not score_case(case(), [NEW, RankedUnit("u-old", OLD.turn_ids, "u-other")], {"u-new"}).marked
    # Another hit superseded by the new unit says nothing about the old one.
    assert not score_case(case(), [NEW, OLD, RankedUnit("u-other", OTHER.turn_ids, "u-new")], {"u-new"}).marked


def test_past_rank_is_the_old_turns_rank_in_the_past_question() -> None:
    score = score_case(case(), [NEW, OLD], {"u-new"}, past_hits=[OTHER, NEW, OLD])
    assert (score.past_asked, score.past_rank) == (True, 3)
    assert score_case(case(), [NEW], {"u-new"}, past_hits=[NEW]).past_rank is None


def score(id: str, kind: str, attribute: str, old: int | None, new: int | None, marked: bool = False,
          past: int | None = None, asked: bool = False) -> CaseScore:
    return CaseScore(id, kind, attribute, old, new, marked, past, asked)


def test_summary_and_per_attribute() -> None:
    scores = [
        score("u1", "update", "car", 2, 1, marked=True, past=1, asked=True),
        score("u2", "update", "car", 1, 2, past=11, asked=True),
        score("u3", "update", "diet", None, 4),
        score("u4", "update", "diet", 1, None),
        score("n1", "non_update", "car", 1, 2),
        score("n2", "non_update", "car", 3, 1, marked=True),
        score("n3", "non_update", "diet", 2, 1),
    ]
    assert summary(scores) == {
        "update_cases": 4, "non_update_cases": 3, "past_cases": 2, "update_recall": 0.5, "marked": 0.25,
        "past_recall@10": 0.5, "false_supersessions": 0.3333, "new_above_old": 0.6667,
    }
    groups = per_attribute(scores)
    assert list(groups) == ["car", "diet"]
    assert groups["diet"] == {"update_cases": 2, "non_update_cases": 1, "past_cases": 0, "update_recall": 0.5,
                              "marked": 0.0, "false_supersessions": 0.0, "new_above_old": 1.0}
    assert summary([]) == {"update_cases": 0, "non_update_cases": 0, "past_cases": 0}
