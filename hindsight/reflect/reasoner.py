"""The reasoning half of the engine for all its banks: reflect, background merging, and the work queued by retain.

Retain queues its new facts (for opinion reinforcement) and touched entities (for observation regeneration) in the
store's `pending_work` table, so the queue survives a restart. With `reflect.background` the engine's job thread
works it off once retains have been quiet for `observation_debounce_seconds` (a burst of retains regenerates each
entity once); `process_pending` works it off now, in the caller's thread. A failed LLM step is logged, counted in
`failures` and dropped: its opinion or entity is reconsidered when new facts touch it again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from hindsight.config import HindsightConfig
from hindsight.embed.base import CachedEmbedder
from hindsight.errors import InvalidInputError, LLMError
from hindsight.jobs import RetainEvent
from hindsight.llm.base import LLM, LLMUsage, StructuredOutputError
from hindsight.models import BankProfile
from hindsight.recall.pipeline import RecallPipeline
from hindsight.reflect.answer import Reflector
from hindsight.reflect.background import merge_background
from hindsight.reflect.observations import ObservationBuilder
from hindsight.reflect.opinions import OpinionFormer
from hindsight.reflect.reinforce import Reinforcer
from hindsight.reflect.types import PendingReport, ReflectResult, Usage
from hindsight.reflect.writer import UnitWriter
from hindsight.retain.pipeline import BankHandle
from hindsight.store.base import MemoryStore, PendingItem

log = logging.getLogger(__name__)

REINFORCE = "reinforce"
OBSERVE = "observe"
_POLL_SECONDS = 0.05


class Reasoner:
    """Holds the LLM-driven stages; one per engine."""

    def __init__(
        self,
        config: HindsightConfig,
        store: MemoryStore,
        embedder: CachedEmbedder,
        recall: RecallPipeline,
        llm: LLM,
        pending_events: Callable[[], int],
    ) -> None:
        self.config = config.reflect
        self.store = store
        self.llm = llm
        self._pending_events = pending_events
        self.max_retries = retries = config.llm.max_retries
        writer = UnitWriter(config, store, embedder)
        self.former = OpinionFormer(llm, self.config, store, writer, retries)
        self.reflector = Reflector(llm, self.config, recall, self.former)
        self.reinforcer = Reinforcer(llm, self.config, store, writer, retries)
        self.observer = ObservationBuilder(llm, self.config, store, writer, retries)
        self.failures = 0
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def reflect(
        self, bank: BankHandle, profile: BankProfile, query: Any, budget: Any = None, query_time: Any = None
    ) -> ReflectResult:
        return self.reflector.reflect(bank, profile, query, budget, query_time)

    def merge_background(self, profile: BankProfile, snippet: Any) -> tuple[BankProfile, Usage]:
        """The profile with the snippet merged into its background."""
        if not isinstance(snippet, str) or not snippet.strip():
            raise InvalidInputError("merge_background needs a non-empty snippet string")
        merged, usage = merge_background(
            self.llm, profile.name, profile.background, snippet, max_chars=self.config.background_max_chars,
            max_retries=self.max_retries, max_tokens=self.config.answer_max_tokens,
        )
        return profile.model_copy(update={"background": merged}), Usage.of(usage)

    # -- the queue ---------------------------------------------------------------------------
    def enqueue(self, event: RetainEvent) -> int:
        """Queue what a retain changed; returns the number of items queued."""
        items = [PendingItem(REINFORCE, u) for u in event.unit_ids] if self.config.reinforce_enabled else []
        if self.config.observations_enabled:
            items += [PendingItem(OBSERVE, e) for e in event.entity_ids]
        if items:
            self.store.add_pending(event.bank_id, items)
        return len(items)

    def on_retain(self, event: RetainEvent, handle: Callable[[], BankHandle | None]) -> None:
        """The retain hook: queue, then (in background mode) work the queue off once retains are quiet."""
        if not self.enqueue(event) or not self.config.background:
            return
        deadline = time.monotonic() + self.config.observation_debounce_seconds
        while True:
            if self._pending_events() > 1:
                return  # a later retain event is queued behind this one; its hook does the work
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL_SECONDS)
        bank = handle()
        if bank is not None:
            report = self.process_pending(bank)
            log.debug("bank %s: background reasoning: %d opinions updated, %d entities observed, %d failures",
                      bank.bank_id, len(report.reinforced), len(report.observations_regenerated), report.failures)

    def process_pending(self, bank: BankHandle) -> PendingReport:
        """Work off everything queued for the bank: reinforcement first, then observations."""
        report = PendingReport()
        usage = LLMUsage()
        with self._lock(bank.bank_id):
            while ids := self.store.take_pending(bank.bank_id, REINFORCE, None, self.config.batch_size):
                outcome = self.reinforcer.process(bank, ids)
                report.reinforced += outcome.changes
                report.failures += outcome.failures
                usage = usage + outcome.usage
            while entity_ids := self.store.take_pending(bank.bank_id, OBSERVE, None, self.config.batch_size):
                for entity_id in entity_ids:
                    try:
                        result = self.observer.regenerate(bank, entity_id)
                    except LLMError as exc:
                        usage = usage + (exc.usage if isinstance(exc, StructuredOutputError) else LLMUsage())
                        report.failures += 1
                        log.warning("bank %s: observations of entity %s failed, the old ones are kept: %s",
                                    bank.bank_id, entity_id, exc)
                        continue
                    usage = usage + result.usage
                    if result.units or result.removed:
                        report.observations_regenerated[entity_id] = [u.id for u in result.units]
        self.failures += report.failures
        report.usage = Usage.of(usage)
        return report

    def _lock(self, bank_id: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(bank_id, threading.Lock())
