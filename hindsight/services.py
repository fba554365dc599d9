"""What a bank needs from the engine that opened it: the store, the pipelines, its indexes and the work to queue."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from hindsight.config import HindsightConfig
from hindsight.embed.base import CachedEmbedder
from hindsight.llm.base import LLM
from hindsight.recall.pipeline import RecallPipeline
from hindsight.reflect.reasoner import Reasoner
from hindsight.retain.pipeline import RetainPipeline
from hindsight.store.base import MemoryStore, PendingItem
from hindsight.store.search import BankSearch


class BankServices(Protocol):
    """The engine's parts a `Bank` uses; the engine provides them, built on first use."""

    config: HindsightConfig
    llm: LLM | None  # the engine's LLM, None without one

    @property
    def store(self) -> MemoryStore: ...

    @property
    def embedder(self) -> CachedEmbedder: ...

    @property
    def pipeline(self) -> RetainPipeline: ...

    @property
    def recall_pipeline(self) -> RecallPipeline: ...

    @property
    def reasoner(self) -> Reasoner: ...

    def call(self) -> AbstractContextManager[None]:
        """A public call in flight: closing the engine waits for it, and refuses calls after it."""

    def open_indexes(self, bank_id: str) -> BankSearch:
        """The bank's derived indexes, opened and caught up with the store."""

    def pending_items(self, fact_ids: list[str], entity_ids: list[str]) -> list[PendingItem]:
        """The background reasoning that new facts and touched entities call for."""
