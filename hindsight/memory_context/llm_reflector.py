"""The LLM reflector (`context.observer: llm`): a log past its limit rewritten by the LLM into a shorter one, within
the same target as the offline condenser (condense.TARGET of the limit), merging entries and dropping what no
longer matters.

The model is shown the entries numbered, with their days and priorities, and writes new entries, each citing the
numbers of the entries it keeps or merges. It writes text only: each new entry takes from the entries it cites their
highest priority, the latest day said, the widest time referred to and the union of their sources, so dates and
sources are never the model's invention. The result is refused, and the offline condenser runs instead with a
warning, when the call fails, when an entry cites a number it was not shown or none, when it is empty, or when it is
over the target in tokens. A log over `MAX_READ` times its limit (a first observe of a long history) is condensed
offline without asking: one call could not read it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, tzinfo

from pydantic import AliasChoices, Field

from hindsight.errors import LLMError
from hindsight.llm.base import LLM
from hindsight.llm.schema import LenientOutput, Numbers, Text
from hindsight.memory_context.condense import TARGET
from hindsight.memory_context.llm_observer import MAX_ENTRY_CHARS
from hindsight.memory_context.observer import PRIORITY_RANK
from hindsight.memory_context.prompts import condense_messages
from hindsight.models import LogEntry

log = logging.getLogger(__name__)

MAX_READ = 4  # times the limit: a longer log is condensed offline
_MARGIN = 0.8  # of the words the target leaves the entries, what the model is told: models overshoot


class CondensedOut(LenientOutput):
    model_config = LenientOutput.model_config | {"json_schema_extra": {"required": ["sources", "text"]}}

    sources: Numbers = Field(default_factory=list, validation_alias=AliasChoices("sources", "from", "entries"),
                             json_schema_extra={"maxItems": 30})
    text: Text = Field("", validation_alias=AliasChoices("text", "entry"), json_schema_extra={"maxLength": 300})


class CondensedLogOut(LenientOutput):
    entries: list[CondensedOut]


class LLMReflector:
    """Condenses a log with an LLM; None when its result is refused (the caller condenses offline)."""

    def __init__(self, llm: LLM, max_retries: int) -> None:
        self.llm, self.max_retries = llm, max_retries

    def condense(self, entries: list[LogEntry], measure: Callable[[list[LogEntry]], int], limit: int,
                 zone: tzinfo) -> list[LogEntry] | None:
        """The log rewritten within TARGET of `limit` (in `measure`'s tokens), or None with a warning logged; the
        model is shown the days on the bank's clock (`zone`)."""
        tokens = measure(entries)
        target = int(limit * TARGET)
        if tokens > MAX_READ * limit:
            log.warning("a log of %d tokens is over %d times its limit (%d): condensed offline", tokens, MAX_READ,
                        limit)
            return None
        words = sum(len(e.text.split()) for e in entries)
        budget = max(10, int(words * target / tokens * _MARGIN))
        try:
            reply = self.llm.structured(condense_messages(entries, budget, zone), CondensedLogOut,
                                        max_retries=self.max_retries)
        except LLMError as exc:
            log.warning("the LLM reflector failed, the log is condensed offline: %s", exc)
            return None
        refused = _refusal(reply.value.entries, len(entries))
        condensed = [] if refused else _condensed(reply.value.entries, entries)
        if not refused and measure(condensed) > target:
            refused = f"its {measure(condensed)} tokens are over the target of {target}"
        if refused:
            log.warning("the LLM reflector's log is refused (%s), the log is condensed offline", refused)
            return None
        return condensed


def _refusal(outs: list[CondensedOut], n: int) -> str | None:
    """Why the model's entries cannot replace a log of `n` entries, or None."""
    if not outs:
        return "it is empty"
    for out in outs:
        invented = [s for s in out.sources if not 1 <= s <= n]
        if invented:
            return f"it cites entries {invented[:5]} it was not shown"
        if not out.sources:
            return "an entry cites no entry"
        if not out.text.strip() or len(out.text) > MAX_ENTRY_CHARS:
            return "an entry's text is empty or too long"
    return None


def _condensed(outs: list[CondensedOut], entries: list[LogEntry]) -> list[LogEntry]:
    """The new entries, each with the priority, days and sources of the entries it cites, in the order said."""
    made: list[tuple[datetime, int, LogEntry]] = []
    for out in outs:
        cited = [entries[i - 1] for i in dict.fromkeys(out.sources)]
        starts = [e.refers_start for e in cited if e.refers_start is not None]
        ends = [e.refers_end for e in cited if e.refers_end is not None]
        entry = cited[0].model_copy(update={
            "text": " ".join(out.text.split()), "seq": None,
            "priority": min((e.priority for e in cited), key=PRIORITY_RANK.__getitem__),
            "said_at": max(e.said_at for e in cited), "observed_at": max(e.observed_at for e in cited),
            "refers_start": min(starts) if starts else None, "refers_end": max(ends) if ends else None,
            "sources": list(dict.fromkeys(s for e in cited for s in e.sources)),
        })
        made.append((entry.said_at, min(out.sources), entry))
    return [e for _, _, e in sorted(made, key=lambda m: (m[0], m[1]))]
