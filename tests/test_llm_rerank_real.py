"""The LLM reranker on the real qwen-0.5b model, through llama-cpp-python's OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from hindsight.llm.openai_backend import OpenAICompatibleLLM, RetryPolicy
from hindsight.models import MemoryUnit, Network, Source
from hindsight.recall.format import TokenCounter, hit_header
from hindsight.recall.llm_rerank import LLMReranker
from hindsight.recall.ranked import Candidate, Fused
from hindsight.recall.rerank import Reranker, RerankQuery

pytestmark = pytest.mark.slow

ASKED = datetime(2024, 6, 20, 18, tzinfo=UTC)
# Our own writing: one memory answers the question, the others are about the same person and nothing to do with it.
MEMORIES = [
    "Priya adopted a grey cat named Miso from the shelter.",
    "Priya's sister studies medicine in Chicago.",
    "Priya bakes sourdough bread every Sunday morning.",
    "Priya moved from Boston to Providence because her rent went up.",
    "Priya runs five kilometres before work.",
]
ANSWER = 3
QUESTION = "Which city did Priya move to?"


class Given(Reranker):
    """A base order that puts the answer fourth of five."""

    name = "given"

    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        return [5.0 - i for i in range(len(candidates))]


def _candidates() -> list[Candidate]:
    out = []
    for i, text in enumerate(MEMORIES):
        said = ASKED - timedelta(days=30 - i)
        unit = MemoryUnit(id=f"u{i}", bank_id="b", text=text, network=Network.WORLD, occurred_start=None,
                          occurred_end=None, mentioned_at=said, source=Source(document_id="d"), content_hash=f"h{i}",
                          created_at=said)
        out.append(Candidate(Fused(i, unit.id, [], 1.0), unit, hit_header(unit, ASKED)))
    return out


def test_the_real_model_ranks_the_answer_first(llama_server: str) -> None:
    llm = OpenAICompatibleLLM(base_url=llama_server, model="qwen-0.5b",
                              policy=RetryPolicy(timeout_s=300, retries=1, backoff_s=0.5))
    reranker = LLMReranker(Given(), llm, top_n=20, tokens=TokenCounter())
    scores = reranker.scores(RerankQuery(QUESTION, None, False, ASKED), _candidates())
    assert scores is not None and scores != Given().scores(RerankQuery(QUESTION, None, False), _candidates())
    order = sorted(range(len(MEMORIES)), key=lambda i: -scores[i])
    assert order[0] == ANSWER, [MEMORIES[i] for i in order]
    assert sorted(scores, reverse=True) == [scores[i] for i in order] and len(set(scores)) == len(scores)
