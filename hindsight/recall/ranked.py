"""Internal data passed between recall stages: channel lists, fused entries and loaded candidates."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hindsight.models import MemoryUnit
from hindsight.recall.types import ChannelHit, PathStep
from hindsight.store.base import MemoryStore, UnitFilter
from hindsight.store.search import IndexHit

# Index hits fetched per wanted hit when a filter (networks, as_of) applies.
OVERSAMPLE = 4


@dataclass
class RankedItem:
    """One unit in one channel's ranked list, with the channel's raw score (and a graph hit's path)."""

    label: int
    unit_id: str
    score: float
    path: list[PathStep] = field(default_factory=list)


@dataclass
class Fused:
    """A unit after reciprocal rank fusion: which channels found it, at what rank, and its RRF score."""

    label: int
    unit_id: str
    channels: list[ChannelHit]
    score: float
    path: list[PathStep] = field(default_factory=list)


@dataclass
class Candidate:
    """A fused unit loaded for reranking and packing: the unit, its recall text (date header, a space, the unit's
    text), and stored embedding (and its segments')."""

    fused: Fused
    unit: MemoryUnit
    header: str
    vector: np.ndarray | None = None
    segments: np.ndarray | None = None

    @property
    def text(self) -> str:
        return f"{self.header} {self.unit.text}"


def resolve_hits(
    store: MemoryStore, bank_id: str, hits: list[IndexHit], unit_filter: UnitFilter
) -> list[RankedItem]:
    """Index hits whose unit still exists and passes the filter, in order, with their unit ids."""
    ids = store.labels_to_ids(bank_id, [h.label for h in hits], unit_filter if unit_filter.active else None)
    return [RankedItem(h.label, ids[h.label], h.score) for h in hits if h.label in ids]
