"""The LLM observer (`context.observer: llm`): the log written by the LLM from the units a scope has not observed,
as dense dated notes with priorities, once their text holds `context.observe_tokens` tokens, in calls that read at
most that many tokens of it (or BATCH_TOKENS when that is more).

The model is shown the person's turns (never the agent's replies: the log is what people said), numbered, each
with its day on the bank's clock, and cites the numbers. Each entry it writes is checked: its sources must be
numbers it was shown (unknown ones are dropped and counted), it needs one at least, its priority must be high,
medium or low, its said day must be the day of one of its sources (the entry takes that unit's time), and the days
it refers to must parse. An entry that fails is rejected and counted; a reply with no entries says the batch holds
nothing worth logging. A batch whose LLM call fails (an error, or no valid reply after the re-asks) or whose every
entry is rejected is written by the offline observer instead, with a warning: no unit is lost, and each is observed
once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timezone, tzinfo
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from hindsight.errors import LLMError
from hindsight.llm.base import LLM
from hindsight.llm.schema import LenientOutput, Numbers, Text
from hindsight.memory_context.observer import observe_units, person_turn
from hindsight.memory_context.prompts import observe_messages, prompt_day
from hindsight.models import LogEntry, MemoryUnit, Priority
from hindsight.recall.format import TokenCounter

log = logging.getLogger(__name__)

# Each call reads at most the threshold's tokens of units, or this many when the threshold is lower: a small
# threshold observes often, not in many small calls; 2,000 tokens and the reply fit a local model's 4,096.
BATCH_TOKENS = 2000
MAX_ENTRY_CHARS = 1000  # an entry longer than this is a model looping, not a note: rejected
_PRIORITIES: list[Any] = [p.value for p in Priority]


class ObservationOut(LenientOutput):
    """One observation as the model writes it; checked entry by entry (`_entry`), not by the schema, so that one
    bad entry does not cost the batch; its schema still asks for every field but the days referred to."""

    model_config = LenientOutput.model_config | {"json_schema_extra": {"required": ["sources", "said", "text",
                                                                                    "priority"]}}
    sources: Numbers = Field(default_factory=list, validation_alias=AliasChoices("sources", "source", "messages"),
                             json_schema_extra={"maxItems": 20})
    said: Text = Field("", validation_alias=AliasChoices("said", "said_at", "day", "date"))
    text: Text = Field("", validation_alias=AliasChoices("text", "observation"), json_schema_extra={"maxLength": 300})
    priority: Text = Field("", json_schema_extra={"enum": _PRIORITIES})
    refers_start: str | None = None
    refers_end: str | None = None

    @field_validator("refers_start", "refers_end", mode="before")
    @classmethod
    def _refers(cls, value: Any) -> Any:
        return None if value is None or str(value).strip().lower() in ("", "null", "none", "n/a") else str(value)


class ObservationsOut(LenientOutput):
    observations: list[ObservationOut]  # no default: a reply without it is garbage, re-asked


@dataclass(frozen=True)
class Observed:
    """The entries written from a scope's units, and what the checks refused: entries rejected, source numbers
    dropped, and the batches the offline observer wrote because the LLM failed."""

    entries: list[LogEntry]
    rejected: int = 0
    dropped_sources: int = 0
    fallbacks: int = 0


@dataclass(frozen=True)
class _Batch:
    units: list[MemoryUnit]
    shown: dict[int, MemoryUnit]  # the numbers the model is shown, of the units with a person's turn
    lines: list[str]


class LLMObserver:
    """Writes log entries from units with an LLM, falling back to the offline observer per batch."""

    def __init__(self, llm: LLM, counter: TokenCounter, threshold: int, max_retries: int) -> None:
        self.llm, self.counter, self.threshold, self.max_retries = llm, counter, threshold, max_retries
        self.batch_tokens = max(threshold, BATCH_TOKENS)

    def due(self, units: Sequence[MemoryUnit]) -> bool:
        """Whether the units' text has reached the threshold (`context.observe_tokens`): below it they wait."""
        total = 0
        for u in units:
            total += self.counter.count(u.text)
            if total >= self.threshold:
                return True
        return False

    def observe(self, units: Sequence[MemoryUnit], scope: str, now: datetime, zone: tzinfo) -> Observed:
        """The entries of all the units, oldest said first; their days on the bank's clock (`zone`)."""
        entries: list[LogEntry] = []
        rejected = dropped = fallbacks = 0
        for batch in self._batches(units, zone):
            if not batch.shown:
                continue  # only the agent's replies: nothing to log
            try:
                reply = self.llm.structured(observe_messages(batch.lines), ObservationsOut,
                                            max_retries=self.max_retries)
            except LLMError as exc:
                log.warning("the LLM observer failed on %d units, the offline observer logs them: %s",
                            len(batch.units), exc)
                entries += observe_units(batch.units, scope, now, zone)
                fallbacks += 1
                continue
            written, refused, unknown = _entries(reply.value.observations, batch.shown, scope, now, zone)
            rejected, dropped = rejected + refused, dropped + unknown
            if not written and refused:
                log.warning("the LLM observer's %d entries on %d units were all rejected, the offline observer logs "
                            "them", refused, len(batch.units))
                entries += observe_units(batch.units, scope, now, zone)
                fallbacks += 1
                continue
            entries += written
        return Observed(sorted(entries, key=lambda e: e.said_at), rejected, dropped, fallbacks)

    def _batches(self, units: Sequence[MemoryUnit], zone: tzinfo) -> list[_Batch]:
        """The units in order, cut into batches of at most `batch_tokens` tokens of text (a longer unit alone), each
        line dated on the bank's clock (`zone`)."""
        batches: list[_Batch] = []
        size = 0
        for u in units:
            tokens = self.counter.count(u.text)
            if not batches or size + tokens > self.batch_tokens:
                batches.append(_Batch([], {}, []))
                size = 0
            batch = batches[-1]
            batch.units.append(u)
            size += tokens
            who, said = person_turn(u)
            if said:
                number = len(batch.shown) + 1
                batch.shown[number] = u
                batch.lines.append(f"[{number}] {prompt_day(u.mentioned_at, zone)} {who or 'The person'}: {said}")
        return batches


