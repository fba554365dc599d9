"""The `llm` extractor: coarse narrative facts from an LLM with a validated schema."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime, time, timedelta

from hindsight.errors import ExtractionError, LLMError
from hindsight.llm.base import LLM, StructuredOutputError
from hindsight.models import (
    CausalKind,
    CausalRelation,
    Document,
    EntityMention,
    ExtractedFact,
    LLMUsage,
    Network,
    Source,
    Turn,
    as_utc,
    is_assistant_role,
)
from hindsight.retain.actions import action_sentences, covered, first_person, names_agent
from hindsight.retain.extractor import Extractor
from hindsight.retain.llm_prompts import extraction_messages
from hindsight.retain.llm_schema import (
    ExtractedFactOut,
    FactExtractionOut,
    parse_date_bound,
)

logger = logging.getLogger(__name__)

_LEADING_PREPOSITION = re.compile(r"^(in|at|on|near|from|to|inside|outside|around|by)\b", re.IGNORECASE)
_LEADING_CONNECTIVE = re.compile(r"^(because|since|as|so|to|for|due to|in order to)\b", re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][\w'-]{1,}")


class LLMExtractor(Extractor):
    """Extracts 2-5 coreference-resolved narrative facts per chunk of turns with an LLM.

    `usage` accumulates the LLM usage of every call, failed attempts included.
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        max_retries: int = 2,
        max_turns_per_call: int = 12,
        max_chars_per_call: int = 12_000,
    ) -> None:
        if max_turns_per_call < 1:
            raise ValueError("max_turns_per_call must be >= 1")
        if max_chars_per_call < 1:
            raise ValueError("max_chars_per_call must be >= 1")
        self.llm = llm
        self.max_retries = max_retries
        self.max_turns_per_call = max_turns_per_call
        # A char budget as well as a turn budget: long turns would overflow a small model's context.
        self.max_chars_per_call = max_chars_per_call
        self.usage = LLMUsage()

    def extract(self, document: Document) -> list[ExtractedFact]:
        """Return the document's facts; raise ExtractionError when the LLM fails on any chunk."""
        facts: list[ExtractedFact] = []
        for chunk in self._chunks(document.turns):
            messages = extraction_messages(chunk, document.context)
            try:
                reply = self.llm.structured(messages, FactExtractionOut, max_retries=self.max_retries)
            except LLMError as exc:
                if isinstance(exc, StructuredOutputError):
                    self.usage = self.usage + exc.usage
                raise ExtractionError(
                    f"LLM extraction failed on turns {chunk[0].turn_id}..{chunk[-1].turn_id}: {exc}",
                    document_id=document.document_id,
                ) from exc
            self.usage = self.usage + reply.usage
            if not reply.value.facts:
                logger.warning("llm extraction: no facts in turns %s..%s of document %s",
                               chunk[0].turn_id, chunk[-1].turn_id, document.document_id)
            converted = self._convert(reply.value.facts, chunk, document.document_id, offset=len(facts))
            told = [f.text for f in converted if f.network is Network.EXPERIENCE]
            facts.extend([*converted, *_stated_actions(chunk, document.document_id, told)])
        logger.debug("llm extraction: %d facts from %d turns of document %s (usage so far %s)",
                     len(facts), len(document.turns), document.document_id, self.usage)
        return facts

    def _chunks(self, turns: Sequence[Turn]) -> list[list[Turn]]:
        """Consecutive turns, at most max_turns_per_call and (unless one turn is longer) max_chars_per_call."""
        chunks: list[list[Turn]] = []
        current: list[Turn] = []
        chars = 0
        for turn in turns:
            size = len(turn.text)
            if current and (len(current) >= self.max_turns_per_call or chars + size > self.max_chars_per_call):
                chunks.append(current)
                current, chars = [], 0
            current.append(turn)
            chars += size
        if current:
            chunks.append(current)
        return chunks

    def _convert(
        self, outs: Sequence[ExtractedFactOut], chunk: Sequence[Turn], document_id: str, *, offset: int
    ) -> list[ExtractedFact]:
        """Schema output of one chunk -> ExtractedFacts with document-level causal indices."""
        source = Source(document_id=document_id, turn_ids=[turn.turn_id for turn in chunk])
        mentioned_at = chunk[-1].timestamp  # in its speaker's offset: the embedded date is the day they lived
        agents = {t.speaker for t in chunk if t.speaker and is_assistant_role(t.role)}
        converted = []
        for local, out in enumerate(outs):
            start, end = _interval(out)
            converted.append(
                ExtractedFact(
                    text=compose_text(out, start, end),
                    network=_network(out, agents),
                    occurred_start=start,
                    occurred_end=end,
                    mentioned_at=mentioned_at,
                    entities=[EntityMention(text=name, label="ENTITY") for name in out.entities],
                    causal=_causal(out, local, offset),
                    source=source.model_copy(deep=True),
                )
            )
        return converted


def _network(out: ExtractedFactOut, agents: set[str]) -> Network:
    """Experience when the model says so of a first-person fact, or when the fact is about the agent by name: small
    models file "Maya's asthma is acting up" under experience and "Ava (assistant) recommended Yosemite" under
    world. A first-person fact filed under world stays there: it may be a person's words copied."""
    if names_agent(out.what, agents) or (out.fact_type == "experience" and first_person(out.what)):
        return Network.EXPERIENCE
    return Network.WORLD


