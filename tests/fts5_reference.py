"""SQLite's own FTS5 and bm25(), the reference the lexical indexes are compared with in tests."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

from hindsight.store.search import IndexHit
from hindsight.store.tokenize import query_terms

# FTS5 and our indexes compute the same doubles in a different order.
SCORE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RefDoc:
    label: int
    text: str
    lead: str = ""


class Fts5Reference:
    """An in-memory FTS5 table with the tokenizer the SQLite index used, searched as it searched."""

    def __init__(self, docs: list[RefDoc]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text, lead, "
                          "tokenize='porter unicode61 remove_diacritics 2')")
        self.add(docs)

    def add(self, docs: list[RefDoc]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO fts(rowid, text, lead) VALUES(?, ?, ?)",
                              [(d.label, d.text, d.lead) for d in docs])

    def remove(self, labels: list[int]) -> None:
        self.conn.executemany("DELETE FROM fts WHERE rowid=?", [(x,) for x in labels])

    def search(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        terms = ['"' + t.replace('"', '""') + '"' for t in query_terms(query)]
        if not terms or k <= 0:
            return []
        rows = self.conn.execute(
            "SELECT rowid, bm25(fts, 1.0, ?) AS rank FROM fts WHERE fts MATCH ? ORDER BY rank, rowid LIMIT ?",
            (float(lead_weight), " OR ".join(terms), k)).fetchall()
        return [IndexHit(int(r[0]), float(-r[1])) for r in rows]


def assert_same_ranking(expected: list[IndexHit], got: list[IndexHit]) -> None:
    """Same scores in the same order; labels may differ only among tied scores."""
    assert len(got) == len(expected), (expected, got)
    for e, g in zip(expected, got, strict=True):
        assert math.isclose(e.score, g.score, rel_tol=SCORE_TOLERANCE, abs_tol=1e-12), (expected, got)
    # Ties at the cut (the k-th score) may be filled by different rows; above it, each score's rows are the same.
    cut = round(expected[-1].score, 6) if expected else None
    for score in {round(h.score, 6) for h in expected} - {cut}:
        assert {h.label for h in expected if round(h.score, 6) == score} == {
            h.label for h in got if round(h.score, 6) == score}, (expected, got)
