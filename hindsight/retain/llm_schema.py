"""Pydantic schemas of the LLM's fact-extraction output.

Lenient where small models are sloppy (case, aliases, lists vs strings, bad dates, bad causal
links), strict where it matters (a fact needs `what`; `fact_type` must name a known network).
"""

from __future__ import annotations

import calendar
import logging
from datetime import UTC, date, datetime, time
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hindsight.llm.schema import ModelFacing

logger = logging.getLogger(__name__)

# Upper bounds shown in the schema (maxItems), not enforced on validation: a constrained decoder (llama.cpp's
# grammar) cannot go past them, so a small model that writes one fact per turn, or loops over a list, still
# closes its JSON within max_tokens. A hosted model that writes more is not rejected for it.
MAX_FACTS_PER_CALL = 5
MAX_ENTITIES_PER_FACT = 10
MAX_CAUSAL_PER_FACT = 3

RelationType = Literal["causes", "caused_by", "enables", "prevents"]
FactType = Literal["world", "experience"]

_NULLS = {"", "null", "none", "n/a", "na", "unknown", "not stated", "not specified", "-"}
_RELATION_ALIASES = {
    "cause": "causes", "caused": "caused_by", "causedby": "caused_by", "because_of": "caused_by",
    "enable": "enables", "enabled_by": "enables", "prevent": "prevents", "prevented_by": "prevents",
}
# Formats small models emit despite being asked for ISO; tried after datetime.fromisoformat.
_DAY_FORMATS = ("%Y/%m/%d", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%B %d %Y")
_MONTH_FORMATS = ("%Y-%m", "%Y/%m", "%B %Y", "%b %Y")


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in _NULLS)


def _as_text(value: Any) -> str | None:
    """A free-text field as a stripped string; lists are joined, null-like values become None."""
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v).strip() for v in value if not _blank(v))
    if _blank(value):
        return None
    text = str(value).strip()
    return text or None


Granularity = Literal["instant", "day", "period"]


def parse_date_bound(value: str, *, end: bool) -> datetime | None:
    """Parse a date, datetime, month or year into an aware datetime (naive = UTC); None if unparseable.

    Dates, months and years cover a period: as a start they give its first instant, as an end its
    last, so "2024-06" is June 1, 00:00 as a start and June 30, 23:59:59.999999 as an end.
    """
    parsed = _parse_bound(value, end=end)
    return parsed[0] if parsed else None


def _parse_bound(value: str, *, end: bool) -> tuple[datetime, Granularity] | None:
    text = value.strip()
    try:
        if len(text) > 10:
            moment = datetime.fromisoformat(text)
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)), "instant"
        return _day_bound(date.fromisoformat(text), end), "day"
    except ValueError:
        pass
    for fmt in _DAY_FORMATS:
        try:
            return _day_bound(datetime.strptime(text, fmt).date(), end), "day"
        except ValueError:
            continue
    for fmt in _MONTH_FORMATS:
        try:
            month = datetime.strptime(text, fmt).date()
        except ValueError:
            continue
        last = calendar.monthrange(month.year, month.month)[1]
        return _day_bound(month.replace(day=last if end else 1), end), "period"
    if len(text) == 4 and text.isdigit() and int(text) >= 1:
        return _day_bound(date(int(text), 12, 31) if end else date(int(text), 1, 1), end), "period"
    return None


def _day_bound(day: date, end: bool) -> datetime:
    return datetime.combine(day, time.max if end else time.min, tzinfo=UTC)


def _normalize_bound(raw: Any, *, end: bool, field_name: str) -> tuple[str, Granularity] | None:
    """An ISO string (a date unless a time was given) and its granularity; None when absent or bad."""
    if _blank(raw):
        return None
    text = str(raw).strip()
    parsed = _parse_bound(text, end=end)
    if parsed is None:
        logger.warning("llm extraction: ignoring unparseable %s %r", field_name, text)
        return None
    moment, granularity = parsed
    return (moment.isoformat() if granularity == "instant" else moment.date().isoformat()), granularity


