"""Offline tests of the LLM interface's structured path and the llm extractor (scripted fake LLM)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight.errors import ExtractionError, LLMError
from hindsight.llm.base import ChatMessage, LLMResponse, ReplyFormatError, StructuredOutputError, parse_json_reply
from hindsight.models import CausalKind, Document, LLMUsage, Network, Turn
from hindsight.retain.llm_extractor import LLMExtractor, compose_text, time_phrase
from hindsight.retain.llm_prompts import extraction_messages
from hindsight.retain.llm_schema import MAX_FACTS_PER_CALL, ExtractedFactOut, FactExtractionOut
from tests.fake_llm import FakeScriptedLLM

T0 = datetime(2024, 6, 10, 9, 30, tzinfo=UTC)  # a Monday

CONVERSATION = [
    ("Priya", "user", "My roommate Emily got married in Lisbon last Saturday! I flew there on Friday."),
    (None, "assistant", "Congratulations to Emily! Since you are in Lisbon, the Alfama walking tour is a must."),
    ("Priya", "user", "Great idea, I booked it for tomorrow."),
    (None, "assistant", "Enjoy the tour, and bring comfortable shoes."),
]


def make_doc(n_turns: int = 2, document_id: str = "doc-1") -> Document:
    turns = []
    for i in range(n_turns):
        speaker, role, text = CONVERSATION[i % len(CONVERSATION)]
        turns.append(Turn(index=i, turn_id=f"t{i}", speaker=speaker, role=role, text=text,
                          timestamp=T0 + timedelta(minutes=i)))
    return Document(document_id=document_id, turns=turns, timestamp=T0)


def fact(what: str, **fields: Any) -> dict[str, Any]:
    return {"what": what, "fact_type": "world", "entities": [], "causal_relations": [], **fields}


def reply(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


VALID = reply(
    fact("Emily (the user's roommate) got married", where="Lisbon", who="Emily, the user's roommate",
         occurred_start="2024-06-08", occurred_end="2024-06-08", entities=["Emily", "Lisbon"]),
    fact("Priya (the user) flew to Lisbon for the wedding of her roommate Emily", fact_type="World",
         why="to attend Emily's wedding", occurred_start="2024-06-07", entities=["Priya", "Lisbon", "Emily"],
         causal_relations=[{"target_index": 0, "relation_type": "caused_by", "strength": 0.9}]),
    fact("I suggested the Alfama walking tour in Lisbon to Priya", fact_type="Experience",
         entities=["Alfama", "Lisbon", "Priya"],
         causal_relations=[{"target_index": 1, "relation_type": "enables", "strength": 1.7}]),
)


def test_valid_reply_becomes_facts() -> None:
    llm = FakeScriptedLLM([VALID])
    facts = LLMExtractor(llm).extract(make_doc(2))
    assert len(facts) == 3 and llm.remaining == 0
    wedding, flight, tip = facts
    assert wedding.text == "Emily (the user's roommate) got married in Lisbon on Saturday, June 8, 2024."
    assert wedding.network is Network.WORLD
    assert wedding.occurred_start == datetime(2024, 6, 8, tzinfo=UTC)
    assert wedding.occurred_end is not None and wedding.occurred_end.date() == wedding.occurred_start.date()
    assert [e.text for e in wedding.entities] == ["Emily", "Lisbon"]
    assert all(e.label == "ENTITY" for e in wedding.entities)
    assert wedding.mentioned_at == T0 + timedelta(minutes=1)
    assert wedding.source.document_id == "doc-1" and wedding.source.turn_ids == ["t0", "t1"]
    # A lone start date covers that whole day; the why is appended after the date.
    assert flight.occurred_start == datetime(2024, 6, 7, tzinfo=UTC)
    assert flight.occurred_end is not None and flight.occurred_end.date() == flight.occurred_start.date()
    assert flight.text.endswith("on Friday, June 7, 2024, to attend Emily's wedding.")
    assert [(c.target_index, c.kind, c.strength) for c in flight.causal] == [(0, CausalKind.CAUSED_BY, 0.9)]
    assert tip.network is Network.EXPERIENCE
    assert tip.occurred_start is None and tip.occurred_end is None
    assert tip.causal[0].strength == 1.0  # clamped
    # The prompt carries the speakers and the message dates, and JSON mode is on.
    user_prompt = llm.prompts[0][-1].content
    assert "[2024-06-10 Monday] Priya (user): My roommate Emily" in user_prompt
    assert "[2024-06-10 Monday] assistant: Congratulations" in user_prompt
    assert '"facts"' in llm.prompts[0][0].content  # schema in the system prompt
    assert llm.options[0]["json_mode"] is True


def test_fenced_reply_with_prose_parses() -> None:
    llm = FakeScriptedLLM([f"Here are the facts:\n```json\n{VALID}\n```\nLet me know if you need more."])
    assert len(LLMExtractor(llm).extract(make_doc())) == 3


def test_truncated_then_valid_reasks_once_with_the_error() -> None:
    truncated = LLMResponse(VALID[: len(VALID) // 2], finish_reason="length")
    llm = FakeScriptedLLM([truncated, VALID])
    result = llm.structured([ChatMessage("user", "extract")], FactExtractionOut)
    assert result.attempts == 2 and len(result.value.facts) == 3
    assert result.usage.calls == 2
    reask = llm.prompts[1]
    assert reask[-2].role == "assistant" and reask[-2].content == truncated.text
    assert reask[-1].role == "user" and "truncated" in reask[-1].content
    assert "max_tokens" in reask[-1].content


def test_garbage_every_time_raises_extraction_error() -> None:
    llm = FakeScriptedLLM(["not json at all"] * 3)
    with pytest.raises(ExtractionError, match="doc-garbage") as info:
        LLMExtractor(llm, max_retries=2).extract(make_doc(document_id="doc-garbage"))
    assert info.value.document_id == "doc-garbage"
    cause = info.value.__cause__
    assert isinstance(cause, StructuredOutputError)
    assert cause.raw_text == "not json at all" and "no JSON" in cause.validation_error
    assert cause.attempts == 3 and len(llm.prompts) == 3


def test_structured_error_truncates_raw_text() -> None:
    llm = FakeScriptedLLM(["x" * 5000])
    with pytest.raises(StructuredOutputError) as info:
        llm.structured([ChatMessage("user", "hi")], FactExtractionOut, max_retries=0)
    assert len(info.value.raw_text) < 600 and isinstance(info.value, LLMError)


@pytest.mark.parametrize("bad", ["I'm sorry, I can't help with that.", "", "   "])
def test_refusal_or_empty_reply_is_retried(bad: str) -> None:
    llm = FakeScriptedLLM([bad, VALID])
    facts = LLMExtractor(llm).extract(make_doc())
    assert len(facts) == 3 and len(llm.prompts) == 2
    assert "refusal" in llm.prompts[1][-1].content or "empty" in llm.prompts[1][-1].content


def test_schema_violation_is_retried() -> None:
    llm = FakeScriptedLLM([json.dumps({"facts": "Emily got married"}), VALID])
    facts = LLMExtractor(llm).extract(make_doc())
    assert len(facts) == 3
    assert "does not match the schema" in llm.prompts[1][-1].content and "facts" in llm.prompts[1][-1].content


def test_unknown_fact_type_is_retried() -> None:
    llm = FakeScriptedLLM([reply(fact("Emily got married", fact_type="gossip")), VALID])
    assert len(LLMExtractor(llm).extract(make_doc())) == 3


def test_forward_self_and_out_of_range_causal_links_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    text = reply(
        fact("A happened", causal_relations=[{"target_index": 1, "relation_type": "causes", "strength": 1}]),
        fact("B happened", causal_relations=[
            {"target_index": 1, "relation_type": "caused_by", "strength": 1},
            {"target_index": 7, "relation_type": "caused_by", "strength": 1},
            {"target_index": -1, "relation_type": "caused_by", "strength": 1},
            {"target_index": 0, "relation_type": "caused_by", "strength": 0.5},
        ]),
    )
    with caplog.at_level(logging.WARNING):
        facts = LLMExtractor(FakeScriptedLLM([text])).extract(make_doc())
    assert facts[0].causal == []
    assert [(c.target_index, c.strength) for c in facts[1].causal] == [(0, 0.5)]
    assert sum("not an earlier fact" in r.getMessage() for r in caplog.records) == 4


def test_invalid_date_becomes_none_not_failure(caplog: pytest.LogCaptureFixture) -> None:
    text = reply(fact("Emily got married", occurred_start="sometime soonish", occurred_end="2024-13-45"))
    with caplog.at_level(logging.WARNING):
        facts = LLMExtractor(FakeScriptedLLM([text])).extract(make_doc())
    assert len(facts) == 1 and facts[0].occurred_start is None and facts[0].occurred_end is None
    assert any("unparseable" in r.getMessage() for r in caplog.records)


def test_empty_what_is_dropped_and_indices_follow(caplog: pytest.LogCaptureFixture) -> None:
    text = reply(
        fact("A happened"),
        fact("   "),
        fact("C happened", causal_relations=[
            {"target_index": 0, "relation_type": "caused_by", "strength": 1},
            {"target_index": 1, "relation_type": "caused_by", "strength": 1},
        ]),
        fact("D happened", causal_relations=[{"target_index": 2, "relation_type": "enables", "strength": 0.4}]),
    )
    with caplog.at_level(logging.WARNING):
        facts = LLMExtractor(FakeScriptedLLM([text])).extract(make_doc())
    assert [f.text for f in facts] == ["A happened.", "C happened.", "D happened."]
    assert [c.target_index for c in facts[1].causal] == [0]  # the link to the dropped fact is gone
    assert [(c.target_index, c.kind) for c in facts[2].causal] == [(1, CausalKind.ENABLES)]  # "C" moved to 1
    assert any("empty 'what'" in r.getMessage() for r in caplog.records)


def test_chunking_offsets_causal_indices_and_provenance() -> None:
    first = reply(fact("A happened"), fact("B happened"))
    second = reply(
        fact("C happened"),
        fact("D happened", causal_relations=[{"target_index": 0, "relation_type": "caused_by", "strength": 0.8}]),
    )
    llm = FakeScriptedLLM([first, second])
    facts = LLMExtractor(llm, max_turns_per_call=2).extract(make_doc(4))
    assert len(llm.prompts) == 2 and len(facts) == 4
    assert [c.target_index for c in facts[3].causal] == [2]
    assert facts[0].source.turn_ids == ["t0", "t1"] and facts[2].source.turn_ids == ["t2", "t3"]
    assert facts[0].mentioned_at == T0 + timedelta(minutes=1)
    assert facts[3].mentioned_at == T0 + timedelta(minutes=3)
    assert "booked it for tomorrow" in llm.prompts[1][-1].content
    assert "booked it for tomorrow" not in llm.prompts[0][-1].content


def test_chunking_by_characters() -> None:
    llm = FakeScriptedLLM([reply(fact("A")), reply(fact("B"))])
    facts = LLMExtractor(llm, max_chars_per_call=150).extract(make_doc(3))
    # t0 (78 chars) + t1 (88 chars) exceed 150, so t1 starts the second chunk.
    assert len(llm.prompts) == 2
    assert [f.source.turn_ids for f in facts] == [["t0"], ["t1", "t2"]]


def test_usage_is_accumulated_over_calls_and_failed_attempts() -> None:
    llm = FakeScriptedLLM(["garbage", reply(fact("A")), reply(fact("B"))])
    extractor = LLMExtractor(llm, max_turns_per_call=1)
    extractor.extract(make_doc(2))
    assert extractor.usage == llm.total_usage
    assert extractor.usage.calls == 3 and extractor.usage.prompt_tokens > 0 and extractor.usage.completion_tokens > 0
    failing = FakeScriptedLLM(["bad"] * 3)
    extractor = LLMExtractor(failing)
    with pytest.raises(ExtractionError):
        extractor.extract(make_doc())
    assert extractor.usage.calls == 3


@pytest.mark.parametrize("exc", [RuntimeError("connection reset"), LLMError("timeout after 30s")])
def test_exception_from_complete_becomes_extraction_error(exc: Exception) -> None:
    llm = FakeScriptedLLM([exc, VALID])
    with pytest.raises(ExtractionError, match="doc-1") as info:
        LLMExtractor(llm).extract(make_doc())
    assert isinstance(info.value.__cause__, LLMError)
    assert len(llm.prompts) == 1  # errors from the backend are not re-asked
    if isinstance(exc, LLMError):
        assert info.value.__cause__ is exc


def test_empty_document_makes_no_call() -> None:
    llm = FakeScriptedLLM([])
    doc = Document(document_id="empty", turns=[], timestamp=T0)
    assert LLMExtractor(llm).extract(doc) == [] and llm.prompts == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```\n{"a": "x}"}\n```', {"a": "x}"}),
        ('Sure: {"a": {"b": [1, 2]}} Hope it helps {"c": 2}', {"a": {"b": [1, 2]}}),
        ('note {not json} then {"a": 1}', {"a": 1}),
        ('[{"what": "x"}]', [{"what": "x"}]),
        ('{"a": {bad} } and then {"b": 2}', {"b": 2}),
    ],
)
def test_parse_json_reply(text: str, expected: Any) -> None:
    assert parse_json_reply(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("I'm sorry, I can't do that.", "refusal"), ('{"a": [1', "truncated"),
     ('{"a": tru}', "invalid JSON"), ("plain words", "no JSON"),
     ('{"facts": [{"what": "a"}, {"what": "b", "who"', "truncated")],
)
def test_parse_json_reply_errors(text: str, message: str) -> None:
    with pytest.raises(ReplyFormatError, match=message):
        parse_json_reply(text)


def test_schema_leniency() -> None:
    out = FactExtractionOut.model_validate([{
        "what": "Team offsite", "fact_type": " EXPERIENCE ", "who": ["Ana", "Ben"], "where": "null",
        "occurred_start": "2024-06", "entities": ["Ana", {"name": "Ben"}, "ana", ""],
        "causal": [{"target": 0, "type": "Caused By", "strength": "-3"}, {"target_index": "x", "type": "causes"}],
    }])
    got = out.facts[0]
    assert got.fact_type == "experience" and got.who == "Ana, Ben" and got.where is None
    assert (got.occurred_start, got.occurred_end) == ("2024-06-01", "2024-06-30")
    assert got.entities == ["Ana", "Ben"]
    assert [(r.target_index, r.relation_type, r.strength) for r in got.causal_relations] == [(0, "caused_by", 0.0)]


def test_time_phrases_and_composition() -> None:
    d = datetime(2024, 6, 1, tzinfo=UTC)
    end_of = datetime(2024, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    assert time_phrase(d, end_of) == "in June 2024"
    assert time_phrase(d, datetime(2024, 6, 3, 23, 59, tzinfo=UTC)) == "between June 1, 2024 and June 3, 2024"
    assert time_phrase(None, None) is None
    out = ExtractedFactOut(what="Ana started a new job.", who="Ana (the user's sister); Ben", where="at Acme",
                           when="last month", why="she wanted to move closer to home")
    assert compose_text(out, None, None) == (
        "Ana started a new job at Acme (involving Ben) (last month), "
        "because she wanted to move closer to home."
    )
    assert compose_text(ExtractedFactOut(what="Ben met Ana", who="Ana, Ben"), d, end_of) == "Ben met Ana in June 2024."


def test_prompt_renders_context_and_plain_text_turns() -> None:
    turn = Turn(index=0, turn_id="p0", speaker=None, role=None, text="Notes from the trip.", timestamp=T0)
    messages = extraction_messages([turn], context="travel journal")
    assert messages[0].role == "system" and "Context: travel journal" in messages[1].content
    assert "[2024-06-10 Monday] Notes from the trip." in messages[1].content


def test_usage_addition() -> None:
    total = LLMUsage(1, 2, 1) + LLMUsage(10, 20, 2)
    assert total == LLMUsage(11, 22, 3) and total.total_tokens == 33


def test_reask_shows_only_the_latest_bad_reply() -> None:
    llm = FakeScriptedLLM(["first bad", "second bad", VALID])
    result = llm.structured([ChatMessage("system", "sys"), ChatMessage("user", "go")], FactExtractionOut)
    assert result.attempts == 3
    last = llm.prompts[2]
    assert [m.role for m in last] == ["system", "user", "assistant", "user"]
    assert last[0].content.startswith("sys\n\n") and last[2].content == "second bad"


def test_schema_shown_to_the_model_bounds_its_lists_and_has_no_titles() -> None:
    schema = FactExtractionOut.model_json_schema()
    fact = schema["$defs"]["ExtractedFactOut"]
    assert schema["properties"]["facts"]["maxItems"] == MAX_FACTS_PER_CALL
    assert fact["properties"]["entities"]["maxItems"] > 0 and fact["properties"]["causal_relations"]["maxItems"] > 0
    assert "title" not in json.dumps(schema) and f"2 to {MAX_FACTS_PER_CALL} facts" in extraction_messages(
        [Turn(index=0, turn_id="t0", speaker=None, role=None, text="hi", timestamp=T0)])[0].content
    # Bounds guide a constrained decoder; a longer list from a hosted model is still accepted.
    many = FactExtractionOut.model_validate({"facts": [{"what": f"fact {i}"} for i in range(MAX_FACTS_PER_CALL + 2)]})
    assert len(many.facts) == MAX_FACTS_PER_CALL + 2


def _inhaler_doc() -> Document:
    turns = [Turn(index=0, turn_id="t0", speaker="Maya", role="user", text="Dr. Lee wants me on a new inhaler.",
                  timestamp=T0),
             Turn(index=1, turn_id="t1", speaker="Ava", role="assistant", timestamp=T0,
                  text="I'll add a new inhaler to your list. I booked a follow-up with Dr. Lee. Feel better!")]
    return Document(document_id="d", turns=turns, timestamp=T0)


def _networks(*facts: dict[str, Any]) -> list[tuple[Network, str]]:
    llm = FakeScriptedLLM([reply(*facts)])
    out = LLMExtractor(llm).extract(_inhaler_doc())
    assert 'fact_type: "experience" for what the assistant did, said or promised' in llm.prompts[0][0].content
    return [(f.network, f.text) for f in out]


def test_the_agents_own_facts_are_experience_and_its_untold_actions_are_added() -> None:
    # A model that tells the agent's actions in the first person: kept as written, nothing added.
    assert _networks(
        fact("Dr. Lee wants Maya (the user) on a new inhaler", entities=["Maya", "Dr. Lee"]),
        fact("I will add a new inhaler to Maya's list", fact_type="experience"),
        fact("I booked a follow-up with Dr. Lee for Maya", fact_type="experience"),
    ) == [
        (Network.WORLD, "Dr. Lee wants Maya (the user) on a new inhaler."),
        (Network.EXPERIENCE, "I will add a new inhaler to Maya's list."),
        (Network.EXPERIENCE, "I booked a follow-up with Dr. Lee for Maya."),
    ]
    # One that files the agent's action under the user: the reply's action sentences are added.
    assert _networks(fact("Maya (the user) will add a new inhaler to her list")) == [
        (Network.WORLD, "Maya (the user) will add a new inhaler to her list."),
        (Network.EXPERIENCE, "I'll add a new inhaler to your list. I booked a follow-up with Dr. Lee."),
    ]
    # One that tells only one action: the other is added alone.
    assert _networks(fact("I will add a new inhaler to Maya's list", fact_type="experience"))[1:] == [
        (Network.EXPERIENCE, "I booked a follow-up with Dr. Lee."),
    ]


def test_the_network_follows_who_the_fact_is_about() -> None:
    facts = _networks(
        fact("Ava (assistant) recommended a follow-up with Dr. Lee", fact_type="world"),  # about the agent
        fact("The assistant will add an inhaler to the list"),
        fact("Maya (the user) needs a new inhaler", fact_type="experience"),  # not the agent's own
        fact("I need a new inhaler", fact_type="world"),  # first person filed as world: perhaps the user's words
    )
    # Both action sentences are told by the two facts about the agent: nothing is added.
    assert [n for n, _ in facts] == [Network.EXPERIENCE, Network.EXPERIENCE, Network.WORLD, Network.WORLD]


def test_added_actions_name_the_people_and_their_turn() -> None:
    facts = LLMExtractor(FakeScriptedLLM([reply(fact("Dr. Lee wants Maya on a new inhaler"))])).extract(_inhaler_doc())
    added = facts[1]
    assert added.source.turn_ids == ["t1"] and [e.text for e in added.entities] == ["Maya"]
    assert added.mentioned_at == T0 and added.causal == [] and added.occurred_start is None
