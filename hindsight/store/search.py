"""What a backend provides for search: a bank's vector and lexical search, kept in step with its store."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Set
from dataclasses import dataclass

import numpy as np


@dataclass
class IndexHit:
    """A unit's label and its score in one search (higher is better)."""

    label: int
    score: float


class BankSearch(ABC):
    """The vector and lexical search of one bank. SQLite derives them into files beside the database and replays
    its change log into them (`sync`); Postgres keeps them in the database, in the same transactions as the units."""

    bank_id: str

    @abstractmethod
    def sync(self) -> None:
        """Catch up with every write the store has committed (nothing to do where search lives in the database)."""

    @abstractmethod
    def search_vectors(self, vector: np.ndarray, k: int, allowed: Set[int] | None = None) -> list[IndexHit]:
        """Nearest labels by cosine similarity, best first; only labels in `allowed`, when given."""

    @abstractmethod
    def search_lexical(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        """BM25-ranked labels for free text (never interpreted as query syntax), best first; words of a unit's
        lead (the text it quotes from before it) count `lead_weight` times as much as words of its own text."""

    @abstractmethod
    def vector_count(self) -> int:
        """How many units the vector search holds."""

    @abstractmethod
    def vector_labels(self) -> set[int]:
        """Every label the vector search holds (for integrity checks)."""

    @abstractmethod
    def lexical_labels(self) -> set[int]:
        """Every label the lexical search holds (for integrity checks)."""

    @abstractmethod
    def purge(self) -> None:
        """After a forget: leave nothing of removed units where search keeps its data."""

    @abstractmethod
    def close(self) -> None: ...