def _entries(outs: list[ObservationOut], shown: dict[int, MemoryUnit], scope: str, now: datetime,
             zone: tzinfo) -> tuple[list[LogEntry], int, int]:
    """The entries that pass the checks, how many were rejected, and how many source numbers were unknown."""
    written: list[LogEntry] = []
    rejected = dropped = 0
    for out in outs:
        cited = list(dict.fromkeys(out.sources))
        dropped += sum(n not in shown for n in cited)
        entry = _entry(out, [shown[n] for n in cited if n in shown], scope, now, zone)
        if entry is None:
            rejected += 1
        else:
            written.append(entry)
    return written, rejected, dropped


def _entry(out: ObservationOut, sources: list[MemoryUnit], scope: str, now: datetime,
           zone: tzinfo) -> LogEntry | None:
    text = " ".join(out.text.split())
    priority = out.priority.strip().lower()
    said = [u for u in sources if prompt_day(u.mentioned_at, zone) == out.said.strip()[:10]]
    if not text or len(text) > MAX_ENTRY_CHARS or priority not in _PRIORITIES or not said:
        return None
    try:
        start, end = _day(out.refers_start), _day(out.refers_end)
    except ValueError:
        return None
    start, end = start or end, end or start  # one day given: the observation is about that day
    if start is not None and end is not None and start > end:
        return None
    return LogEntry(
        scope=scope, priority=Priority(priority), text=text, observed_at=now,
        said_at=min(u.mentioned_at for u in said),
        refers_start=None if start is None else datetime.combine(start, time.min, timezone.utc),
        refers_end=None if end is None else datetime.combine(end, time.max, timezone.utc),
        sources=[u.id for u in sources],
    )


def _day(value: str | None) -> date | None:
    """The day of "2024-06-09" (or of an ISO time), None when not given; ValueError when it does not parse."""
    return None if value is None else datetime.fromisoformat(value.strip()).date()
