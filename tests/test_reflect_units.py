"""Pure parts of the reasoning half: the update rule, schemas, disposition text, citations, clipping, storage."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from hindsight.llm.base import ChatMessage, LLMResponse, schema_instruction
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.schema import model_facing, with_max_items
from hindsight.models import BankProfile, Disposition, LLMUsage, MemoryUnit, Network, OpinionEvent, Source, Verdict
from hindsight.recall.types import RecallHit
from hindsight.reflect.answer import cited_ids
from hindsight.reflect.background import clip
from hindsight.reflect.disposition import describe_disposition, strength_instruction, system_message
from hindsight.reflect.opinions import updated_confidence
from hindsight.reflect.prompts import reflect_messages
from hindsight.reflect.schemas import (
    AssessmentOut,
    BackgroundOut,
    ObservationOut,
    ObservationsOut,
    OpinionOut,
    ReflectOut,
    reflect_max_tokens,
)
from hindsight.reflect.types import Assessment
from hindsight.store.base import PendingItem, WriteBatch
from hindsight.store.sqlite import SQLiteStore
from hindsight.store.sqlite_schema import SCHEMA

NOW = datetime(2024, 5, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("confidence", "verdict", "expected"),
    [(0.5, Verdict.REINFORCE, 0.6), (0.95, Verdict.REINFORCE, 1.0), (0.5, Verdict.WEAKEN, 0.4),
     (0.05, Verdict.WEAKEN, 0.0), (0.5, Verdict.CONTRADICT, 0.3), (0.15, Verdict.CONTRADICT, 0.0),
     (0.5, Verdict.NEUTRAL, 0.5)],
)
def test_update_rule_of_design(confidence: float, verdict: Verdict, expected: float) -> None:
    assert updated_confidence(confidence, verdict, 0.1) == pytest.approx(expected)


def test_opinion_schema_is_lenient_where_small_models_are_sloppy() -> None:
    o = OpinionOut.model_validate({"text": "I think Python is best.", "reason": None, "citations": "[2][5]",
                                   "entities": "Python, pandas", "confidence": 0.95})
    assert (o.opinion, o.reasoning, o.sources) == ("I think Python is best.", "", [2, 5])
    assert "confidence" not in OpinionOut.model_json_schema()["properties"]  # the engine derives it, never asks
    assert OpinionOut.model_validate({"opinion": "I like it.", "sources": 3}).sources == [3]
    assert OpinionOut.model_validate({"opinion": "I like it.", "sources": None}).sources == []
    with pytest.raises(ValidationError):
        OpinionOut.model_validate({"opinion": "", "sources": [1]})


def test_assessment_schema_maps_answers_to_verdicts_and_accepts_verdict_words() -> None:
    a = AssessmentOut.model_validate({"answer": "Agrees", "reason": None, "revised_opinion": "null"})
    assert (a.answer, a.reason, a.revised_opinion) == (Assessment.AGREES, "", None)
    assert [a.verdict for a in Assessment] == [Verdict.REINFORCE, Verdict.WEAKEN, Verdict.CONTRADICT, Verdict.NEUTRAL]
    # The update rule's own words (and a model that names the field "verdict") are understood too.
    assert AssessmentOut.model_validate({"verdict": "Supports"}).answer is Assessment.AGREES
    assert AssessmentOut.model_validate({"verdict": "contradicts", "revised": "I now think X."}).revised_opinion
    with pytest.raises(ValidationError):
        AssessmentOut.model_validate({"answer": "maybe"})


class _SchemaSeen(LlamaCppLLM):
    """The llamacpp backend up to the model: records the response format (the grammar's schema) it would send."""

    def __init__(self) -> None:
        super().__init__("unused.gguf")
        self.formats: list[dict[str, Any] | None] = []

    def _chat(self, messages: Sequence[ChatMessage], max_tokens: int | None, temperature: float | None,
              response_format: dict[str, Any] | None) -> LLMResponse:
        self.formats.append(response_format)
        return LLMResponse('{"reason": "a doubt", "answer": "doubts"}', finish_reason="stop")


def test_assessment_schema_offers_the_model_its_four_answers_verdict_first() -> None:
    llm = _SchemaSeen()
    reply = llm.structured([ChatMessage("user", "weigh it")], AssessmentOut)
    assert reply.value.answer.verdict is Verdict.WEAKEN
    [response_format] = llm.formats
    assert response_format is not None
    schema = response_format["schema"]
    assert schema == AssessmentOut.model_json_schema()
    assert [d["enum"] for d in schema["$defs"].values()] == [["agrees", "doubts", "disagrees", "unrelated"]]
    assert list(schema["properties"]) == ["answer", "reason", "revised_opinion"]  # the order its figures hold for
    assert schema["properties"]["reason"]["maxLength"] > 0  # a looping small model still closes the JSON
    assert "formed" not in schema_instruction(AssessmentOut)
    with pytest.raises(ValidationError):
        AssessmentOut.model_validate({"answer": "formed"})


@pytest.mark.parametrize("model", [ReflectOut, AssessmentOut, ObservationsOut, BackgroundOut])
def test_reasoning_schemas_hold_no_docstrings_or_titles(model: type[BaseModel]) -> None:
    text = json.dumps(model.model_json_schema())
    assert '"description"' not in text and '"title"' not in text
    assert model.__name__ not in text


def test_schemas_cap_the_lists_they_show_not_what_they_accept() -> None:
    limited = with_max_items(ReflectOut, "opinions", 2)
    schema = limited.model_json_schema()
    assert schema["properties"]["opinions"]["maxItems"] == 2  # a constrained decoder stops at max_opinions
    assert list(schema["properties"]) == ["known", "sources", "answer", "opinions"]  # the answer follows them
    assert schema["properties"]["answer"]["maxLength"] > 0
    opinion = schema["$defs"]["OpinionOut"]["properties"]
    assert all(opinion[k]["maxLength"] > 0 for k in ("opinion", "reasoning")) and opinion["sources"]["maxItems"] > 0
    assert list(opinion) == ["opinion", "sources", "reasoning"]  # cited before a long reasoning
    assert limited is with_max_items(ReflectOut, "opinions", 2) and issubclass(limited, ReflectOut)
    three = {"answer": "I think so [1].", "opinions": [{"opinion": f"I think {n}.", "sources": [1]} for n in "abc"]}
    assert len(limited.model_validate(three).opinions) == 3  # a hosted model that writes more is kept
    observations = with_max_items(ObservationsOut, "observations", 7)
    assert observations.model_json_schema()["properties"]["observations"] == {
        "items": {"$ref": "#/$defs/ObservationOut"}, "maxItems": 7, "minItems": 1, "type": "array"}
    with pytest.raises(ValidationError):
        observations.model_validate({"observations": []})  # the field's own constraints stay


def test_model_facing_schema_keeps_field_descriptions() -> None:
    schema = {"title": "M", "description": "Docstring.", "properties": {"x": {"title": "X", "description": "say x"}},
              "$defs": {"E": {"title": "E", "description": "Enum doc.", "enum": ["a"]}}}
    assert model_facing(schema) == {"properties": {"x": {"description": "say x"}}, "$defs": {"E": {"enum": ["a"]}}}


def test_observation_schema_reads_sources_in_any_shape() -> None:
    assert ObservationOut.model_validate({"observation": "Alice codes.", "sources": "1, 3"}).sources == [1, 3]
    assert ObservationOut.model_validate({"text": "Alice codes.", "facts": 2}).sources == [2]
    assert ObservationOut.model_validate({"text": "Alice codes.", "sources": None}).sources == []
    with pytest.raises(ValidationError):
        ObservationsOut.model_validate({"observations": []})


def test_disposition_text_follows_traits_and_strength() -> None:
    low = describe_disposition(Disposition(skepticism=1, literalism=1, empathy=1))
    high = describe_disposition(Disposition(skepticism=5, literalism=5, empathy=5))
    assert "very trusting" in low and "very flexibly" in low and "detached" in low
    assert "highly skeptical" in high and "very literally" in high and "highly empathetic" in high
    assert "only color your tone" in strength_instruction(0.0)
    assert "lightly" in strength_instruction(0.2) and "strongly" in strength_instruction(0.9)
    assert system_message(BankProfile()).startswith("You are an AI assistant with a long-term memory.")
    assert "About you: I love maps." in system_message(BankProfile(name="Bo", background="I love maps."))


def _hit(uid: str) -> RecallHit:
    unit = MemoryUnit(id=uid, bank_id="b", text="t", network=Network.WORLD, occurred_start=None, occurred_end=None,
                      mentioned_at=NOW, source=Source(document_id="d"), content_hash="h", created_at=NOW)
    return RecallHit(unit=unit, text="t", tokens=1, channels=[], fused_score=1.0, score=1.0)


def test_the_reflect_prompt_asks_for_the_banks_own_cited_judgment_instead_of_a_refusal() -> None:
    system, user = reflect_messages("You are Ava.", "Should Maya use DuckDB?", "[1] Maya tried DuckDB.", NOW, 2)
    rules = system.content
    assert rules.startswith("You are Ava.") and "Question: Should Maya use DuckDB?" in user.content
    assert user.content.startswith("Today is 2024-05-01.") and "[1] Maya tried DuckDB." in user.content
    assert "first person" in rules and "I think" in rules and "never copied" in rules  # the bank speaks as itself
    assert "Do not refuse" in rules and "known: true when some memory bears on the question" in rules
    assert "sources: the numbers of the memories your answer uses" in rules


def test_the_reflect_prompt_asks_for_first_person_opinions_or_for_none() -> None:
    system = reflect_messages("You are Ava.", "Should Maya use DuckDB?", "[1] x", NOW, 2)[0].content
    assert 'starts with "I"' in system and '"opinion": "I think ..."' in system and "at most 2" in system
    assert "A fact is not an opinion" in system and '"sources": [1]' in system
    assert system.index('"sources"') < system.index('"reasoning"')  # cited before a long reasoning
    assert "confidence" not in system  # the engine derives it from the cited memories
    off = reflect_messages("You are Ava.", "Should Maya use DuckDB?", "[1] x", NOW, 0)[0].content
    assert "list no opinions" in off and '"opinions": []' in off and "opinion\": \"I think" not in off


def test_a_reflect_reply_needs_a_visible_answer_and_reads_known_leniently() -> None:
    assert ReflectOut.model_validate({"answer": " I think so [1]. "}).answer == "I think so [1]."
    assert ReflectOut.model_validate({"known": None, "response": "I do not know."}).known is True
    assert ReflectOut.model_validate({"known": "false", "answer": "I do not know."}).known is False
    for answer in ("", " \u200b ", None):
        with pytest.raises(ValidationError):
            ReflectOut.model_validate({"answer": answer})


def test_reflect_max_tokens_grows_with_the_opinions_asked_for() -> None:
    none, three = reflect_max_tokens(0), reflect_max_tokens(3)
    answer = ReflectOut.model_json_schema()["properties"]["answer"]["maxLength"]
    assert none >= answer and three > none and reflect_max_tokens(-1) == none


def test_cited_ids_map_numbers_to_units_in_citation_order() -> None:
    hits = [_hit("a"), _hit("b"), _hit("c")]
    assert cited_ids(ReflectOut(answer="Yes [3], as [1] and [3] say; [7] and [0] do not exist."), hits) == ["c", "a"]
    assert cited_ids(ReflectOut(answer="No citations."), hits) == []
    assert cited_ids(ReflectOut(answer="Yes [3].", sources=[2, 3, 9]), hits) == ["c", "b"]  # the text's first


def test_clip_keeps_whole_sentences() -> None:
    text = "I am Ada. I live in Porto. I have two dogs."
    assert clip(text, 100) == text
    assert clip(text, 30) == "I am Ada. I live in Porto."
    assert clip("x" * 50 + " " + "y" * 50, 60) == "x" * 50


def test_reasoning_and_usage_tables_are_added_to_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)  # a file written before the reasoning tables existed
    conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '1')")
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    try:
        store.create_bank("b", BankProfile())  # writes go only into a bank that exists
        store.add_pending("b", [PendingItem("observe", "e1"), PendingItem("reinforce", "u1")])
        store.add_pending("b", [PendingItem("observe", "e1")])  # queued once, touched again
        assert store.pending_count("b") == 2
        assert store.claim_pending("b", "observe", "run", 10) == ["e1"]
        store.finish_pending("b", "observe", ["e1"], "run")
        assert store.pending_count("b") == 1
        assert store.opinion_history("b", "u1") == []
        event = OpinionEvent(unit_id="u1", verdict=Verdict.FORMED, confidence=0.4, text="I think so.", at=NOW)
        store.apply("b", WriteBatch(opinion_events=[event]))
        assert store.opinion_history("b", "u1") == [event]
        store.add_llm_usage("b", LLMUsage(10, 2, 1))
        store.add_llm_usage("b", LLMUsage(5, 3, 1))
        store.add_llm_usage("missing", LLMUsage(5, 3, 1))  # no bank: nothing is stored
        assert store.llm_usage("b") == LLMUsage(15, 5, 2) and store.llm_usage("missing") == LLMUsage()
        store.delete_bank("b")
        assert store.opinion_history("b", "u1") == [] and store.pending_count("b") == 0
        assert store.llm_usage("b") == LLMUsage() and store._query("SELECT count(*) FROM llm_usage")[0][0] == 0
    finally:
        store.close()
