"""Lexical channel: BM25 over the units' indexed text; query text is only ever split into words."""

from __future__ import annotations

from hindsight.recall.ranked import OVERSAMPLE, RankedItem, resolve_hits
from hindsight.store.base import MemoryStore, UnitFilter
from hindsight.store.search import BankSearch

# BM25 (as FTS5 computes it) floors the IDF of a term found in most units at 1e-6, so a unit that matches only such
# terms scores about that much: it shares nothing distinctive with the query and is left out.
_MIN_SCORE = 1e-4
# When the filter rejects most hits, one wider search follows: a larger limit prunes less, so it runs only then.
_WIDEN = 16
# A unit's lead quotes another speaker: its words help find the unit, but less than the unit's own. Not tuned.
LEAD_WEIGHT = 0.5


def lexical_search(
    store: MemoryStore, indexes: BankSearch, query: str, pool: int, unit_filter: UnitFilter
) -> list[RankedItem]:
    """Up to `pool` units by BM25 score, best first, all passing the filter."""

    def search(k: int) -> tuple[list[RankedItem], bool]:
        hits = [h for h in indexes.search_lexical(query, k, LEAD_WEIGHT) if h.score >= _MIN_SCORE]
        return resolve_hits(store, indexes.bank_id, hits, unit_filter), len(hits) >= k

    k = pool * OVERSAMPLE if unit_filter.active else pool
    items, more = search(k)
    if unit_filter.active and len(items) < pool and more:
        items, _ = search(k * _WIDEN)
    return items[:pool]
