"""Why a recall returned what it did: a per-channel table of its hits and the subgraph that produced them."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import networkx as nx
from pydantic import BaseModel

from hindsight.config import RecallConfig
from hindsight.errors import InvalidInputError
from hindsight.inspect.entities import is_entity
from hindsight.models import Network
from hindsight.recall.types import Channel, ChannelHit, PathStep, RecallResult, TimeRange

DEFAULT_RRF_K = RecallConfig().fusion.k


class ExplainedHit(BaseModel):
    """One hit: which channels found it (rank, raw score, RRF share), how it was scored, and its graph path."""

    rank: int
    unit_id: str
    network: Network
    mentioned_at: datetime
    text: str
    channels: dict[Channel, ChannelHit]
    contributions: dict[Channel, float]  # 1 / (k + rank) per channel; they add up to fused_score
    fused_score: float
    rerank_score: float | None
    score: float
    path: list[PathStep]
    superseded_by: str | None
    reply_to: str | None = None  # placed after the hit whose question it answers


class ChannelSummary(BaseModel):
    """How much one channel did for a recall: how many of the hits it found and its summed RRF share."""

    found: int
    contribution: float


class RecallExplanation(BaseModel):
    """A recall's hits in final order with their explanations, and a per-channel summary."""

    query: str
    time_range: TimeRange | None
    hits: list[ExplainedHit]
    channels: dict[Channel, ChannelSummary]


def explain_recall(result: RecallResult, rrf_k: int = DEFAULT_RRF_K) -> RecallExplanation:
    """Tabulate a RecallResult; `rrf_k` must be the fusion constant of the recall (config `recall.rrf_k`)."""
    if rrf_k < 0:
        raise InvalidInputError("rrf_k must be >= 0")
    hits = [
        ExplainedHit(
            rank=i,
            unit_id=h.unit.id,
            network=h.unit.network,
            mentioned_at=h.unit.mentioned_at,
            text=h.unit.text,
            channels={c.channel: c for c in h.channels},
            contributions={c.channel: 1.0 / (rrf_k + c.rank) for c in h.channels},
            fused_score=h.fused_score,
            rerank_score=h.rerank_score,
            score=h.score,
            path=h.path,
            superseded_by=h.superseded_by,
            reply_to=h.reply_to,
        )
        for i, h in enumerate(result.hits, start=1)
    ]
    channels = {
        c: ChannelSummary(
            found=sum(1 for h in hits if c in h.channels), contribution=sum(h.contributions.get(c, 0.0) for h in hits)
        )
        for c in Channel
    }
    return RecallExplanation(query=result.query, time_range=result.time_range, hits=hits, channels=channels)


def recall_subgraph(graph: nx.MultiDiGraph, result: RecallResult, max_entities: int = 10) -> nx.MultiDiGraph:
    """The hits (node attribute `rank`, `channels`), the units on their graph paths (`rank` None), the links
    among them (path hops marked `on_path`), and up to `max_entities` entities mentioned by two or more of them.
    Hits no longer in the graph (forgotten, or filtered out of it) are left out."""
    if max_entities < 0:
        raise InvalidInputError("max_entities must be >= 0")
    ranks = {h.unit.id: i for i, h in enumerate(result.hits, start=1)}
    units = {uid for uid in ranks if uid in graph}
    hops: set[tuple[str, str, str]] = set()  # (unit, unit, link type) either way round: traversal is undirected
    for h in result.hits:
        units |= {step.unit_id for step in h.path if step.unit_id in graph}
        for a, b in zip(h.path, h.path[1:], strict=False):
            via = b.via.value if b.via is not None else ""
            hops |= {(a.unit_id, b.unit_id, via), (b.unit_id, a.unit_id, via)}
    shared = Counter(e for u in units for e in set(graph.successors(u)) if is_entity(graph.nodes[e]))
    entities = [e for e, n in sorted(shared.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][:max_entities]
    sub: nx.MultiDiGraph = graph.subgraph(units | set(entities)).copy()
    channels = {h.unit.id: [c.channel.value for c in h.channels] for h in result.hits}
    for uid in units:
        sub.nodes[uid]["rank"] = ranks.get(uid)
        sub.nodes[uid]["channels"] = channels.get(uid, [])
    for src, dst, data in sub.edges(data=True):
        data["on_path"] = (src, dst, data["type"]) in hops
    sub.graph["query"] = result.query
    return sub
