"""Temporal channel: units whose occurrence overlaps the time range the query names."""

from __future__ import annotations

from datetime import datetime

from hindsight.recall.ranked import Candidate, RankedItem
from hindsight.recall.types import Channel, TimeRange
from hindsight.store.base import MemoryStore, UnitFilter
from hindsight.temporal.expressions import find_time_expressions
from hindsight.temporal.patterns import VAGUE_RE

_DAY_S = 86_400.0
# Units whose occurrence overlaps the query's range but whose midpoint lies farther outside it than this score 0,
# and are not scanned for.
MARGIN_DAYS = 31.0


def query_time_range(query: str, query_time: datetime) -> TimeRange | None:
    """The range the query's time expressions cover (all of them: "between March and May"), or None. A vague
    expression ("recently", "lately", "a while ago") dates a retained unit roughly, but as a constraint its window
    is a convention ("I've been nostalgic lately" does not ask for last month): it opens no range."""
    spans = [s for s in find_time_expressions(query, query_time) if not VAGUE_RE.fullmatch(s.text.strip().lower())]
    if not spans:
        return None
    return TimeRange(
        start=min(s.start for s in spans), end=max(s.end for s in spans), text="; ".join(s.text for s in spans)
    )


def temporal_score(start: float, end: float, time_range: TimeRange) -> float:
    """`1 - |mid_f - mid_Q| / (dt / 2)` clamped to [0, 1]; dt is the query range's length (epoch seconds in)."""
    lo, hi = time_range.start.timestamp(), time_range.end.timestamp()
    half = max((hi - lo) / 2, 1.0)
    distance = abs((start + end) / 2 - (lo + hi) / 2)
    return min(1.0, max(0.0, 1.0 - distance / half))


def temporal_search(
    store: MemoryStore, bank_id: str, time_range: TimeRange, pool: int, unit_filter: UnitFilter
) -> list[RankedItem]:
    """Up to `pool` overlapping units, the one whose midpoint is nearest the range's first."""
    found = store.units_in_time(
        bank_id, time_range.start, time_range.end, MARGIN_DAYS * _DAY_S, pool, unit_filter
    )
    items = [RankedItem(u.label, u.unit_id, temporal_score(u.start, u.end, time_range)) for u in found]
    items.sort(key=lambda item: -item.score)  # stable: equal scores keep the store's nearest-first order
    return items[:pool]


def inside_first(cands: list[Candidate]) -> list[Candidate]:
    """The candidates that happened within the query's range (a positive temporal score: their midpoint is inside)
    and that another channel found too, then the rest, each part in its order. A query that names a period asks
    about it; a unit only its date found has nothing to do with the rest of the query, and keeps its place."""

    def inside(c: Candidate) -> bool:
        scores = {h.channel: h.score for h in c.fused.channels}
        return scores.get(Channel.TEMPORAL, 0.0) > 0 and len(scores) > 1

    return sorted(cands, key=lambda c: not inside(c))  # stable: each part keeps its order
