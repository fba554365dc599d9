"""Statistics of a bank graph: units per network, links per type, degree distribution, connected components."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import networkx as nx
from pydantic import BaseModel

from hindsight.errors import InvalidInputError
from hindsight.inspect.entities import is_entity, is_unit, unit_time
from hindsight.inspect.graphs import unit_graph
from hindsight.models import LinkType, Network


class ComponentSummary(BaseModel):
    """A connected component of the unit-link graph: its size, time span and most mentioned entities."""

    size: int
    first: datetime
    last: datetime
    top_entities: list[str]


class GraphStats(BaseModel):
    """What a bank graph holds and how it is connected. Degrees count distinct linked units (entities aside)."""

    units: dict[str, int]
    entities: int
    links: dict[str, int]
    mentions: int
    degree_histogram: dict[int, int]
    mean_degree: float
    max_degree: int
    isolated_units: int
    component_count: int
    components: list[ComponentSummary]


def graph_stats(graph: nx.MultiDiGraph, top_components: int = 5, entities_per_component: int = 3) -> GraphStats:
    """Counts, the degree histogram and the `top_components` largest components (largest first)."""
    if top_components < 0 or entities_per_component < 0:
        raise InvalidInputError("top_components and entities_per_component must be >= 0")
    units = Counter(d["network"] for _, d in graph.nodes(data=True) if is_unit(d))
    links = Counter(d["type"] for _, _, d in graph.edges(data=True))
    ug = unit_graph(graph)
    degrees = [deg for _, deg in ug.degree()]
    components = sorted(nx.connected_components(ug), key=lambda c: (-len(c), min(c)))
    return GraphStats(
        units={n.value: units.get(n.value, 0) for n in Network},
        entities=sum(1 for _, d in graph.nodes(data=True) if is_entity(d)),
        links={t.value: links.get(t.value, 0) for t in LinkType},
        mentions=links.get("mentions", 0),
        degree_histogram=dict(sorted(Counter(degrees).items())),
        mean_degree=sum(degrees) / len(degrees) if degrees else 0.0,
        max_degree=max(degrees, default=0),
        isolated_units=sum(1 for d in degrees if d == 0),
        component_count=len(components),
        components=[_summary(graph, c, entities_per_component) for c in components[:top_components]],
    )


def _summary(graph: nx.MultiDiGraph, component: set[str], k: int) -> ComponentSummary:
    times = [unit_time(graph.nodes[u]) for u in component]
    mentioned = Counter(e for u in component for e in set(graph.successors(u)) if is_entity(graph.nodes[e]))
    top = sorted(mentioned.items(), key=lambda kv: (-kv[1], graph.nodes[kv[0]]["name"]))[:k]
    return ComponentSummary(
        size=len(component), first=min(times), last=max(times), top_entities=[graph.nodes[e]["name"] for e, _ in top]
    )
