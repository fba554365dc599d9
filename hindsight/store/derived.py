"""The SQLite store's derived index files (HNSW vectors, BM25 text): rebuilt from the store when missing or corrupt."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from hindsight.store.base import IndexedUnit
from hindsight.store.search import IndexHit


class DerivedIndex(ABC):
    """An index derived from the store's change log; `watermark` is the last change it holds."""

    watermark: int = 0

    @abstractmethod
    def load(self) -> bool:
        """Open persisted state; False when it is missing or corrupt (the caller rebuilds)."""

    @abstractmethod
    def reset(self) -> None:
        """Drop all content (before a rebuild)."""

    @abstractmethod
    def add_units(self, units: list[IndexedUnit], watermark: int) -> None:
        """Insert or replace units; the watermark moves to `watermark`."""

    @abstractmethod
    def remove(self, labels: list[int], watermark: int) -> None: ...

    @abstractmethod
    def labels(self) -> set[int]:
        """Every label the index holds (for integrity checks)."""

    @abstractmethod
    def save(self) -> None:
        """Persist what the index holds in memory, atomically; its watermark in the files moves with it."""

    @abstractmethod
    def close(self) -> None: ...


class VectorIndex(DerivedIndex):
    @abstractmethod
    def search(self, vector: np.ndarray, k: int, allowed: Callable[[int], bool] | None = None) -> list[IndexHit]:
        """Nearest labels by cosine similarity, best first; only labels `allowed` accepts, when given."""

    @abstractmethod
    def __len__(self) -> int: ...


class LexicalIndex(DerivedIndex):
    @abstractmethod
    def search(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        """BM25-ranked labels for free text (never interpreted as query syntax), best first; words of a unit's
        lead (the text it quotes from before it) count `lead_weight` times as much as words of its own text."""
