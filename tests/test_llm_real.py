"""Both LLM backends on the real qwen-0.5b model: llama-cpp-python's OpenAI-compatible server for `openai`,
the in-process library for `llamacpp`. Prompts and max_tokens are small to keep the suite fast."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from hindsight import Hindsight, HindsightConfig
from hindsight.embed.base import Embedder
from hindsight.errors import ExtractionError
from hindsight.llm.base import ChatMessage
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.openai_backend import OpenAICompatibleLLM, RetryPolicy
from hindsight.models import Document, Message, Turn
from hindsight.retain.llm_extractor import LLMExtractor

pytestmark = pytest.mark.slow

# Our own writing: a move with a stated cause, dates to resolve and named places.
CONVERSATION = [
    ("Priya", "user", "My landlord raised the rent by 40 percent, so I am moving from Boston to Providence."),
    ("assistant", "assistant", "That is a big increase. When do you move?"),
    ("Priya", "user", "Next Saturday. I start a new job at Brown University on June 3, 2024."),
]
SAID_AT = datetime(2024, 5, 10, 9, 0, tzinfo=UTC)  # a Friday


class FormedOpinion(BaseModel):
    """Opinion extraction shaped like the paper's appendix A.5."""

    statement: str = Field(description="the opinion, first person")
    confidence: float = Field(ge=0, le=1)
    reasoning: str


class FormedOpinions(BaseModel):
    opinions: list[FormedOpinion]


OPINION_PROMPT = [
    ChatMessage("system", "You are Ava, a careful assistant. State your opinions as JSON."),
    ChatMessage(
        "user",
        "Facts: Priya's rent rose 40%. Providence rents are lower. Form one opinion about "
        "Priya's move, with a confidence between 0 and 1 and your reasoning.",
    ),
]


@pytest.fixture(scope="session")
def endpoint_llm(llama_server: str) -> OpenAICompatibleLLM:
    # auto mode: the server rejects json_schema, so the first structured call steps down to JSON mode.
    return OpenAICompatibleLLM(
        base_url=llama_server,
        model="qwen-0.5b",
        policy=RetryPolicy(timeout_s=300, retries=1, backoff_s=0.5),
        max_tokens=384,
    )


@pytest.fixture(scope="session")
def local_llm(qwen_small: Path) -> LlamaCppLLM:
    return LlamaCppLLM(qwen_small, n_threads=2, n_ctx=4096, max_tokens=512)


def _document(doc_id: str) -> Document:
    turns = [
        Turn(index=i, turn_id=f"t{i}", speaker=s, role=r, text=t, timestamp=SAID_AT)
        for i, (s, r, t) in enumerate(CONVERSATION)
    ]
    return Document(document_id=doc_id, turns=turns, timestamp=SAID_AT)


def test_endpoint_extracts_facts_through_the_llm_extractor(endpoint_llm: OpenAICompatibleLLM) -> None:
    extractor = LLMExtractor(endpoint_llm, max_retries=1)
    facts = extractor.extract(_document("endpoint-doc"))
    assert facts, "the model returned no facts"
    assert endpoint_llm.mode in ("json_object_schema", "json")  # the server rejected json_schema
    assert extractor.usage.calls >= 1 and extractor.usage.completion_tokens > 0
    assert "Providence" in " ".join(f.text for f in facts)
    # Entities and dates are asserted on the in-process path below: through the server (default repeat_penalty
    # 1.1, which the OpenAI API cannot turn off) the 0.5B model often leaves the entity list empty.
    for index, fact in enumerate(facts):
        assert fact.source.document_id == "endpoint-doc" and fact.source.turn_ids == ["t0", "t1", "t2"]
        assert all(0 <= rel.target_index < index for rel in fact.causal)  # only earlier facts survive validation


def test_endpoint_answers_in_free_text(endpoint_llm: OpenAICompatibleLLM) -> None:
    reply = endpoint_llm.complete(
        [
            ChatMessage("system", "Answer in one short sentence."),
            ChatMessage("user", "Priya moved from Boston to Providence. Which city does Priya live in now?"),
        ],
        max_tokens=40,
    )
    assert "Providence" in reply.text
    assert reply.usage.prompt_tokens > 10 and reply.usage.completion_tokens > 0 and reply.usage.calls == 1


def test_endpoint_forms_opinions(endpoint_llm: OpenAICompatibleLLM) -> None:
    result = endpoint_llm.structured(OPINION_PROMPT, FormedOpinions, max_tokens=200)
    assert result.value.opinions and result.value.opinions[0].statement
    assert 0 <= result.value.opinions[0].confidence <= 1 and result.usage.calls == result.attempts


def test_in_process_model_forms_opinions_under_the_schema(local_llm: LlamaCppLLM) -> None:
    result = local_llm.structured(OPINION_PROMPT, FormedOpinions, max_tokens=200)
    opinion = result.value.opinions[0]
    assert opinion.statement and opinion.reasoning and 0 <= opinion.confidence <= 1
    assert result.usage.prompt_tokens > 20 and result.usage.completion_tokens > 5


def test_llm_extractor_retains_through_the_engine(local_llm: LlamaCppLLM, tmp_path: Path, minilm: Embedder) -> None:
    config = HindsightConfig.from_dict({"retain": {"extract": {"backend": "llm"}}})
    with Hindsight(tmp_path / "m", config, llm=local_llm, embedder=minilm) as hs:
        bank = hs.bank("priya")
        result = bank.retain(
            [Message(speaker=s, role=r, content=t, timestamp=SAID_AT) for s, r, t in CONVERSATION], document_id="move"
        )
        units = bank.units()
        assert result.created == len(units) >= 1 and bank.llm_usage().calls >= 1
        assert "Providence" in " ".join(u.text for u in units)
        dated = [u for u in units if u.occurred_start is not None]
        assert dated and all(u.occurred_start.year == 2024 for u in dated)  # type: ignore[union-attr]
        assert {e for u in units for e in u.entities} & {"Priya", "Providence", "Boston", "Brown University"}
        assert all(u.source.document_id == "move" and u.source.turn_ids for u in units)
        for link in (link for u in units for link in bank.links(u.id) if link.type.value == "causal"):
            assert link.weight > 0  # causal links, when the model gives any, are stored as graph edges
        hit = bank.recall("Where is Priya moving?").hits[0]
        assert hit.unit.source.document_id == "move"


def test_truncated_output_is_retried_then_names_the_document(
    local_llm: LlamaCppLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shared model (its prompt cache holds the extraction prompt) with room for 12 tokens only.
    monkeypatch.setattr(local_llm, "max_tokens", 12)
    extractor = LLMExtractor(local_llm, max_retries=1)
    with pytest.raises(ExtractionError, match=r"truncated.*\(document cut-doc\)") as info:
        extractor.extract(_document("cut-doc"))
    assert info.value.document_id == "cut-doc" and extractor.usage.calls == 2
