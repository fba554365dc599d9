"""The observation log of a scope: observed from the units on request (never in the background), condensed when
it passes its limit (memory_context/condense.py). With `context.observer: llm`, the LLM observes (llm_observer.py),
condenses (llm_reflector.py) and updates working memory (auto_working.py), each falling back as its module says."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Literal

from hindsight.config.context import ContextConfig
from hindsight.llm.base import LLM
from hindsight.memory_context.auto_working import WorkingUpdater
from hindsight.memory_context.block import log_tokens
from hindsight.memory_context.condense import condense
from hindsight.memory_context.llm_observer import LLMObserver, Observed
from hindsight.memory_context.llm_reflector import LLMReflector
from hindsight.memory_context.observer import OBSERVED_NETWORKS, observe_units
from hindsight.memory_context.working import WorkingMemories
from hindsight.models import BANK_SCOPE, LogEntry
from hindsight.recall.format import TokenCounter
from hindsight.store.base import MemoryStore, Unobserved

log = logging.getLogger(__name__)

Writer = Literal["offline", "llm"]


@dataclass(frozen=True)
class ObserveReport:
    """What one observe did to a scope's log: the units it read, the entries it appended, whether it condensed the
    log, and how many entries the log holds now. With the LLM observer also: who wrote the entries (`observer`:
    "offline" when a batch fell back to the rules) and condensed the log (`reflector`), the LLM's entries rejected
    and its unknown source ids dropped, the units left `waiting` below `context.observe_tokens`, and the working
    memory version the new observations wrote."""

    scope: str
    units: int
    appended: int
    condensed: bool
    entries: int
    observer: Writer = "offline"
    reflector: Writer | None = None
    rejected: int = 0
    dropped_sources: int = 0
    waiting: int = 0
    working_memory: int | None = None


@dataclass(frozen=True)
class LLMStages:
    """The LLM's part in the log (`context.observer: llm`); `working` is None without
    `context.update_working_memory`."""

    observer: LLMObserver
    reflector: LLMReflector
    working: WorkingUpdater | None


def llm_stages(llm: LLM, config: ContextConfig, counter: TokenCounter, memories: WorkingMemories,
               max_retries: int) -> LLMStages:
    """The stages of `context.observer: llm` on `llm`."""
    working = WorkingUpdater(llm, memories, max_retries) if config.update_working_memory else None
    return LLMStages(LLMObserver(llm, counter, config.observe_tokens, max_retries), LLMReflector(llm, max_retries),
                     working)


class ObservationLog:
    """The observation logs of one bank. The caller holds the bank's context lock around observe."""

    def __init__(self, store: MemoryStore, bank_id: str, counter: TokenCounter, condense_tokens: int,
                 llm: LLMStages | None = None) -> None:
        self.store, self.bank_id, self.counter, self.condense_tokens = store, bank_id, counter, condense_tokens
        self.llm = llm

    def entries(self, scope: str) -> list[LogEntry]:
        return self.store.observation_log(self.bank_id, scope)

    def tokens(self, entries: list[LogEntry], query_time: datetime) -> int:
        """The tokens a block spends on showing the entries (block.log_tokens)."""
        return log_tokens(entries, query_time, self.counter)

    def observe(self, scope: str, now: datetime, zone: tzinfo, room: int | None = None) -> ObserveReport:
        """Append the entries of the units `scope` has not observed (a thread's: those of its documents), then
        condense the log if it passed `condense_tokens`, or `room` (the block's room for the log) when smaller;
        with the LLM, then update the scope's working memory from the new high-priority entries. Days are on the
        bank's clock (`zone`)."""
        thread = None if scope == BANK_SCOPE else scope
        unread = self.store.unobserved_units(self.bank_id, scope, thread, OBSERVED_NETWORKS)
        llm = self.llm
        working = llm.working if llm is not None else None
        known = {e.seq for e in self.entries(scope)} if working is not None else set()
        observed, waiting, appended = Observed([]), 0, 0
        if llm is not None and unread.units and not llm.observer.due(unread.units):
            waiting = len(unread.units)  # the mark stays: they are read again, with what comes next
        elif unread.units or unread.through > unread.since:
            observed = self._observed(unread, scope, now, zone)
            appended = self.store.append_observations(self.bank_id, scope, observed.entries,
                                                      [u.id for u in unread.units], unread.through)
        entries = self.entries(scope)
        new = [e for e in entries if e.seq not in known] if appended else []
        entries, reflector = self._condensed(scope, entries, now, zone, room)
        version = working.update(scope, new, zone) if working is not None and new else None
        return ObserveReport(
            scope, len(unread.units), appended, reflector is not None, len(entries),
            observer="llm" if llm is not None and observed.fallbacks == 0 else "offline", reflector=reflector,
            rejected=observed.rejected, dropped_sources=observed.dropped_sources, waiting=waiting,
            working_memory=None if version is None else version.version,
        )

    def _observed(self, unread: Unobserved, scope: str, now: datetime, zone: tzinfo) -> Observed:
        if self.llm is None:
            return Observed(observe_units(unread.units, scope, now, zone))
        return self.llm.observer.observe(unread.units, scope, now, zone)

    def _condensed(self, scope: str, entries: list[LogEntry], now: datetime, zone: tzinfo,
                   room: int | None) -> tuple[list[LogEntry], Writer | None]:
        """The log after condensing it if it passed its limit, and who condensed it (None: it was not)."""
        limit = self.condense_tokens if room is None else max(1, min(self.condense_tokens, room))

        def measure(e: list[LogEntry]) -> int:
            return self.tokens(e, now)

        condensed = None
        reflector: Writer = "offline"
        if self.llm is not None and measure(entries) > limit:
            condensed = self.llm.reflector.condense(entries, measure, limit, zone)
            reflector = "llm" if condensed is not None else "offline"
        if condensed is None:
            condensed = condense(entries, measure, limit)
        seqs = [e.seq for e in entries if e.seq is not None]
        if condensed is not None and self.store.replace_observation_log(self.bank_id, scope, seqs, condensed):
            log.info("bank %s: the observation log of scope %r condensed (%s) from %d to %d entries", self.bank_id,
                     scope[:64], reflector, len(entries), len(condensed))
            return condensed, reflector
        return entries, None
