"""The extractor interface: a normalized Document in, narrative facts out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from hindsight.errors import ConfigError
from hindsight.models import Document, ExtractedFact

if TYPE_CHECKING:
    from hindsight.config import HindsightConfig
    from hindsight.llm.base import LLM


class Extractor(ABC):
    """Turns one retained document into narrative facts (not yet resolved or stored)."""

    name: str = "base"

    @abstractmethod
    def extract(self, document: Document) -> list[ExtractedFact]:
        """Return the facts of `document`, each with provenance pointing into its turns."""

    def extract_many(self, documents: list[Document]) -> list[list[ExtractedFact]]:
        """The facts of each document, in order; backends that batch better across documents override this."""
        return [self.extract(d) for d in documents]


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
