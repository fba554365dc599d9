"""Builds the extractor that config selects; each backend is imported only when it is chosen."""

from __future__ import annotations

from hindsight.config import HindsightConfig
from hindsight.errors import ConfigError
from hindsight.llm.base import LLM
from hindsight.retain.extractor import Extractor


def make_extractor(config: HindsightConfig, llm: LLM | None) -> Extractor:
    """The configured extractor; `llm` needs an LLM instance."""
    if config.retain.extract.backend == "nlp":
        from hindsight.retain.nlp_extractor import NLPExtractor

        return NLPExtractor(config.retain.extract)
    if llm is None:
        from hindsight.llm.factory import HOW_TO_GET_AN_LLM

        raise ConfigError(f"retain.extract.backend 'llm' needs an LLM: pass Hindsight(llm=...), or {HOW_TO_GET_AN_LLM}")
    from hindsight.retain.llm_extractor import LLMExtractor

    return LLMExtractor(llm, max_retries=config.llm.max_retries)
