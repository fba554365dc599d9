"""Typed results of recall: every hit explains which channels found it and why."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import BaseModel, Field, model_validator

from hindsight.models import LinkType, MemoryUnit


class Channel(str, Enum):
    """The four retrieval channels."""

    SEMANTIC = "semantic"
    LEXICAL = "lexical"
    GRAPH = "graph"
    TEMPORAL = "temporal"


class ChannelHit(BaseModel):
    """One channel's verdict on a unit: its 1-based rank in that channel and the channel's raw score."""

    channel: Channel
    rank: int = Field(ge=1)
    score: float


class PathStep(BaseModel):
    """One hop of the link path by which spreading activation reached a graph hit."""

    unit_id: str
    via: LinkType | None = None  # None for the seed
    activation: float


class TimeRange(BaseModel):
    """The time constraint parsed from a query."""

    start: datetime
    end: datetime
    text: str


class Trim(BaseModel):
    """What packing left out of a hit's text: the assistant's reply but for the sentences that match the query."""

    elided_tokens: int  # tokens of the reply not in the packed context
    kept_sentences: int  # sentences of the reply that are


class RecallHit(BaseModel):
    """A recalled unit with the text handed to reranker and caller, and its explanation."""

    unit: MemoryUnit
    text: str  # the unit text with its formatted date and the date relative to query_time
    tokens: int  # of `context`, what the budget counts
    context: str = ""  # the text as packed: `text`, or an excerpt of it (recall/excerpt.py)
    trim: Trim | None = None  # set when `context` is an excerpt
    channels: list[ChannelHit]
    fused_score: float
    rerank_score: float | None = None
    score: float  # the final ordering score
    path: list[PathStep] = Field(default_factory=list)
    superseded_by: str | None = None  # a newer unit that changes or ends what this one states (recall/updates.py)
    supersedes: str | None = None  # the older unit this one was placed above, because it updates it
    reply_to: str | None = None  # placed right after this unit, whose question it answers (recall/replies.py)
    # The person's turn this reply answers, packed above it in `context` (recall/exchange.py).
    question: MemoryUnit | None = None

    @model_validator(mode="after")
    def _whole_by_default(self) -> RecallHit:
        if not self.context:
            self.context = self.text  # a hit built without an excerpt is packed whole
        return self


class RecallResult(BaseModel):
    """Ranked, budget-packed hits of one recall call."""

    query: str  # as recalled: control characters and lone surrogates replaced, whitespace collapsed
    query_time: datetime
    as_of: datetime | None = None
    time_range: TimeRange | None = None
    budget: int
    tokens_used: int
    hits: list[RecallHit]
    candidates: int = 0  # memories ranked; an agent's reply ranked with the exchange that holds it counts once
    # Wall-clock ms per stage, and "total". "lexical" runs on a side thread while the query is embedded;
    # "lexical_wait" is how long the channels then waited for it.
    timings_ms: dict[str, float] = Field(default_factory=dict)
