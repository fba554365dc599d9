"""Which opinion candidates are opinions: one test per rule of hindsight/reflect/opinion_check.py, and the filter that
reflect applies (kept, rejected with reasons, logged without the text)."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import pytest

from hindsight.models import MemoryUnit, Network, Source
from hindsight.reflect.authority import own_word
from hindsight.reflect.opinion_check import (
    check_opinions,
    cited_evidence,
    rejection,
    states_not_knowing,
    supporting,
    voiced,
)
from hindsight.reflect.schemas import OpinionOut
from hindsight.reflect.types import RejectReason

QUERY = "Was moving to Denver a good decision for Maya?"
EVIDENCE = [
    "Maya: I moved to Denver in May and it was the best decision I made this year. | Ava: Great to hear!",
    "Maya joined a running club in Boulder.",
]
NOW = datetime(2024, 7, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text",
    [
        "I do not know.",
        "I don't know whether Maya is happy in Denver.",
        "I can\u2019t tell if the move was good for her.",
        "I'm sorry, I cannot help with that.",
        "I am unable to determine whether the move was good.",
        "I don't have enough information to judge the move.",
        "There is no information about Maya's feelings in my memories.",
        "There isn't enough context to answer.",
        "My memories do not say how Maya feels about Denver.",
        "Her salary is not mentioned in my memories.",
        "It is impossible to say whether the move paid off.",
        "Whether she is happy is unknown.",
    ],
)
def test_statements_of_not_knowing_are_rejected(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is RejectReason.NOT_KNOWING


@pytest.mark.parametrize("text", [QUERY, "Was moving to Denver a good decision for Maya", "Is Denver a good city?"])
def test_questions_and_the_query_itself_are_rejected(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is RejectReason.QUESTION


@pytest.mark.parametrize(
    "text", ["I think so.", "I agree.", "Yes, I do.", "I have no opinion on this.", "I don't have a strong view."]
)
def test_candidates_empty_of_judgment_are_rejected(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is RejectReason.EMPTY


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Denver in May and it was the best decision I made this year.",  # Maya's words, not the bank's
        "maya joined a running club in boulder",  # case and punctuation aside
    ],
)
def test_verbatim_copies_of_one_evidence_unit_are_rejected(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is RejectReason.COPIES_EVIDENCE


@pytest.mark.parametrize(
    "text", ["Maya moved to Denver in May.", "Moving to Denver was good for Maya.", "Maya runs with a club."]
)
def test_third_person_restatements_are_rejected(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is RejectReason.NOT_FIRST_PERSON


@pytest.mark.parametrize(
    "text",
    [
        "I think moving to Denver was a good decision for Maya.",  # the query's words, as a judgment
        "I believe the running club in Boulder is good for Maya.",
        "I like Denver.",
        "I am not sure Priya is the right coach for Maya.",  # doubt is a stance
        "I doubt the supplement is worth the money.",  # a skeptical judgment
    ],
)
def test_first_person_judgments_are_kept(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is None


@pytest.mark.parametrize(
    "text",
    [
        "I think Maya does not know yet whether she will stay.",  # someone else's not knowing: a claim, not a gap
        "I think there is no evidence that the supplement works.",
        "I think Maya joined a running club.",  # not a copy (the span is the bank's own sentence), but a fact
        "I believe the running club in Boulder keeps Maya motivated.",
        "I believe Maya lives in Denver.",
    ],
)
def test_first_person_claims_of_fact_are_rejected(text: str) -> None:
    assert rejection(text, QUERY, EVIDENCE) is RejectReason.FACTUAL_CLAIM


@pytest.mark.parametrize(
    ("candidate", "answer", "expected"),
    [
        ("Priya is a good running coach for Maya", "I think Priya is a good running coach for Maya [1]. She helps.",
         "I think Priya is a good running coach for Maya."),
        ("Maya should use DuckDB.", "It is fast [2]. Overall, I believe that Maya should use DuckDB [2][3] now.",
         "Overall, I believe that Maya should use DuckDB."),
        ("Priya is a good coach.", "I doubt Priya is a good coach.", "I doubt Priya is a good coach."),  # stance kept
        ("moving was good for Maya", "I\u2019d say moving was good for Maya!", "I'd say moving was good for Maya."),
        ("Priya is a good coach", "Maya said Priya is a good coach [1].", None),  # the answer reports, not judges
        ("Priya is a good coach", "I remember that Priya is a good coach.", None),  # a memory, not a stance
        ("Priya is a great coach", "I think Priya is a good coach.", None),  # not the answer's words
    ],
)  # fmt: skip
def test_a_third_person_candidate_is_the_banks_when_the_answer_voices_it(
    candidate: str, answer: str, expected: str | None
) -> None:
    assert voiced(candidate, answer) == expected


def test_states_not_knowing_reads_refusals_and_knowledge_gaps_only() -> None:
    assert states_not_knowing("I'm sorry, but I can't answer that.")
    assert states_not_knowing("I do not have any information about Priya.")
    assert not states_not_knowing("I think Priya is a good coach, though I am not sure how long she has coached.")


def _unit(text: str, network: Network) -> MemoryUnit:
    return MemoryUnit(
        id=text[:8],
        bank_id="b",
        text=text,
        network=network,
        occurred_start=None,
        occurred_end=None,
        mentioned_at=NOW,
        source=Source(document_id="d"),
        content_hash="h",
        created_at=NOW,
    )


def test_check_keeps_opinions_in_order_with_their_citations_and_reports_rejections_without_logging_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    held = "I think Maya made a good move to Denver."
    evidence = [_unit(EVIDENCE[1], Network.WORLD), _unit(held, Network.OPINION)]
    candidates = [
        OpinionOut(opinion="I do not know."),
        OpinionOut(opinion="I think Denver suits Maya.", sources=[1, 1, 9]),  # 9 names no memory
        OpinionOut(opinion="Maya joined a running club in Boulder."),
        OpinionOut(opinion=held, sources=[2]),
        OpinionOut(opinion="Boulder is close to Denver."),
        OpinionOut(opinion="The club is good for Maya"),
        OpinionOut(opinion="I believe Maya trains in Boulder.", sources=[1]),
        OpinionOut(opinion="I think Denver suits Maya", sources=[1]),  # a repeat (case and punctuation aside)
    ]
    answer = "I do not know much [1]. I think the club is good for Maya [1]."
    with caplog.at_level(logging.INFO, logger="hindsight.reflect.opinion_check"):
        kept, rejected = check_opinions(candidates, QUERY, answer, evidence, [evidence[0].id])
    # Repeating one of the bank's own opinions is a judgment reaffirmed, not a copied fact; the answer voices the
    # club's, which cites nothing itself and so rests on what the answer cites.
    assert [(o.opinion.opinion, [u.id for u in o.sources]) for o in kept] == [
        ("I think Denver suits Maya.", [evidence[0].id]), (held, [evidence[1].id]),
        ("I think the club is good for Maya.", [evidence[0].id]),
    ]  # fmt: skip
    assert [(r.text, r.reason) for r in rejected] == [
        ("I do not know.", RejectReason.NOT_KNOWING),
        ("Maya joined a running club in Boulder.", RejectReason.COPIES_EVIDENCE),
        ("Boulder is close to Denver.", RejectReason.NOT_FIRST_PERSON),
        ("I believe Maya trains in Boulder.", RejectReason.FACTUAL_CLAIM),
    ]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 4 and "not_knowing" in messages[0] and "factual_claim" in messages[3]
    assert all(r.levelno == logging.INFO for r in caplog.records)
    assert not any("running club" in m or "do not know" in m or "trains" in m for m in messages)


def test_a_judgment_without_a_valid_citation_is_rejected_as_uncited() -> None:
    evidence = [_unit(EVIDENCE[1], Network.WORLD)]
    candidates = [OpinionOut(opinion="I think the club is good for Maya.", sources=[0, 2, 7]),
                  OpinionOut(opinion="I think Denver suits Maya.")]  # fmt: skip
    kept, rejected = check_opinions(candidates, QUERY, "I think the club is good for Maya.", evidence, [])
    assert kept == []
    assert [r.reason for r in rejected] == [RejectReason.UNCITED, RejectReason.UNCITED]


def test_a_third_person_candidate_voiced_as_a_belief_of_fact_is_rejected() -> None:
    evidence = [_unit(EVIDENCE[1], Network.WORLD)]
    answer = "I believe Maya lives in Boulder now [1]."
    kept, rejected = check_opinions([OpinionOut(opinion="Maya lives in Boulder now")], QUERY, answer, evidence,
                                    [evidence[0].id])
    assert kept == [] and [(r.text, r.reason) for r in rejected] == [
        ("I believe Maya lives in Boulder now.", RejectReason.FACTUAL_CLAIM)]


def test_cited_evidence_takes_valid_numbers_else_the_answers_citations() -> None:
    a, b, c = (_unit(t, Network.WORLD) for t in ("Maya runs.", "Maya moved to Denver.", "Priya coaches Maya."))
    evidence = [a, b, c]
    assert cited_evidence(OpinionOut(opinion="I think so and so.", sources=[3, 1, 3]), evidence, [b.id]) == [c, a]
    assert cited_evidence(OpinionOut(opinion="I think so and so.", sources=[0, 4]), evidence, [b.id]) == [b]
    assert cited_evidence(OpinionOut(opinion="I think so and so."), evidence, ["gone"]) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I think the running club is good for Maya.", True),
        ("I think running with others keeps Maya going.", True),  # "running" and "run" share a stem
        ("I think the move was good for her.", False),  # about nothing the memory mentions: a copied example
        ("I think Maya should join the Rainier Runners instead.", False),  # a club no memory or question names
        ("I think Maya should stay in Denver.", True),  # Denver is in the question
        ("I think it is good.", True),  # nothing to check; other rules judge such a candidate
    ],
)
def test_an_opinion_is_supported_when_its_cited_memories_bear_on_it(text: str, expected: bool) -> None:
    cited = [_unit("Maya: I run with the Boulder running club on Sundays.", Network.EXPERIENCE)]
    assert bool(supporting(text, QUERY, cited)) is expected


def test_the_evidence_of_an_opinion_is_the_cited_memories_that_bear_on_it() -> None:
    club, coach, job = (_unit(t, Network.WORLD) for t in (
        "Maya runs with a club in Boulder.", "Priya coaches Maya twice a week.", "Ava started a job at a bakery."))
    assert supporting("I think the club in Boulder is good for Maya.", QUERY, [club, coach, job]) == [club, coach]


def test_a_candidate_whose_citations_do_not_bear_on_it_is_rejected_as_unsupported() -> None:
    evidence = [_unit(EVIDENCE[1], Network.WORLD)]
    copied = OpinionOut(opinion="I think [a choice] was good for [someone].", sources=[1])
    kept, rejected = check_opinions([copied], QUERY, "I think so [1].", evidence, [])
    assert kept == [] and [r.reason for r in rejected] == [RejectReason.UNSUPPORTED]


@pytest.mark.parametrize(("text", "own"), [
    ("Danny: I actually love my job at the hospital.", True),  # Danny is Daniel, speaking of himself
    ("Danny: Seattle is rainy.\nassistant: I think you would like Portland more.", False),  # no "I" of his own
    ("Leah: Daniel told me he hates his job.", False),  # a report by someone else
    ("Danny hates his job, says Leah.", False),  # no speaker
])
def test_own_word_is_the_person_speaking_of_themselves(text: str, own: bool) -> None:
    fact = _unit(text, Network.WORLD)
    assert (own_word(["Daniel Park", "Seattle"], [fact]) == [fact]) is own


def test_stated_judgments_are_the_answers_sentences_that_judge_in_the_banks_voice() -> None:
    from hindsight.reflect.opinion_check import stated_judgments

    answer = ("Maya moved to Denver in March [1]. I believe she lives near the gym. I think the move was good for "
              "her [2]. Honestly, I think she should stay! Maya thinks it was worth it.")
    assert [o.opinion for o in stated_judgments(answer)] == ["I think the move was good for her.",
                                                             "Honestly, I think she should stay!"]
    assert stated_judgments("I do not know.") == []
