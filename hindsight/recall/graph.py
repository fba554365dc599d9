"""Graph channel: spreading activation over the typed links from the top semantic hits.

`A(j, t+1) = max over edges (i - j) of A(i, t) * w * decay * mu(type)`: links are undirected for traversal, a
seed starts at its cosine similarity, activation below `min_activation` does not spread,
and the hop and node budgets bound the work. Each hit keeps the simple path by which it got its activation.

An entity link's stored weight is 1.0 whatever the entity; at recall it is scaled by the specificity of the
rarest entity the two units share, `log(1 + N / df) / log(1 + N)` (N units in the bank, df of them mention the
entity). Otherwise an entity in every unit (a conversation's speakers) would activate the whole bank equally.

A temporal link spreads only between units retained from one document: units of two conversations that happen to be
close in time need not be about the same thing.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from hindsight.config import GraphConfig, GraphMu
from hindsight.models import LINK_TYPES, CausalKind, LinkType
from hindsight.recall.ranked import RankedItem
from hindsight.recall.types import PathStep
from hindsight.store.base import GraphEdge, MemoryStore, UnitFilter

Neighbours = Callable[[list[int]], list[GraphEdge]]

_Scored = tuple[float, float, GraphEdge]  # (weight * mu, mu, edge): an edge ranked for fan-out
# A cached link seen from its unit: (dst, dst_id, type, subtype, weight, shared_entities, cross_document). Values only,
# which the garbage collector stops tracking: cached edge objects made every full collection walk them.
_Row = tuple[int, str, str, str | None, float, tuple[str, ...], bool]
_STRONG_CAUSAL = frozenset({CausalKind.CAUSES.value, CausalKind.CAUSED_BY.value, None})


def mu(edge: GraphEdge, m: GraphMu) -> float:
    """The multiplier of an edge's link type (and causal subtype)."""
    if edge.type is LinkType.ENTITY:
        return m.entity
    if edge.type is LinkType.CAUSAL:
        return m.causal if edge.subtype in _STRONG_CAUSAL else m.causal_weak
    if edge.type is LinkType.SEMANTIC:
        return m.semantic
    return m.temporal  # temporal and reply links: neighbours in time


def spread(seeds: Sequence[RankedItem], neighbours: Neighbours, params: GraphConfig) -> list[RankedItem]:
    """Activated units, seeds included (a seed's path is itself), by activation, then hops, then label."""
    activation: dict[int, float] = {}
    paths: dict[int, list[PathStep]] = {}
    for seed in seeds:
        a = min(1.0, max(0.0, seed.score))
        if a >= params.min_activation and seed.label not in activation:
            activation[seed.label] = a
            paths[seed.label] = [PathStep(unit_id=seed.unit_id, via=None, activation=a)]
    # Each hop's frontier is kept most active first (the seeds sorted here, later hops as they are built).
    frontier = sorted(activation, key=lambda label: (-activation[label], label))
    for _ in range(params.max_hops):
        # A beam: only the most active units spread; what the weaker ones reach would score lower still.
        frontier = frontier[: params.max_expand]
        if not frontier:
            break
        best: dict[int, tuple[float, GraphEdge]] = {}
        for src, group in _strongest(neighbours(frontier), frontier, params):
            for _, m, edge in group:
                a = activation[src] * edge.weight * params.decay * m
                if a < params.min_activation:
                    break  # the group is strongest first: the rest cannot reach the cut-off either
                if a <= activation.get(edge.dst, 0.0):
                    continue
                if any(step.unit_id == edge.dst_id for step in paths[src]):
                    continue  # keep paths simple: a multiplier above 1 must not pay for going round a cycle
                if edge.dst not in best or a > best[edge.dst][0]:
                    best[edge.dst] = (a, edge)
        # Synchronous update: every relaxation of this hop read the activations of the previous one.
        frontier = []
        for dst, (a, edge) in sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0])):
            if dst not in activation and len(activation) >= params.max_nodes:
                continue
            activation[dst] = a
            paths[dst] = [*paths[edge.src], PathStep(unit_id=edge.dst_id, via=edge.type, activation=a)]
            frontier.append(dst)
    reached = list(activation)
    reached.sort(key=lambda label: (-activation[label], len(paths[label]), label))
    return [RankedItem(label, paths[label][-1].unit_id, activation[label], paths[label]) for label in reached]


def _strongest(edges: list[GraphEdge], frontier: list[int], params: GraphConfig) -> list[tuple[int, list[_Scored]]]:
    """Per frontier unit, at most `max_fanout` of its edges as (weight * mu, mu, edge), strongest first."""
    by_src: dict[int, list[_Scored]] = {label: [] for label in frontier}
    for edge in edges:
        # Update links order what recall returns (recall/updates.py); activation does not spread along them.
        if (edge.cross_document and edge.type is LinkType.TEMPORAL) or edge.type is LinkType.UPDATE:
            continue
        group = by_src.get(edge.src)
        if group is not None:
            m = mu(edge, params.mu)
            group.append((edge.weight * m, m, edge))
    out = []
    for label in frontier:
        group = by_src[label]
        group.sort(key=lambda scored: (-scored[0], scored[2].dst))
        out.append((label, group[: params.max_fanout]))
    return out


