"""Subgraphs small enough to look at, and graph export (GraphML or node-link JSON)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import networkx as nx

from hindsight.errors import InvalidInputError
from hindsight.inspect.entities import find_entity, is_entity, is_unit

Layout = Literal["spring", "kamada-kawai"]


def unit_graph(graph: nx.MultiDiGraph) -> nx.Graph:
    """Units only, joined when any link joins them (undirected; `types` lists the link types, `weight` the max)."""
    out = nx.Graph()
    out.add_nodes_from((n, d) for n, d in graph.nodes(data=True) if is_unit(d))
    for src, dst, d in graph.edges(data=True):
        if d["type"] == "mentions" or src not in out or dst not in out:
            continue
        if out.has_edge(src, dst):
            edge = out.edges[src, dst]
            edge["types"] = sorted({*edge["types"], d["type"]})
            edge["weight"] = max(edge["weight"], d["weight"])
        else:
            out.add_edge(src, dst, types=[d["type"]], weight=d["weight"])
    return out


def entity_neighbourhood(
    graph: nx.MultiDiGraph, name: str, max_units: int = 25, max_entities: int = 12, exclude: Iterable[str] = ()
) -> nx.MultiDiGraph:
    """The entity, up to `max_units` of its units (the best linked first), the `max_entities` other entities they
    mention most often, and every link among the kept nodes. `exclude` names entities to leave out, such as a
    conversation's speakers, who are in every unit and would sit on top of the focus."""
    if max_units < 1 or max_entities < 0:
        raise InvalidInputError("max_units must be >= 1 and max_entities >= 0")
    eid = find_entity(graph, name)
    skip = {find_entity(graph, x) for x in exclude} | {eid}
    units = list(graph.predecessors(eid))
    links = unit_graph(graph.subgraph(units))
    units.sort(key=lambda u: (-links.degree(u), u))
    units = units[:max_units]
    others: Counter[str] = Counter(
        e for u in units for e in set(graph.successors(u)) if e not in skip and is_entity(graph.nodes[e])
    )
    keep = {eid, *units, *(e for e, _ in sorted(others.items(), key=lambda kv: (-kv[1], kv[0]))[:max_entities])}
    sub: nx.MultiDiGraph = graph.subgraph(keep).copy()
    sub.graph["focus"] = eid
    return sub


def top_subgraph(graph: nx.MultiDiGraph, max_nodes: int = 60) -> nx.MultiDiGraph:
    """The `max_nodes` best connected nodes (units by links, entities by mentions) and the edges among them."""
    if max_nodes < 1:
        raise InvalidInputError("max_nodes must be >= 1")
    if graph.number_of_nodes() <= max_nodes:
        return graph.copy()
    keep = sorted(graph.nodes, key=lambda n: (-graph.degree(n), str(n)))[:max_nodes]
    sub: nx.MultiDiGraph = graph.subgraph(keep).copy()
    return sub


def links_to_draw(g: nx.MultiDiGraph, per_unit: int) -> list[tuple[str, str, str]]:
    """(src, dst, type) of the edges worth drawing: every mention and recall path hop; of the other links, those
    among the `per_unit` strongest of either end, leaving out entity links between units that both mention an
    entity on the plot (its node already shows them)."""
    entities = {e for e, d in g.nodes(data=True) if is_entity(d)}
    keep: list[tuple[str, str, str]] = []
    optional: list[tuple[str, str, str, float]] = []
    for s, t, d in g.edges(data=True):
        kind = d["type"]
        if kind == "mentions" or d.get("on_path"):
            keep.append((s, t, kind))
        elif not (kind == "entity" and set(g.successors(s)) & set(g.successors(t)) & entities):
            optional.append((s, t, kind, d["weight"]))
    strongest: dict[str, list[tuple[str, str, str]]] = {}
    for s, t, kind, _ in sorted(optional, key=lambda e: -e[3]):
        for end in (s, t):
            chosen = strongest.setdefault(end, [])
            if len(chosen) < per_unit:
                chosen.append((s, t, kind))
    return keep + sorted({e for chosen in strongest.values() for e in chosen})


def graph_layout(
    g: nx.MultiDiGraph, links: list[tuple[str, str, str]], layout: Layout = "spring", seed: int = 7
) -> dict[str, tuple[float, float]]:
    """Node positions computed from the drawn `links` only, so that what is drawn close together is linked."""
    if layout not in ("spring", "kamada-kawai"):
        raise InvalidInputError(f"layout is 'spring' or 'kamada-kawai', not {layout!r}")
    simple = nx.Graph()
    simple.add_nodes_from(g)
    simple.add_edges_from((s, t) for s, t, _ in links)
    n = simple.number_of_nodes()
    if layout == "kamada-kawai" and n > 1:
        pos = nx.kamada_kawai_layout(simple)
    else:
        pos = nx.spring_layout(simple, seed=seed, k=1.5 / max(n, 1) ** 0.5)
    return {node: (float(x), float(y)) for node, (x, y) in pos.items()}


def _plain(value: Any) -> Any:
    """A JSON/GraphML-safe form of an attribute value."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return json.dumps([v.model_dump() if hasattr(v, "model_dump") else _plain(v) for v in value])
    return value


def write_graph(graph: nx.MultiDiGraph, path: str | Path) -> Path:
    """Export a graph to `.graphml` (Gephi, yEd, Cytoscape) or `.json` (networkx node-link); None values drop."""
    out = Path(path)
    plain = nx.MultiDiGraph(**{k: _plain(v) for k, v in graph.graph.items() if v is not None})
    plain.add_nodes_from((n, {k: _plain(v) for k, v in d.items() if v is not None}) for n, d in graph.nodes(data=True))
    plain.add_edges_from(
        (s, t, k, {a: _plain(v) for a, v in d.items() if v is not None})
        for s, t, k, d in graph.edges(keys=True, data=True)
    )
    suffix = out.suffix.lower()
    if suffix == ".graphml":
        nx.write_graphml(plain, out)
    elif suffix == ".json":
        out.write_text(json.dumps(nx.node_link_data(plain, edges="edges"), indent=1), encoding="utf-8")
    else:
        raise InvalidInputError(f"export a graph to .graphml or .json, not {out.name!r}")
    return out
