"""Semantic channel: nearest units to the query embedding in the bank's HNSW index."""

from __future__ import annotations

import numpy as np

from hindsight.recall.ranked import OVERSAMPLE, RankedItem, resolve_hits
from hindsight.store.base import MemoryStore, UnitFilter
from hindsight.store.search import BankSearch


def semantic_search(
    store: MemoryStore,
    indexes: BankSearch,
    vector: np.ndarray,
    pool: int,
    unit_filter: UnitFilter,
) -> list[RankedItem]:
    """Up to `pool` units by cosine similarity, best first, all passing the filter."""
    bank_id = indexes.bank_id
    k = pool * OVERSAMPLE if unit_filter.active else pool
    hits = indexes.search_vectors(vector, k)
    items = resolve_hits(store, bank_id, hits, unit_filter)
    if unit_filter.active and len(items) < pool and len(hits) >= k:
        # The filter rejected most near neighbours: search again among the allowed labels only.
        allowed = store.filtered_labels(bank_id, unit_filter)
        if allowed:
            hits = indexes.search_vectors(vector, min(pool, len(allowed)), allowed)
            items = resolve_hits(store, bank_id, hits, unit_filter)
    return items[:pool]
