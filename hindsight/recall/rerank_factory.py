"""The reranker `recall.rerank.backend` names (rerank.py, llm_rerank.py)."""

from __future__ import annotations

from hindsight.config import RerankConfig
from hindsight.llm.base import LLM
from hindsight.recall.format import TokenCounter
from hindsight.recall.llm_rerank import LLMReranker
from hindsight.recall.rerank import DEFAULT_CROSS_ENCODER, BlendReranker, CrossEncoderReranker, KeepOrder, Reranker


def make_reranker(config: RerankConfig, llm: LLM | None = None, tokens: TokenCounter | None = None) -> Reranker:
    """The reranker `config.backend` names; `llm` is the LLM of backend `llm` (without one, that reranker keeps the
    blend's order and warns on each recall)."""
    if config.backend == "blend":
        return BlendReranker()
    if config.backend == "llm":
        return LLMReranker(BlendReranker(), llm, config.llm_top_n, tokens or TokenCounter())
    if config.backend == "cross-encoder":
        return CrossEncoderReranker(config.model or DEFAULT_CROSS_ENCODER, config.device, config.batch_size)
    return KeepOrder()
