"""The reasoning half of the engine for all its banks: reflect, background merging, and the work queued by retain.

Retain queues its new facts (for opinion reinforcement) and touched entities (for observation regeneration) in the
store's `pending_work` table, in the retain's own transaction, so the queue survives a crash. With background
reasoning (`reflect.work.background`, see the engine) the engine's job thread works it off once retains have been
quiet for `reflect.observations.debounce_seconds` (a burst of retains regenerates each entity once);
`process_pending` works it off now, in the caller's thread. A run claims items and removes them only once they are
done: items it did not finish (stopped by close, an unreachable LLM, or a crash) go back to the queue. Reinforcement
skips facts an opinion has already weighed, so redoing an item never counts its evidence twice. A step whose LLM
output stays unusable is logged, counted in `failures` and dropped: its opinion or entity is reconsidered when new
facts touch it again.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hindsight.config import HindsightConfig, ReflectConfig
from hindsight.embed.base import CachedEmbedder
from hindsight.errors import ContentTooLargeError, InvalidInputError, LLMError
from hindsight.jobs import RetainEvent
from hindsight.llm.base import LLM, StructuredOutputError
from hindsight.models import BankProfile, LLMUsage
from hindsight.recall.pipeline import RecallPipeline
from hindsight.reflect.answer import Reflector
from hindsight.reflect.background import merge_background
from hindsight.reflect.observations import ObservationBuilder
from hindsight.reflect.opinions import OpinionFormer
from hindsight.reflect.reinforce import Reinforcer
from hindsight.reflect.stage import OBSERVE, REINFORCE, is_transient
from hindsight.reflect.types import PendingProgress, PendingReport, ReflectResult, Usage
from hindsight.reflect.writer import SourcesForgottenError, UnitWriter
from hindsight.store.base import MemoryStore, PendingItem
from hindsight.text import clean_text, has_visible, strip_private
from hindsight.units import BankHandle

log = logging.getLogger(__name__)

_POLL_SECONDS = 0.05


def pending_items(config: ReflectConfig, fact_ids: list[str], entity_ids: list[str]) -> list[PendingItem]:
    """The background work to queue: facts to weigh against opinions, entities whose observations to regenerate."""
    items = [PendingItem(REINFORCE, u) for u in fact_ids] if config.reinforce.enabled else []
    if config.observations.enabled:
        items += [PendingItem(OBSERVE, e) for e in entity_ids]
    return items


class _Done:
    """The items a run has finished, told to its `progress` callback with the total (done plus still queued)."""

    def __init__(self, store: MemoryStore, bank_id: str, progress: Callable[[PendingProgress], None] | None) -> None:
        self.store, self.bank_id, self.progress = store, bank_id, progress
        self.count = 0
        self.add(0)

    def add(self, n: int) -> None:
        self.count += n
        if self.progress is not None:
            self.progress(PendingProgress(done=self.count, total=self.count + self.store.pending_count(self.bank_id)))


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
        stop: threading.Event,
    ) -> None:
        self.config = config.reflect
        self.limits = config.limits
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
        self._stop = stop  # set by close(): runs stop between items, leaving the rest queued
        self._runs = 0
        self._idle = threading.Condition()

    def reflect(
        self, bank: BankHandle, profile: BankProfile, query: Any, budget: Any = None, query_time: Any = None
    ) -> ReflectResult:
        return self.reflector.reflect(bank, profile, query, budget, query_time)

    def merge_background(self, profile: BankProfile, snippet: Any) -> tuple[BankProfile, Usage]:
        """The profile with the snippet merged into its background. Private spans never reach the model."""
        if not isinstance(snippet, str) or not snippet.strip():
            raise InvalidInputError("merge_background needs a non-empty snippet string")
        if len(snippet) > self.limits.max_message_chars:
            raise ContentTooLargeError(f"a snippet of {len(snippet):,} characters exceeds the limit of "
                                       f"{self.limits.max_message_chars:,} (limits.max_message_chars)")
        snippet = clean_text(strip_private(snippet))
        if not has_visible(snippet):
            raise InvalidInputError("the snippet has no visible text once private spans go")
        merged, usage = merge_background(
            self.llm, profile.name, profile.background, snippet, max_chars=self.config.profile.max_background_chars,
            max_retries=self.max_retries,
        )
        return profile.model_copy(update={"background": merged}), Usage.of(usage)

    # -- the queue ---------------------------------------------------------------------------
    def on_retain(self, event: RetainEvent, handle: Callable[[], BankHandle | None]) -> None:
        """The background hook: once retains are quiet, work off the queue (retain has already queued the work)."""
        if not pending_items(self.config, event.unit_ids, event.entity_ids):
            return
        deadline = time.monotonic() + self.config.observations.debounce_seconds
        while not self._stop.is_set():
            if self._pending_events() > 1:
                return  # a later retain event is queued behind this one; its hook does the work
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL_SECONDS)
        if self._stop.is_set():
            return
        bank = handle()
        if bank is not None:
            report = self.process_pending(bank)
            log.debug("bank %s: background reasoning: %d opinions updated, %d entities observed, %d failures%s",
                      bank.bank_id, len(report.reinforced), len(report.observations_regenerated), report.failures,
                      ", interrupted" if report.interrupted else "")

    def process_pending(
        self, bank: BankHandle, progress: Callable[[PendingProgress], None] | None = None
    ) -> PendingReport:
        """Work off everything queued for the bank: reinforcement first, then observations. Stops early (the rest
        stays queued, `interrupted` is set) when the engine closes or the LLM cannot be reached. `progress` hears
        of every finished batch of facts and every finished entity."""
        report = PendingReport()
        claim = uuid.uuid4().hex
        with self._running(), self._lock(bank.bank_id):
            done = _Done(self.store, bank.bank_id, progress)
            try:
                self._reinforce(bank, claim, report, done)
                self._observe(bank, claim, report, done)
            except LLMError as exc:  # only transient ones get here
                report.failures += 1
                report.interrupted = True
                log.warning("bank %s: background reasoning stopped, the LLM is unavailable; what is left stays "
                            "queued: %s", bank.bank_id, exc)
            finally:
                self.store.release_pending(claim)
            report.interrupted = report.interrupted or self._stop.is_set()
        self.failures += report.failures
        return report

    def _reinforce(self, bank: BankHandle, claim: str, report: PendingReport, done: _Done) -> None:
        while not self._stop.is_set():
            ids = self.store.claim_pending(bank.bank_id, REINFORCE, claim, self.config.work.batch_size)
            if not ids:
                return
            outcome = self.reinforcer.process(bank, ids, self._stop.is_set)
            report.reinforced += outcome.changes
            report.failures += outcome.failures
            report.add_usage(outcome.usage)
            if outcome.error is not None:
                raise outcome.error
            if outcome.complete:
                self.store.finish_pending(bank.bank_id, REINFORCE, ids, claim)
                done.add(len(ids))

    def _observe(self, bank: BankHandle, claim: str, report: PendingReport, done: _Done) -> None:
        while not self._stop.is_set():
            entity_ids = self.store.claim_pending(bank.bank_id, OBSERVE, claim, self.config.work.batch_size)
            if not entity_ids:
                return
            for entity_id in entity_ids:
                if self._stop.is_set():
                    return
                try:
                    result = self.observer.regenerate(bank, entity_id)
                except SourcesForgottenError as exc:  # left claimed: the next run regenerates without them
                    log.info("bank %s: observations of entity %s not stored: %s", bank.bank_id, entity_id, exc)
                    continue
                except LLMError as exc:
                    report.add_usage(exc.usage if isinstance(exc, StructuredOutputError) else LLMUsage())
                    if is_transient(exc):
                        raise
                    report.failures += 1
                    log.warning("bank %s: observations of entity %s failed, the old ones are kept: %s",
                                bank.bank_id, entity_id, exc)
                else:
                    report.add_usage(result.usage)
                    if result.units or result.removed:
                        report.observations_regenerated[entity_id] = [u.id for u in result.units]
                self.store.finish_pending(bank.bank_id, OBSERVE, [entity_id], claim)
                done.add(1)

    @contextmanager
    def _running(self) -> Iterator[None]:
        with self._idle:
            self._runs += 1
        try:
            yield
        finally:
            with self._idle:
                self._runs -= 1
                self._idle.notify_all()

    def wait_idle(self) -> None:
        """Block until no run is working (after the stop event is set, each one stops after its current item)."""
        with self._idle:
            self._idle.wait_for(lambda: self._runs == 0)

    def _lock(self, bank_id: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(bank_id, threading.Lock())
