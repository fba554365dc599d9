"""Reciprocal rank fusion of the channels' ranked lists: `RRF(f) = sum over channels 1 / (k + rank)`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hindsight.recall.ranked import Fused, RankedItem
from hindsight.recall.types import Channel, ChannelHit

_CHANNEL_ORDER = {c: i for i, c in enumerate(Channel)}


def rrf(lists: Sequence[tuple[Channel, Sequence[RankedItem]]], k: int = 60) -> list[Fused]:
    """Fuse ranked lists (each best first); the result does not depend on the order the lists come in.

    Items of one list with equal scores share the rank of the first of them ("1, 2, 2, 4"): their order in the list
    is arbitrary (every unit of the day a dated query names scores alike in the temporal channel).
    A unit's channel hits are listed in Channel order; sums use math.fsum (exactly rounded, so independent of
    summation order); ties go to the better best rank, then to the unit id.
    """
    entries: dict[str, Fused] = {}
    for channel, items in lists:
        rank = 0
        for position, item in enumerate(items, start=1):
            tied = position > 1 and item.score == items[position - 2].score
            rank = rank if tied else position
            entry = entries.get(item.unit_id)
            if entry is None:
                entry = entries[item.unit_id] = Fused(item.label, item.unit_id, [], 0.0)
            if any(h.channel is channel for h in entry.channels):
                continue  # a unit listed twice by one channel counts once, at its better rank
            entry.channels.append(ChannelHit(channel=channel, rank=rank, score=item.score))
            if item.path:
                entry.path = item.path
    for entry in entries.values():
        entry.channels.sort(key=lambda h: _CHANNEL_ORDER[h.channel])
        entry.score = math.fsum(1.0 / (k + h.rank) for h in entry.channels)
    return sorted(entries.values(), key=lambda e: (-e.score, min(h.rank for h in e.channels), e.unit_id))
