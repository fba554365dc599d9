"""The derived indexes on their own: HNSW snapshots and FTS5, including corruption and hostile queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hindsight.config import HnswConfig
from hindsight.store.base import IndexedUnit
from hindsight.store.bm25 import Bm25Index
from hindsight.store.hnsw import HnswIndex
from hindsight.store.tokenize import query_terms

DIM = 16


def units(n: int, start: int = 1, seed: int = 0) -> list[IndexedUnit]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [IndexedUnit(start + i, f"u{start + i}", vecs[i], f"unit number {start + i} about topic{i % 7}")
            for i in range(n)]


def test_hnsw_add_search_remove_and_grow(tmp_path: Path) -> None:
    idx = HnswIndex(tmp_path, DIM, HnswConfig())
    data = units(3000)  # more than the initial capacity
    idx.add_units(data, watermark=3000)
    assert len(idx) == 3000
    hit = idx.search(data[42].embedding, 3)[0]
    assert hit.label == 43 and hit.score == pytest.approx(1.0, abs=1e-4)
    idx.remove([43], watermark=3001)
    assert 43 not in [h.label for h in idx.search(data[42].embedding, 10)]
    assert idx.watermark == 3001 and len(idx) == 2999


def test_hnsw_snapshot_round_trip_and_corruption(tmp_path: Path) -> None:
    idx = HnswIndex(tmp_path, DIM, HnswConfig())
    data = units(200)
    idx.add_units(data, 200)
    idx.remove([5], 201)
    idx.save()
    again = HnswIndex(tmp_path, DIM, HnswConfig())
    assert again.load() and again.watermark == 201 and len(again) == 199
    assert [h.label for h in again.search(data[10].embedding, 1)] == [11]
    blob = bytearray(idx.path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    idx.path.write_bytes(bytes(blob))
    assert not HnswIndex(tmp_path, DIM, HnswConfig()).load()
    idx.meta_path.write_text("{not json")
    assert not HnswIndex(tmp_path, DIM, HnswConfig()).load()
    assert not HnswIndex(tmp_path / "absent", DIM, HnswConfig()).load()


def test_hnsw_search_on_empty_and_tiny_index(tmp_path: Path) -> None:
    idx = HnswIndex(tmp_path, DIM, HnswConfig())
    assert idx.search(units(1)[0].embedding, 5) == []
    idx.add_units(units(2), 2)
    assert len(idx.search(units(1)[0].embedding, 5)) == 2


def test_lexical_lead_words_find_a_unit_at_their_weight(tmp_path: Path) -> None:
    idx = Bm25Index(tmp_path)
    idx.load()
    idx.add_units([IndexedUnit(1, "q", np.zeros(1), "Bob: Which book is your favourite guide?"),
                   IndexedUnit(2, "a", np.zeros(1), "Ann: Becoming Nicole, by far.",
                               lead="Bob: Which book is your favourite guide?"),
                   IndexedUnit(3, "x", np.zeros(1), "Ann: I like cake.")], 3)
    # The answer is found by the question's words, below the unit that says them itself.
    assert [h.label for h in idx.search("favourite book", 5)] == [1, 2]
    full, half, none = (idx.search("favourite book", 5, w) for w in (1.0, 0.5, 0.0))
    assert full[1].score > half[1].score > 0
    assert none[1].label == 2 and none[1].score == 0  # weight 0: a lead-only match scores nothing
    assert idx.search("nicole", 5, 0.0)[0].label == 2  # the unit's own words always are


def test_query_terms() -> None:
    assert query_terms("What did Maya do with the Beagle?") == ["maya", "beagle"]
    assert query_terms("") == []
    assert query_terms("I've been wondering: didn't Don say he'll come? We're sure he won.") == [
        "wondering", "don", "say", "come", "sure", "won"]  # contraction remnants go, words that look like them stay