class CausalRelationOut(ModelFacing):
    """A causal link from the fact holding it to an earlier fact of the same output."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    target_index: int = Field(
        validation_alias=AliasChoices("target_index", "target", "index", "fact_index"),
        description="index of an EARLIER fact in the list (0 = first)",
    )
    relation_type: RelationType = Field(
        validation_alias=AliasChoices("relation_type", "type", "kind", "relation"),
        description="this fact causes / is caused_by / enables / prevents the earlier fact",
    )
    strength: float = Field(default=1.0, description="0.0 to 1.0")

    @field_validator("relation_type", mode="before")
    @classmethod
    def _relation(cls, value: Any) -> Any:
        if isinstance(value, str):
            key = value.strip().lower().replace(" ", "_").replace("-", "_")
            return _RELATION_ALIASES.get(key, key)
        return value

    @field_validator("strength", mode="before")
    @classmethod
    def _strength(cls, value: Any) -> Any:
        if _blank(value):
            return 1.0
        try:
            return min(1.0, max(0.0, float(value)))
        except (TypeError, ValueError):
            return value  # let pydantic report it


class ExtractedFactOut(ModelFacing):
    """One narrative fact as the LLM writes it."""

    # `what` and `fact_type` have lenient defaults (an empty fact is dropped, not fatal), but the
    # schema shown to the model marks them required.
    model_config = ConfigDict(
        extra="ignore",
        populate_by_name=True,
        json_schema_extra={"required": ["what", "fact_type"]},
    )

    what: str = Field(default="", description="the complete, self-contained fact")
    when: str | None = Field(default=None, description="when it happened, in words")
    where: str | None = None
    who: str | None = Field(default=None, description="people involved and who they are")
    why: str | None = None
    fact_type: FactType = Field(default="world", description="experience = the assistant's own actions")
    occurred_start: str | None = Field(default=None, description="YYYY-MM-DD or null")
    occurred_end: str | None = Field(default=None, description="YYYY-MM-DD or null")
    entities: list[str] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_ENTITIES_PER_FACT})
    causal_relations: list[CausalRelationOut] = Field(
        default_factory=list,
        validation_alias=AliasChoices("causal_relations", "causal", "relations"),
        json_schema_extra={"maxItems": MAX_CAUSAL_PER_FACT},
    )

    @model_validator(mode="before")
    @classmethod
    def _dates(cls, data: Any) -> Any:
        # Both bounds together: a lone partial bound ("2024-06") implies the other end of its period.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        raw_start, raw_end = data.get("occurred_start"), data.get("occurred_end")
        start = _normalize_bound(raw_start, end=False, field_name="occurred_start")
        end = _normalize_bound(raw_end, end=True, field_name="occurred_end")
        if start is not None and end is None and start[1] == "period" and _blank(raw_end):
            end = _normalize_bound(raw_start, end=True, field_name="occurred_start")
        if end is not None and start is None and end[1] == "period" and _blank(raw_start):
            start = _normalize_bound(raw_end, end=False, field_name="occurred_end")
        data["occurred_start"] = start[0] if start else None
        data["occurred_end"] = end[0] if end else None
        return data

    @field_validator("what", mode="before")
    @classmethod
    def _what(cls, value: Any) -> Any:
        return _as_text(value) or ""

    @field_validator("when", "where", "who", "why", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return _as_text(value)

    @field_validator("fact_type", mode="before")
    @classmethod
    def _fact_type(cls, value: Any) -> Any:
        if _blank(value):
            return "world"
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, value: Any) -> Any:
        if _blank(value):
            return []
        items = value if isinstance(value, (list, tuple)) else [value]
        names: list[str] = []
        for item in items:
            if isinstance(item, dict):  # {"name": "Emily", "type": "person"}
                item = item.get("name") or item.get("text") or item.get("entity")
            name = _as_text(item) if isinstance(item, (str, int, float)) else None
            if name and name.lower() not in {n.lower() for n in names}:
                names.append(name)
        return names

    @field_validator("causal_relations", mode="before")
    @classmethod
    def _relations(cls, value: Any) -> Any:
        # A bad causal link is dropped, not allowed to fail the whole extraction.
        if _blank(value):
            return []
        items = value if isinstance(value, (list, tuple)) else [value]
        kept: list[CausalRelationOut] = []
        for item in items:
            try:
                kept.append(CausalRelationOut.model_validate(item))
            except ValidationError as exc:
                logger.warning("llm extraction: dropping invalid causal relation %r: %s", item, exc.errors()[0]["msg"])
        return kept


class FactExtractionOut(ModelFacing):
    """The LLM's whole extraction output for one chunk of conversation."""

    model_config = ConfigDict(extra="ignore")

    facts: list[ExtractedFactOut] = Field(json_schema_extra={"maxItems": MAX_FACTS_PER_CALL})

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        # Small models sometimes return the list itself, or a single fact without the wrapper.
        if isinstance(data, list):
            return {"facts": data}
        if isinstance(data, dict) and "facts" not in data and "what" in data:
            return {"facts": [data]}
        return data

    @field_validator("facts", mode="before")
    @classmethod
    def _single_fact(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) and "what" in value else value

    @model_validator(mode="after")
    def _drop_empty(self) -> FactExtractionOut:
        """Drop facts without `what`, re-pointing causal indices at the facts that remain."""
        keep = [i for i, fact in enumerate(self.facts) if fact.what.strip()]
        if len(keep) == len(self.facts):
            return self
        logger.warning("llm extraction: dropping %d fact(s) with an empty 'what'", len(self.facts) - len(keep))
        new_index = {old: new for new, old in enumerate(keep)}
        dropped = set(range(len(self.facts))) - set(keep)
        facts = []
        for old in keep:
            fact = self.facts[old]
            relations = []
            for rel in fact.causal_relations:
                if rel.target_index in dropped:
                    logger.warning("llm extraction: dropping causal relation to dropped fact %d", rel.target_index)
                    continue
                # Out-of-range indices keep their value: they stay out of range for the caller to drop.
                target = new_index.get(rel.target_index, rel.target_index)
                relations.append(rel.model_copy(update={"target_index": target}))
            facts.append(fact.model_copy(update={"causal_relations": relations}))
        self.facts = facts
        return self
