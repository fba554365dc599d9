"""The derived indexes on their own: HNSW snapshots and FTS5, including corruption and hostile queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hindsight.config import HnswConfig
from hindsight.store.base import IndexedUnit
from hindsight.store.fts import Fts5Index, query_terms
from hindsight.store.hnsw import HnswIndex

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


def test_fts_search_ranks_and_survives_reopen(tmp_path: Path) -> None:
    idx = Fts5Index(tmp_path)
    assert idx.load() is False  # a new file
    idx.add_units([IndexedUnit(1, "a", np.zeros(1), "Maya adopted a beagle named Pepper"),
                   IndexedUnit(2, "b", np.zeros(1), "Bob lives in Boston"),
                   IndexedUnit(3, "c", np.zeros(1), "Pepper loves running with Maya")], 3)
    assert idx.search("beagle Pepper", 5)[0].label == 1
    idx.remove([1], 4)
    idx.close()
    again = Fts5Index(tmp_path)
    assert again.load() and again.watermark == 4
    assert [h.label for h in again.search("beagle Pepper", 5)] == [3]


@pytest.mark.parametrize(
    "query",
    ['"', 'NEAR(a b)', "*", "OR", "-", "a AND", "col:value", "'; DROP TABLE fts; --", "^start", "(((",
     "\x00", "\ud800", "", "   ", "the and of"],
)
def test_fts_hostile_queries_never_raise(tmp_path: Path, query: str) -> None:
    idx = Fts5Index(tmp_path)
    idx.load()
    idx.add_units([IndexedUnit(1, "a", np.zeros(1), "NEAR OR AND start value table")], 1)
    hits = idx.search(query, 5)
    assert all(h.label == 1 for h in hits)


def test_fts_corrupt_file_is_reported_for_rebuild(tmp_path: Path) -> None:
    (tmp_path / "lexical.db").write_bytes(b"this is not a database" * 100)
    idx = Fts5Index(tmp_path)
    assert idx.load() is False
    idx.reset()
    idx.add_units([IndexedUnit(1, "a", np.zeros(1), "fresh start")], 1)
    assert idx.search("fresh", 1)[0].label == 1


def test_fts_lead_words_find_a_unit_at_their_weight(tmp_path: Path) -> None:
    idx = Fts5Index(tmp_path)
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


def test_fts_file_of_an_older_layout_is_reported_for_rebuild(tmp_path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(tmp_path / "lexical.db")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text)")
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    conn.execute("INSERT INTO meta VALUES('watermark', 7)")
    conn.commit()
    conn.close()
    idx = Fts5Index(tmp_path)
    assert idx.load() is False
    idx.reset()
    idx.add_units([IndexedUnit(1, "a", np.zeros(1), "fresh start", lead="a lead")], 1)
    assert idx.search("lead", 1)[0].label == 1


def test_query_terms() -> None:
    assert query_terms("What did Maya do with the Beagle?") == ["maya", "beagle"]
    assert query_terms("") == []
    assert query_terms("I've been wondering: didn't Don say he'll come? We're sure he won.") == [
        "wondering", "don", "say", "come", "sure", "won"]  # contraction remnants go, words that look like them stay
