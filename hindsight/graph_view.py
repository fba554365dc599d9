"""A networkx view of a bank: units and entities as nodes, typed links and mentions as edges."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone, tzinfo

import networkx as nx

from hindsight.models import LinkType, Network
from hindsight.store.base import MemoryStore
from hindsight.temporal.values import parse_time


def bank_graph(
    store: MemoryStore,
    bank_id: str,
    networks: Iterable[Network | str] | None = None,
    link_types: Iterable[LinkType | str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    zone: tzinfo = timezone.utc,
) -> nx.MultiDiGraph:
    """Units (kind='unit') and entities (kind='entity', with their aliases and resolution scores); links keyed by
    type, mentions keyed 'mentions'. `since`/`until` keep the units mentioned in that period."""
    since, until = parse_time(since, "since", zone), parse_time(until, "until", zone)  # naive: the bank's zone
    nets = {Network(n) for n in networks} if networks is not None else set(Network)
    types = {LinkType(t) for t in link_types} if link_types is not None else set(LinkType)
    graph = nx.MultiDiGraph(bank_id=bank_id)
    for u in store.list_units(bank_id):
        if u.network not in nets or (since and u.mentioned_at < since) or (until and u.mentioned_at > until):
            continue
        graph.add_node(
            u.id, kind="unit", text=u.text, network=u.network.value, mentioned_at=u.mentioned_at,
            occurred_start=u.occurred_start, occurred_end=u.occurred_end, document_id=u.source.document_id,
            confidence=u.confidence,
        )
    entities = {e.id: e for e in store.list_entities(bank_id)}
    for pair in store.unit_entity_pairs(bank_id):
        if pair.unit_id in graph and pair.entity_id in entities:
            e = entities[pair.entity_id]
            if e.id not in graph:
                graph.add_node(e.id, kind="entity", name=e.name, label=e.label, mention_count=e.mention_count,
                               aliases=e.aliases)
            graph.add_edge(pair.unit_id, e.id, key="mentions", type="mentions", weight=1.0)
    for link in store.all_links(bank_id):
        if link.type in types and link.src in graph and link.dst in graph:
            graph.add_edge(link.src, link.dst, key=link.type.value, type=link.type.value, weight=link.weight,
                           subtype=link.subtype)
    return graph
