"""Inspection of a memory bank: entity views, statistics, recall explanations, opinion trajectories, export.

The views read a bank graph from `Bank.to_networkx()`; filter that graph (networks, link types, period) to filter
them. Opinion trajectories read the bank's opinion history. Plots live in `hindsight.inspect.plots` and the
interactive page in `hindsight.inspect.interactive` (both need the `viz` extra).
"""

from hindsight.inspect.entities import (
    EntityRank,
    EntityTimeline,
    TimelineEntry,
    entity_aliases,
    entity_timeline,
    find_entity,
    top_entities,
)
from hindsight.inspect.explain import ChannelSummary, ExplainedHit, RecallExplanation, explain_recall, recall_subgraph
from hindsight.inspect.graphs import entity_neighbourhood, top_subgraph, unit_graph, write_graph
from hindsight.inspect.opinions import (
    EvidenceUnit,
    OpinionSummary,
    OpinionTrajectory,
    TrajectoryPoint,
    opinion_summary,
    opinion_trajectories,
    opinion_trajectory,
)
from hindsight.inspect.stats import ComponentSummary, GraphStats, graph_stats

__all__ = [
    "ChannelSummary",
    "ComponentSummary",
    "EntityRank",
    "EntityTimeline",
    "EvidenceUnit",
    "ExplainedHit",
    "GraphStats",
    "OpinionSummary",
    "OpinionTrajectory",
    "RecallExplanation",
    "TimelineEntry",
    "TrajectoryPoint",
    "entity_aliases",
    "entity_neighbourhood",
    "entity_timeline",
    "explain_recall",
    "find_entity",
    "graph_stats",
    "opinion_summary",
    "opinion_trajectories",
    "opinion_trajectory",
    "recall_subgraph",
    "top_entities",
    "top_subgraph",
    "unit_graph",
    "write_graph",
]
