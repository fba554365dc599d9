"""Typed data that crosses module boundaries: profiles, messages, units, entities and links."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hindsight.temporal.values import known_zone

# Roles whose messages are the agent's own output rather than a person's.
ASSISTANT_ROLES = frozenset({"assistant", "agent", "ai", "bot", "system"})


def is_assistant_role(role: str | None) -> bool:
    """Whether a message of this role is the agent's own output."""
    return (role or "").strip().lower() in ASSISTANT_ROLES


class Network(str, Enum):
    """The four memory networks of the paper."""

    WORLD = "world"
    EXPERIENCE = "experience"
    OPINION = "opinion"
    OBSERVATION = "observation"


class LinkType(str, Enum):
    ENTITY = "entity"
    TEMPORAL = "temporal"
    SEMANTIC = "semantic"
    CAUSAL = "causal"
    REPLY = "reply"  # from a unit that asks another speaker a question to the unit that answers it
    UPDATE = "update"  # from a newer unit to the older one whose claim it supersedes; subtype: the attribute


LINK_TYPES = {t.value: t for t in LinkType}  # by value: a dict lookup, where LinkType(value) is slow in hot loops


class CausalKind(str, Enum):
    CAUSES = "causes"
    CAUSED_BY = "caused_by"
    ENABLES = "enables"
    PREVENTS = "prevents"


def as_utc(value: datetime) -> datetime:
    """Return an aware UTC datetime; naive values are taken to be UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def as_aware(value: datetime) -> datetime:
    """`value` in its own offset; a naive value is taken to be UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


