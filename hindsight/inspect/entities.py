"""Entity views over a bank graph (`Bank.to_networkx()`): top entities, one entity's timeline, its aliases.

Every view reads the graph it is given, so filtering the graph first (by network or period) filters the views.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel
from rapidfuzz import process

from hindsight.errors import EntityNotFoundError, InvalidInputError
from hindsight.models import EntityAlias, Network

RankBy = Literal["mentions", "degree"]


class EntityRank(BaseModel):
    """An entity with its mention count (units that mention it) and degree (distinct entities it co-occurs with)."""

    id: str
    name: str
    label: str
    mentions: int
    degree: int


class TimelineEntry(BaseModel):
    """One unit on an entity's timeline; `when` is the middle of its occurrence interval, else its mention time."""

    unit_id: str
    network: Network
    when: datetime
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime
    text: str


class EntityTimeline(BaseModel):
    """The units that mention one entity, oldest first."""

    entity_id: str
    name: str
    entries: list[TimelineEntry]


def is_entity(data: dict[str, Any]) -> bool:
    return bool(data.get("kind") == "entity")


def is_unit(data: dict[str, Any]) -> bool:
    return bool(data.get("kind") == "unit")


def unit_time(data: dict[str, Any]) -> datetime:
    """The time a unit node stands at: the middle of its occurrence interval, else its mention time."""
    start, end = data.get("occurred_start"), data.get("occurred_end")
    if start is not None and end is not None:
        return start + (end - start) / 2  # type: ignore[no-any-return]
    return data["mentioned_at"]  # type: ignore[no-any-return]


def find_entity(graph: nx.MultiDiGraph, name: str) -> str:
    """The node id of the entity with this id, name or alias (case-insensitive); the most mentioned one wins
    when several share the name. Raises EntityNotFoundError with the closest names."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("an entity name must be a non-empty string")
    entities = {n: d for n, d in graph.nodes(data=True) if is_entity(d)}
    if name in entities:
        return str(name)
    wanted = name.strip().casefold()
    matches = [
        n
        for n, d in entities.items()
        if d["name"].casefold() == wanted or any(a.alias.casefold() == wanted for a in d.get("aliases", []))
    ]
    if matches:
        return str(max(matches, key=lambda n: (graph.in_degree(n), n)))
    names = sorted({d["name"] for d in entities.values()})
    close = [m[0] for m in process.extract(name, names, limit=3, score_cutoff=60)]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise EntityNotFoundError(f"no entity named {name!r} in bank {graph.graph.get('bank_id')!r}{hint}")


def _cooccurring(graph: nx.MultiDiGraph) -> dict[str, set[str]]:
    """For every entity node, the other entity nodes mentioned by at least one of its units."""
    out: dict[str, set[str]] = {n: set() for n, d in graph.nodes(data=True) if is_entity(d)}
    for unit, data in graph.nodes(data=True):
        if is_unit(data):
            mentioned = {e for e in graph.successors(unit) if e in out}
            for e in mentioned:
                out[e] |= mentioned - {e}
    return out


def top_entities(graph: nx.MultiDiGraph, k: int = 10, by: RankBy = "mentions") -> list[EntityRank]:
    """The k entities with the most mentions (or the highest degree), ties broken by the other, then the name."""
    if by not in ("mentions", "degree"):
        raise InvalidInputError(f"rank entities by 'mentions' or 'degree', not {by!r}")
    if k < 0:
        raise InvalidInputError("k must be >= 0")
    co = _cooccurring(graph)
    ranks = [
        EntityRank(
            id=n,
            name=graph.nodes[n]["name"],
            label=graph.nodes[n]["label"],
            mentions=graph.in_degree(n),
            degree=len(others),
        )
        for n, others in co.items()
    ]
    if by == "mentions":
        ranks.sort(key=lambda r: (-r.mentions, -r.degree, r.name))
    else:
        ranks.sort(key=lambda r: (-r.degree, -r.mentions, r.name))
    return ranks[:k]


def entity_timeline(graph: nx.MultiDiGraph, name: str) -> EntityTimeline:
    """The units of the graph that mention the entity, in time order."""
    eid = find_entity(graph, name)
    entries = []
    for unit in graph.predecessors(eid):
        d = graph.nodes[unit]
        entries.append(
            TimelineEntry(
                unit_id=unit,
                network=Network(d["network"]),
                when=unit_time(d),
                occurred_start=d["occurred_start"],
                occurred_end=d["occurred_end"],
                mentioned_at=d["mentioned_at"],
                text=d["text"],
            )
        )
    entries.sort(key=lambda e: (e.when, e.mentioned_at, e.unit_id))
    return EntityTimeline(entity_id=eid, name=graph.nodes[eid]["name"], entries=entries)


def entity_aliases(graph: nx.MultiDiGraph, name: str) -> list[EntityAlias]:
    """The surface forms merged into the entity, with the resolution score of each, best first."""
    aliases: list[EntityAlias] = graph.nodes[find_entity(graph, name)].get("aliases", [])
    return sorted(aliases, key=lambda a: (-a.score, a.alias))
