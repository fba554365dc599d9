"""FTS5's bm25() over postings read on demand, and an exact top-k (MaxScore) that reads little of a common term.

Scores: k1=1.2, b=0.75, IDF floored at 1e-6, a row's term frequency summed over its columns with weights 1.0 for
`text` and `lead_weight` for `lead`, and a row's length being its tokens in both columns. A query is its terms OR-ed;
each term (a `Phrase`) adds its own score, so a term repeated in the query counts each time.

MaxScore: query terms are taken by their upper bound, highest first, and each one's postings are scored in full
until the k-th best partial score exceeds what the remaining terms could add to a row; from then on only the
candidates already found are looked up in the remaining terms (`Reader.some`). The top k is the same as scoring
every row. The postings (store.postings.POSTING arrays in label order) come from whatever holds them: the SQLite
index's chunks and memory (store/bm25.py), the Postgres index's chunk rows (store/postgres_lexical.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hindsight.store.search import IndexHit

K1 = 1.2
B = 0.75
_IDF_FLOOR = 1e-6
_SLACK = 1 + 1e-9


class Reader(Protocol):
    """One term's postings, read when asked."""

    def all(self) -> np.ndarray:
        """Every posting, in label order."""
        ...

    def some(self, labels: np.ndarray) -> np.ndarray:
        """At least the postings of `labels` (sorted), in label order."""
        ...


@dataclass(frozen=True)
class Known:
    """Postings computed up front (the rows matching a term of several words)."""

    rows: np.ndarray

    def all(self) -> np.ndarray:
        return self.rows

    def some(self, labels: np.ndarray) -> np.ndarray:
        return self.rows


@dataclass(frozen=True)
class Bounds:
    """Bounds over a term's postings: its largest counts in each column and its shortest row."""

    max_text: int
    max_lead: int
    min_len: int

    @staticmethod
    def of(rows: np.ndarray) -> Bounds:
        return Bounds(int(rows["text"].max()), int(rows["lead"].max()), int(rows["length"].min()))

    def union(self, other: Bounds) -> Bounds:
        return Bounds(max(self.max_text, other.max_text), max(self.max_lead, other.max_lead),
                      min(self.min_len, other.min_len))


@dataclass(frozen=True)
class Source:
    """A word's postings as a backend holds them: how to read them, how many rows hold it, and their bounds."""

    reader: Reader
    df: int
    bounds: Bounds


@dataclass(frozen=True)
class Phrase:
    """One query term as matched: its IDF, an upper bound on what it adds to any row's score, and its postings."""

    idf: float
    bound: float
    reader: Reader


def weight(f: np.ndarray, length: np.ndarray, avgdl: float) -> np.ndarray:
    """BM25's saturating term-frequency part."""
    return f * (K1 + 1) / (f + K1 * (1 - B + B * length / avgdl))


def idf(df: int, docs: int) -> float:
    value = math.log((docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else _IDF_FLOOR


def scores(rows: np.ndarray, term_idf: float, avgdl: float, lead_weight: float) -> np.ndarray:
    f = rows["text"].astype(np.float64) + lead_weight * rows["lead"].astype(np.float64)
    return term_idf * weight(f, rows["length"].astype(np.float64), avgdl)


def phrase(sources: Sequence[Source], docs: int, avgdl: float, lead_weight: float) -> Phrase | None:
    """A query term's match from the sources of its distinct words (each held by some row), or None when no row
    holds them all. Several words ("a_b") match rows holding all of them, as often as the rarest (FTS5 matches
    them as a phrase), and its document frequency is the number of such rows."""
    if len(sources) == 1:
        source = sources[0]
        term_idf = idf(source.df, docs)
        f = np.array([source.bounds.max_text + lead_weight * source.bounds.max_lead])
        return Phrase(term_idf, term_idf * float(weight(f, np.array([source.bounds.min_len]), avgdl)[0]),
                      source.reader)
    parts = [s.reader.all() for s in sources]
    common = parts[0]
    for other in parts[1:]:
        common = common[np.isin(common["label"], other["label"])]
    if not len(common):
        return None
    rows = common.copy()
    for other in parts[1:]:
        mine = other[np.isin(other["label"], rows["label"])]
        rows["text"] = np.minimum(rows["text"], mine["text"])
        rows["lead"] = np.minimum(rows["lead"], mine["lead"])
    rows = rows[(rows["text"] > 0) | (rows["lead"] > 0)]
    term_idf = idf(len(rows), docs)
    matched = scores(rows, term_idf, avgdl, lead_weight)
    return Phrase(term_idf, float(matched.max()) if len(matched) else 0.0, Known(rows))


def top_k(phrases: Sequence[Phrase], k: int, avgdl: float, lead_weight: float) -> list[IndexHit]:
    """The k best rows by the sum of the phrases' scores, best first, ties by label."""
    phrases = sorted(phrases, key=lambda p: -p.bound)
    # rest[i]: the most phrases i.. add to a row, with a hair of slack for bounds and sums rounded otherwise.
    rest = np.cumsum([p.bound for p in reversed(phrases)])[::-1] * _SLACK
    labels, totals = np.zeros(0, dtype=np.int64), np.zeros(0)
    probing = False
    for i, matched in enumerate(phrases):
        if len(labels) >= k:
            theta = float(np.partition(totals, len(totals) - k)[len(totals) - k])  # the k-th best so far
            if rest[i] < theta:  # a row not yet seen can no longer reach the top k
                probing = True
                keep = totals + rest[i] >= theta
                labels, totals = labels[keep], totals[keep]
        if probing:
            rows = matched.reader.some(labels)
            at = np.minimum(np.searchsorted(rows["label"], labels), max(len(rows) - 1, 0))
            hit = rows["label"][at] == labels if len(rows) else np.zeros(len(labels), dtype=bool)
            add = np.zeros(len(labels))
            add[hit] = scores(rows[at[hit]], matched.idf, avgdl, lead_weight)
            totals = totals + add
        else:
            rows = matched.reader.all()
            labels, totals = _merge(labels, totals, rows["label"], scores(rows, matched.idf, avgdl, lead_weight))
    order = np.lexsort((labels, -totals))[:k]
    return [IndexHit(int(labels[j]), float(totals[j])) for j in order]


def _merge(labels: np.ndarray, totals: np.ndarray, more: np.ndarray, more_scores: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted label sets with their scores, summed where they meet; sorted by label."""
    if not len(labels):
        return more, more_scores
    at = np.minimum(np.searchsorted(labels, more), len(labels) - 1)
    seen = labels[at] == more
    totals = totals.copy()
    totals[at[seen]] += more_scores[seen]
    labels = np.concatenate([labels, more[~seen]])
    totals = np.concatenate([totals, more_scores[~seen]])
    order = np.argsort(labels, kind="stable")
    return labels[order], totals[order]
