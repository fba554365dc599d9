"""Build the typed links of new units: entity, temporal, semantic, causal and reply, each with bounded fan-out."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hindsight.config import LinkConfig
from hindsight.models import CausalKind, Link, LinkType
from hindsight.store.base import MemoryStore
from hindsight.store.search import BankSearch


@dataclass
class CausalTarget:
    """A causal relation from a new unit to another unit of the same document."""

    unit_id: str
    kind: CausalKind
    strength: float


@dataclass
class LinkInput:
    """What link building needs of one new unit."""

    unit_id: str
    embedding: np.ndarray
    t_mid: float
    entity_ids: list[str]
    causal: list[CausalTarget]
    answers: str | None = None  # the unit whose question this one answers


class _Add(Protocol):
    """The link collector handed to the per-type builders."""

    def __call__(self, src: str, dst: str, type_: LinkType, weight: float, subtype: str | None = None) -> None: ...


class LinkBuilder:
    """Links a batch of new units to each other and to the bank, never materializing all pairs."""

    def __init__(self, store: MemoryStore, config: LinkConfig) -> None:
        self.store = store
        self.config = config

    def build(self, bank_id: str, units: list[LinkInput], indexes: BankSearch) -> list[Link]:
        links: dict[tuple[str, str, LinkType], Link] = {}

        def add(src: str, dst: str, type_: LinkType, weight: float, subtype: str | None = None) -> None:
            if src == dst:
                return
            key = (src, dst, type_)
            if key not in links or links[key].weight < weight:
                links[key] = Link(src=src, dst=dst, type=type_, weight=min(1.0, max(0.0, weight)), subtype=subtype)

        self._entity(bank_id, units, add)
        self._temporal(bank_id, units, add)
        self._semantic(bank_id, units, indexes, add)
        for u in units:
            for rel in u.causal:
                add(u.unit_id, rel.unit_id, LinkType.CAUSAL, rel.strength, rel.kind.value)
            if u.answers is not None:
                add(u.answers, u.unit_id, LinkType.REPLY, 1.0)
        return list(links.values())

    def _entity(self, bank_id: str, units: list[LinkInput], add: _Add) -> None:
        limit = self.config.entity_neighbours
        if limit == 0:
            return
        seen: dict[str, list[str]] = {}  # entity -> units of this batch that mention it, newest last
        for u in units:
            for eid in u.entity_ids:
                earlier = seen.setdefault(eid, [])
                targets = earlier[-limit:]
                if len(targets) < limit:
                    targets += self.store.entity_recent_units(bank_id, eid, limit - len(targets))
                for other in targets:
                    add(u.unit_id, other, LinkType.ENTITY, 1.0)
                earlier.append(u.unit_id)

    def _temporal(self, bank_id: str, units: list[LinkInput], add: _Add) -> None:
        k = self.config.temporal_neighbours
        if k == 0:
            return
        sigma = self.config.temporal_sigma_hours * 3600.0
        for i, u in enumerate(units):
            # Earlier units of the batch come first so that same-time ties link neighbouring turns.
            pool = [(v.unit_id, v.t_mid) for v in reversed(units[:i])]
            pool += [(n.unit_id, n.t_mid) for n in self.store.time_neighbours(bank_id, u.t_mid, k)]
            pool.sort(key=lambda p: abs(p[1] - u.t_mid))
            for other, t in pool[:k]:
                weight = math.exp(-abs(t - u.t_mid) / sigma)
                if weight >= self.config.temporal_min_weight:
                    add(u.unit_id, other, LinkType.TEMPORAL, weight)

    def _semantic(self, bank_id: str, units: list[LinkInput], indexes: BankSearch, add: _Add) -> None:
        k, theta = self.config.semantic_neighbours, self.config.semantic_threshold
        if k == 0 or not units:
            return
        matrix = np.stack([u.embedding for u in units])
        within = matrix @ matrix.T
        for i, u in enumerate(units):
            hits = [h for h in indexes.search_vectors(u.embedding, k) if h.score >= theta]
            ids = self.store.labels_to_ids(bank_id, [h.label for h in hits])
            pool = [(ids[h.label], h.score) for h in hits if h.label in ids]
            pool += [(units[j].unit_id, float(within[i, j])) for j in range(i) if within[i, j] >= theta]
            pool.sort(key=lambda p: -p[1])
            for other, sim in pool[:k]:
                add(u.unit_id, other, LinkType.SEMANTIC, sim)
