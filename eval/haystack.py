"""What every evaluated system receives (a haystack and a query) and returns (ranked and packed turns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from hindsight.models import Message


@dataclass(frozen=True)
class BankDocument:
    """One session, retained by hindsight as one document."""

    document_id: str
    messages: list[Message]
    timestamp: datetime


@dataclass(frozen=True)
class Haystack:
    """The history one question is asked against: sessions for hindsight, a flat turn corpus for the baselines."""

    bank_id: str
    documents: list[BankDocument]
    corpus: list[tuple[str, str]]  # (turn id, indexed text), in history order


@dataclass(frozen=True)
class Retrieved:
    """A system's answer to one query, in turn ids."""

    ranked_turns: list[str]  # best first, each turn once
    packed: dict[int, set[str]]  # token budget -> turns inside the context packed for it
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage, for run-time estimates
    answer: str | None = None  # answer mode: the answer model's reply
    usage: dict[str, int] = field(default_factory=dict)  # answer mode: token counts