def _stated_actions(chunk: Sequence[Turn], document_id: str, told: list[str]) -> list[ExtractedFact]:
    """The assistant's own actions in the chunk's replies that no experience fact of the model tells (`told`), as
    experience facts of their own: small models leave them out, or file them under the user."""
    people = list(dict.fromkeys(t.speaker for t in chunk if t.speaker and not is_assistant_role(t.role)))
    out = []
    for turn in chunk:
        if not is_assistant_role(turn.role):
            continue
        sentences = [s for s in action_sentences(turn.text) if not covered(s, told)]
        if sentences:
            out.append(ExtractedFact(
                text=" ".join(sentences), network=Network.EXPERIENCE, mentioned_at=turn.timestamp,
                entities=[EntityMention(text=name, label="PERSON") for name in people],
                source=Source(document_id=document_id, turn_ids=[turn.turn_id]),
            ))
    return out


def _causal(out: ExtractedFactOut, local: int, offset: int) -> list[CausalRelation]:
    """Relations to earlier facts only, re-indexed into the document-level fact list."""
    relations: list[CausalRelation] = []
    seen: set[tuple[int, str]] = set()
    for rel in out.causal_relations:
        if not 0 <= rel.target_index < local:
            logger.warning("llm extraction: dropping causal relation of fact %d to fact %d (not an earlier fact)",
                           local, rel.target_index)
            continue
        key = (rel.target_index, rel.relation_type)
        if key in seen:
            continue
        seen.add(key)
        relations.append(CausalRelation(target_index=offset + rel.target_index,
                                        kind=CausalKind(rel.relation_type), strength=rel.strength))
    return relations


def _interval(out: ExtractedFactOut) -> tuple[datetime | None, datetime | None]:
    """The occurrence interval. A lone bound stands alone: a date is its whole day, a datetime
    its instant. Reversed bounds are swapped."""
    raw_start = out.occurred_start or out.occurred_end
    raw_end = out.occurred_end or out.occurred_start
    if raw_start is None or raw_end is None:
        return None, None
    start, end = parse_date_bound(raw_start, end=False), parse_date_bound(raw_end, end=True)
    if start is not None and end is not None and end < start:
        logger.warning("llm extraction: occurred_end %s is before occurred_start %s; swapping", raw_end, raw_start)
        start, end = parse_date_bound(raw_end, end=False), parse_date_bound(raw_start, end=True)
    return start, end


def _long_day(moment: datetime) -> str:
    return f"{moment:%A}, {moment:%B} {moment.day}, {moment.year}"


def _short_day(moment: datetime) -> str:
    return f"{moment:%B} {moment.day}, {moment.year}"


def time_phrase(start: datetime | None, end: datetime | None) -> str | None:
    """Human-readable occurrence: "on Saturday, March 2, 2024", "in June 2024", "between A and B"."""
    if start is None or end is None:
        return None
    s, e = as_utc(start), as_utc(end)
    if s.date() == e.date():
        return f"on {_long_day(s)}"
    whole_days = s.time() == time.min and e.time() == time.max
    if whole_days and (s.month, s.day, e.month, e.day) == (1, 1, 12, 31) and s.year == e.year:
        return f"in {s.year}"
    if whole_days and s.day == 1 and (s.year, s.month) == (e.year, e.month) and _is_month_end(e):
        return f"in {s:%B} {s.year}"
    return f"between {_short_day(s)} and {_short_day(e)}"


def _is_month_end(moment: datetime) -> bool:
    return (moment.date() + timedelta(days=1)).month != moment.month


def _missing_people(who: str, what: str) -> list[str]:
    """The parts of `who` (split on , ; and) whose names do not appear in `what`."""
    lowered = what.lower()
    missing = []
    for raw in re.split(r"[,;]|\band\b", who):
        part = raw.strip().rstrip(".")
        if not part:
            continue
        names = _NAME.findall(part)
        if names:
            if not any(name.lower() in lowered for name in names):
                missing.append(part)
        elif part.lower() not in lowered and part.lower().removeprefix("the ") not in lowered:
            missing.append(part)
    return missing


def compose_text(out: ExtractedFactOut, start: datetime | None, end: datetime | None) -> str:
    """One narrative sentence from what/where/who/when/why, with the occurrence date when known.

    E.g. "Emily (the user's roommate) got married in Lisbon on Saturday, June 8, 2024, because ...".
    Parts already present in `what` are not repeated.
    """
    what = out.what.strip().rstrip(".!?;: ")
    lowered = what.lower()
    text = what
    if out.where and out.where.lower() not in lowered:
        where = out.where.rstrip(".")
        text += f" {where}" if _LEADING_PREPOSITION.match(where) else f" in {where}"
    missing = _missing_people(out.who, what) if out.who else []
    if missing:
        text += f" (involving {', '.join(missing)})"
    phrase = time_phrase(start, end)
    if phrase:
        text += f" {phrase}"
    elif out.when and out.when.lower() not in lowered:
        text += f" ({out.when.rstrip('.')})"
    if out.why and out.why.lower().rstrip(".") not in lowered:
        why = out.why.rstrip(".")
        text += f", {why}" if _LEADING_CONNECTIVE.match(why) else f", because {why}"
    return text + "."
