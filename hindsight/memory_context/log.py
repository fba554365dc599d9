"""The observation log of a scope: observed from the units on request (never in the background), condensed when
it passes its limit (memory_context/condense.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from hindsight.memory_context.block import log_tokens
from hindsight.memory_context.condense import condense
from hindsight.memory_context.observer import OBSERVED_NETWORKS, observe_units
from hindsight.models import BANK_SCOPE, LogEntry
from hindsight.recall.format import TokenCounter
from hindsight.store.base import MemoryStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ObserveReport:
    """What one observe did to a scope's log: the units it read, the entries it appended, whether it condensed the
    log, and how many entries the log holds now."""

    scope: str
    units: int
    appended: int
    condensed: bool
    entries: int


class ObservationLog:
    """The observation logs of one bank. The caller holds the bank's context lock around observe."""

    def __init__(self, store: MemoryStore, bank_id: str, counter: TokenCounter, condense_tokens: int) -> None:
        self.store, self.bank_id, self.counter, self.condense_tokens = store, bank_id, counter, condense_tokens

    def entries(self, scope: str) -> list[LogEntry]:
        return self.store.observation_log(self.bank_id, scope)

    def tokens(self, entries: list[LogEntry], query_time: datetime) -> int:
        """The tokens a block spends on showing the entries (block.log_tokens)."""
        return log_tokens(entries, query_time, self.counter)

    def observe(self, scope: str, now: datetime, room: int | None = None) -> ObserveReport:
        """Append the entries of the units `scope` has not observed (a thread's: those of its documents), then
        condense the log if it passed `condense_tokens`, or `room` (the block's room for the log) when smaller."""
        thread = None if scope == BANK_SCOPE else scope
        unread = self.store.unobserved_units(self.bank_id, scope, thread, OBSERVED_NETWORKS)
        appended = 0
        if unread.units or unread.through > unread.since:
            new = observe_units(unread.units, scope, now)
            appended = self.store.append_observations(self.bank_id, scope, new, [u.id for u in unread.units],
                                                      unread.through)
        entries = self.entries(scope)
        limit = self.condense_tokens if room is None else max(1, min(self.condense_tokens, room))
        condensed = condense(entries, lambda e: self.tokens(e, now), limit)
        seqs = [e.seq for e in entries if e.seq is not None]
        if condensed is not None and self.store.replace_observation_log(self.bank_id, scope, seqs, condensed):
            log.info("bank %s: the observation log of scope %r condensed from %d to %d entries", self.bank_id,
                     scope[:64], len(entries), len(condensed))
            return ObserveReport(scope, len(unread.units), appended, True, len(condensed))
        return ObserveReport(scope, len(unread.units), appended, False, len(entries))