def specificity(df: int, n: int) -> float:
    """`log(1 + n / df) / log(1 + n)`: 1 for an entity of one unit, near 0 for one in every unit."""
    n = max(n, df, 2)
    return math.log1p(n / max(df, 1)) / math.log1p(n)


class GraphReads:
    """What the graph channel reads of a bank, cached between recalls while the bank's change log stands still (any
    write empties the bank's part): unit counts per entity, and the links of units read lately. Many recalls reach
    the same well-linked units, and reading a unit's links is most of the channel's time. Entity links are
    cached scaled by specificity, which is fixed while the bank is."""

    _MAX_COUNTS = 200_000  # entities per bank
    _MAX_EDGES = 100_000  # links held, over all banks

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._seq: dict[str, int] = {}
        self._counts: dict[str, dict[str, int]] = {}
        self._links: OrderedDict[tuple[str, int], tuple[_Row, ...]] = OrderedDict()  # least recently read first
        self._edges = 0

    def _current(self, bank_id: str) -> int:
        """The bank's change sequence, its cached reads dropped when it moved (call with the lock held)."""
        seq = self.store.last_change(bank_id)
        if self._seq.get(bank_id) != seq:
            self._seq[bank_id], self._counts[bank_id] = seq, {}
            for key in [key for key in self._links if key[0] == bank_id]:
                self._edges -= len(self._links.pop(key))
        elif len(self._counts[bank_id]) > self._MAX_COUNTS:
            self._counts[bank_id] = {}
        return seq

    def _counts_at(self, bank_id: str, seq: int, entity_ids: set[str]) -> dict[str, int]:
        """Unit counts of the entities, cached while the bank's change sequence is `seq`."""
        with self._lock:
            known = self._counts[bank_id] if self._seq.get(bank_id) == seq else {}
            missing = [e for e in entity_ids if e not in known]
        fetched = self.store.entity_unit_counts(bank_id, missing) if missing else {}
        with self._lock:
            if self._seq.get(bank_id) == seq:
                self._counts[bank_id].update(fetched)
        return {e: fetched.get(e, known.get(e, 0)) for e in entity_ids}

    def _scaled(self, bank_id: str, seq: int, edges: list[GraphEdge], bank_size: int) -> list[GraphEdge]:
        """Edges read from the store, their entity links' weights scaled by the specificity of the rarest entity the
        two ends share. No shared entity left (one was forgotten): the link no longer stands for anything."""
        shared = {x for e in edges if e.type is LinkType.ENTITY for x in e.shared_entities}
        if shared:
            spec = {x: specificity(n, bank_size) for x, n in self._counts_at(bank_id, seq, shared).items()}
            for e in edges:
                if e.type is LinkType.ENTITY:
                    e.weight *= max((spec[x] for x in e.shared_entities), default=0.0)
        return edges

    def neighbours(self, bank_id: str, labels: list[int], unit_filter: UnitFilter, bank_size: int) -> list[GraphEdge]:
        """The links of the units, seen from them, to units that pass the filter, scaled, grouped by unit. A filtered
        read goes to the store: the filter applies to the far ends."""
        found: dict[int, tuple[_Row, ...]] = {}
        with self._lock:
            seq = self._current(bank_id)
            for label in [] if unit_filter.active else labels:
                if (rows := self._links.get((bank_id, label))) is not None:
                    self._links.move_to_end((bank_id, label))
                    found[label] = rows
        if unit_filter.active:
            return self._scaled(bank_id, seq, self.store.neighbour_links(bank_id, labels, unit_filter), bank_size)
        missing = [label for label in dict.fromkeys(labels) if label not in found]
        if missing:
            fetched: dict[int, list[_Row]] = {label: [] for label in missing}
            for e in self._scaled(bank_id, seq, self.store.neighbour_links(bank_id, missing, unit_filter), bank_size):
                fetched[e.src].append((e.dst, e.dst_id, e.type.value, e.subtype, e.weight, e.shared_entities,
                                       e.cross_document))
            fresh = {label: tuple(rows) for label, rows in fetched.items()}
            found.update(fresh)
            with self._lock:
                if self._seq.get(bank_id) == seq:  # the bank size and entity counts too are those of `seq`
                    for label, rows in fresh.items():
                        if (bank_id, label) not in self._links:
                            self._links[(bank_id, label)] = rows
                            self._edges += len(rows)
                    while self._edges > self._MAX_EDGES:
                        self._edges -= len(self._links.popitem(last=False)[1])
        # In the order of `labels` whether read or cached, each unit's links in the store's order.
        return [GraphEdge(label, r[0], r[1], LINK_TYPES[r[2]], r[3], r[4], r[5], r[6])
                for label in dict.fromkeys(labels) for r in found[label]]


def store_neighbours(reads: GraphReads, bank_id: str, unit_filter: UnitFilter, bank_size: int) -> Neighbours:
    """Neighbours read from the store through the cache, entity links scaled by entity specificity."""
    return lambda labels: reads.neighbours(bank_id, labels, unit_filter, bank_size)
