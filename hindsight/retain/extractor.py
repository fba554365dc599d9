"""The extractor interface: a normalized Document in, narrative facts out."""

from __future__ import annotations

from abc import ABC, abstractmethod

from hindsight.models import Document, ExtractedFact


class Extractor(ABC):
    """Turns one retained document into narrative facts (not yet resolved or stored)."""

    name: str = "base"

    @abstractmethod
    def extract(self, document: Document) -> list[ExtractedFact]:
        """Return the facts of `document`, each with provenance pointing into its turns."""

    def extract_many(self, documents: list[Document]) -> list[list[ExtractedFact]]:
        """The facts of each document, in order; backends that batch better across documents override this."""
        return [self.extract(d) for d in documents]