class Disposition(BaseModel):
    """Personality traits 1..5 and how strongly they bias answers (0..1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    skepticism: int = Field(3, ge=1, le=5)
    literalism: int = Field(3, ge=1, le=5)
    empathy: int = Field(3, ge=1, le=5)
    bias: float = Field(0.2, ge=0.0, le=1.0)


class BankProfile(BaseModel):
    """A bank's identity: name, first-person background, disposition, and the time zone its dates are in (an IANA
    name such as "America/Denver"; None: the engine's `retain.timezone`). An unknown field is an error: a misspelt
    one must not reset the field it meant."""

    model_config = ConfigDict(extra="forbid")
    name: str = ""
    background: str = ""
    disposition: Disposition = Field(default_factory=Disposition)
    timezone: str | None = None

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        return None if value is None else known_zone(value)


class Message(BaseModel):
    """One conversation turn. Give `role` (user/assistant/...) or a `speaker` name, or both. An unknown field is an
    error: a misspelt `timestamp` would otherwise date the turn now."""

    model_config = ConfigDict(extra="forbid")

    content: str
    role: str | None = None
    speaker: str | None = None
    timestamp: datetime | None = None
    id: str | None = None

    @model_validator(mode="after")
    def _needs_author(self) -> Message:
        if not (self.role or self.speaker):
            raise ValueError("a message needs a role or a speaker")
        return self

    @property
    def author(self) -> str:
        return (self.speaker or self.role or "").strip()


# What retain takes: a text, or messages (Message objects, or mappings of Message's fields); and a time, a datetime
# or an ISO string (naive means the bank's time zone, retain.timezone). Anything else is refused at run time with
# InvalidInputError as well.
Content: TypeAlias = "str | Sequence[Message | Mapping[str, Any]]"
TimeArg: TypeAlias = "datetime | str"


class Turn(BaseModel):
    """A normalized piece of retained content: one message, or one paragraph of plain text."""

    index: int
    turn_id: str
    speaker: str | None
    role: str | None
    text: str
    timestamp: datetime
    char_start: int | None = None
    char_end: int | None = None


class Document(BaseModel):
    """The normalized input of one retain call, handed to an extractor."""

    document_id: str
    turns: list[Turn]
    context: str | None = None
    timestamp: datetime


class Source(BaseModel):
    """Where a unit came from: the document and the turns or character span, and who the unit's text names as the
    agent (`agent_names`: the speaker, else the role, of its turns with an assistant role, such as "Ava"; empty for
    units retained before it was recorded, whose replies are told by their role alone)."""

    document_id: str
    turn_ids: list[str] = Field(default_factory=list)
    char_start: int | None = None
    char_end: int | None = None
    agent_names: list[str] = Field(default_factory=list)


class EntityMention(BaseModel):
    """A surface mention of an entity, before resolution."""

    text: str
    label: str = "ENTITY"
    # The text of another mention of the same fact that this one is stated to be another name of ("Margaret, we
    # all call her Meg": Meg is an alias of Margaret); resolution puts both on one entity.
    alias_of: str | None = None


class CausalRelation(BaseModel):
    """A causal link from this fact to an earlier fact of the same extraction (by index)."""

    target_index: int = Field(ge=0)
    kind: CausalKind = CausalKind.CAUSED_BY
    strength: float = Field(1.0, ge=0.0, le=1.0)


class ExtractedFact(BaseModel):
    """An extractor's output: a narrative fact with time, entities and provenance, not yet stored. The occurrence
    bounds are calendar days written in UTC (hindsight/temporal/expressions.py); `mentioned_at` keeps the offset of
    its speaker, so that the date said is the speaker's."""

    text: str
    network: Network = Network.WORLD
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime
    entities: list[EntityMention] = Field(default_factory=list)
    causal: list[CausalRelation] = Field(default_factory=list)
    source: Source
    confidence: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Words that help find the fact without being part of it (the question an answer replies to). Stored as the
    # unit's lead and indexed for lexical search at a lower weight; never embedded, never the unit text.
    lead: str | None = None
    # The index of the fact (same document) whose closing question this fact's first turn answers.
    answers: int | None = Field(None, ge=0)
    # Passages of a long fact embedded on their own: one sentence of a long message is lost in the embedding of
    # the whole, and the blend reranker takes the best of the unit's and its segments' cosines.
    segments: list[str] = Field(default_factory=list)

    @field_validator("occurred_start", "occurred_end")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    @field_validator("mentioned_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return as_aware(value)


class MemoryUnit(BaseModel):
    """A stored memory unit."""

    id: str
    bank_id: str
    text: str
    network: Network
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime
    confidence: float | None = None
    entities: list[str] = Field(default_factory=list)
    source: Source
    context: str | None = None
    content_hash: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    lead: str | None = None  # text quoted from before the unit: searched, never embedded (ExtractedFact.lead)

    @field_validator("mentioned_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)  # an instant, as the store reads it back


class EntityAlias(BaseModel):
    """A surface form merged into an entity, with the resolution score that merged it."""

    alias: str
    score: float


class Entity(BaseModel):
    """A canonical entity of a bank."""

    id: str
    bank_id: str
    name: str
    label: str
    aliases: list[EntityAlias] = Field(default_factory=list)
    mention_count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class Link(BaseModel):
    """A typed, weighted edge between two units."""

    src: str
    dst: str
    type: LinkType
    weight: float = Field(ge=0.0, le=1.0)
    subtype: str | None = None


class RetainResult(BaseModel):
    """What one retain call did."""

    document_id: str
    units: list[MemoryUnit]
    created: int = 0
    unchanged: int = 0
    removed: int = 0
    pending_jobs: int = 0


class BankStats(BaseModel):
    """Counts of one bank's contents."""

    bank_id: str
    units: dict[str, int]
    entities: int
    links: dict[str, int]
    documents: int


class Verdict(str, Enum):
    """How a piece of evidence bears on an opinion; `formed` marks the opinion's first history entry."""

    FORMED = "formed"
    REINFORCE = "reinforce"
    WEAKEN = "weaken"
    CONTRADICT = "contradict"
    NEUTRAL = "neutral"


class OpinionEvent(BaseModel):
    """One point of an opinion's trajectory: its confidence (and text) after evidence arrived. `at` is in the bank's
    time: when the evidence happened (the latest `mentioned_at` of the facts weighed), or the reflect's query time."""

    unit_id: str
    verdict: Verdict
    confidence: float = Field(ge=0.0, le=1.0)
    text: str
    evidence: list[str] = Field(default_factory=list)  # unit ids
    reason: str = ""
    at: datetime


@dataclass
class EntityCandidate:
    """An existing canonical entity the store proposes for a mention."""

    id: str
    name: str
    label: str
    aliases: list[str] = field(default_factory=list)
    last_seen: datetime | None = None
    cooccurring: set[str] = field(default_factory=set)


@dataclass
class LLMUsage:
    """Token counts and number of calls; add two usages to accumulate them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.calls + other.calls,
        )


# -- the context an agent sends (hindsight/memory_context/) ---------------------------------------

BANK_SCOPE = "bank"  # the scope of what a bank's threads share; any other scope is a thread id


class WorkingMemoryFormat(BaseModel):
    """What a bank's working memory holds: markdown that starts as `template`, or JSON that `json_schema` (a JSON
    schema, e.g. a pydantic model's) checks; the same for the bank and each of its threads."""

    template: str = ""
    json_schema: dict[str, Any] | None = None


class WorkingMemory(BaseModel):
    """One version of the working memory of a scope ("bank" or a thread id). Version 0 is the format's template,
    before any update; each update, and each revert, adds the next version."""

    scope: str
    version: int = Field(ge=0)
    content: str  # markdown, or JSON text under a schema
    note: str | None = None
    created_at: datetime | None = None  # None for version 0
    reverted_from: int | None = None  # the version this one restored

    @property
    def data(self) -> Any:
        """The content as JSON data (under a schema format)."""
        return json.loads(self.content)


class Priority(str, Enum):
    """How much an observation matters when the context budget is tight (memory_context/observer.py)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class LogEntry(BaseModel):
    """One dated line of the observation log: when it was observed, said and what time it refers to, and the
    units it was written from. `seq` (the order of the log) is given by the store."""

    scope: str
    priority: Priority
    text: str
    observed_at: datetime
    said_at: datetime
    refers_start: datetime | None = None
    refers_end: datetime | None = None
    sources: list[str] = Field(default_factory=list)  # unit ids
    seq: int | None = None
