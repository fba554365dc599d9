"""The Postgres lexical index's MaxScore top-k against FTS5 scoring every row, on a skewed vocabulary written through
every way postings reach the chunks (new terms, appends to open chunks, merges, rewrites, removals)."""

from __future__ import annotations

import random

import psycopg

from hindsight.store import postgres_lexical as lx
from hindsight.store.postgres_lexical import LexicalDoc
from hindsight.store.postgres_postings import Reads
from hindsight.store.postings import CHUNK, OPEN_CHUNKS
from tests.fts5_reference import Fts5Reference, RefDoc, assert_same_ranking
from tests.postgres_lexical_state import assert_consistent
from tests.postgres_server import fresh_database, postgres_dsn

# Syllables glued into words the stemmer leaves whole; a few are in most rows.
WORDS = [a + b for a in ("kor", "vel", "tam", "dru", "zin", "pol", "mag", "fen") for b in ("ak", "ot", "ip", "um")]
COMMON = WORDS[:3]


def document(rng: random.Random, label: int) -> LexicalDoc:
    """A row: common words in most rows, the rest Zipf-like, an occasional lead."""
    text = [w for w in COMMON if rng.random() < 0.85]
    text += rng.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))], k=rng.randint(1, 25))
    rng.shuffle(text)
    lead = " ".join(rng.choices(WORDS, k=rng.randint(1, 6))) if rng.random() < 0.3 else ""
    return LexicalDoc(label, " ".join(text), lead)


def test_maxscore_ranks_as_scoring_every_row() -> None:
    rng = random.Random(7)
    docs = {label: document(rng, label) for label in range(1, 701)}
    labels = sorted(docs)
    with psycopg.connect(fresh_database(postgres_dsn()), autocommit=True) as conn, conn.cursor() as cur:
        lx.create_tables(cur)
        # One big batch (full chunks), then many small ones (small chunks appended, then merged).
        lx.index_units(cur, "bank", [docs[label] for label in labels[:300]])
        at = 300
        while at < len(labels):
            step = rng.randint(1, 6)
            lx.index_units(cur, "bank", [docs[label] for label in labels[at : at + step]])
            at += step
        cur.execute("SELECT max(open_chunks), max(df) FROM lex_terms")
        most_open, most_rows = cur.fetchone()
        assert 1 < most_open < OPEN_CHUNKS and most_rows > 2 * CHUNK
        fts = Fts5Reference([RefDoc(d.label, d.text, d.lead) for d in docs.values()])
        probed = compare(cur, fts, rng)
        # Rows indexed again (their chunks rewritten) and removed; the other bank does not change this one.
        again = rng.sample(labels, 80)
        for label in again[:40]:
            docs[label] = document(rng, label)
        lx.index_units(cur, "bank", [docs[label] for label in again])
        gone = rng.sample(labels, 120)
        for i in range(0, len(gone), 30):
            lx.remove_units(cur, "bank", gone[i : i + 30])
        for label in gone:
            del docs[label]
        lx.index_units(cur, "bank", [docs[label] for label in again if label in docs])  # rewrite in place
        lx.index_units(cur, "other", [LexicalDoc(10_000 + d.label, d.text, d.lead) for d in list(docs.values())[:50]])
        assert_consistent(cur, "bank")
        fts = Fts5Reference([RefDoc(d.label, d.text, d.lead) for d in docs.values()])
        probed += compare(cur, fts, rng)
    assert probed > 0  # MaxScore did look up candidates instead of reading whole terms


def compare(cur: psycopg.Cursor[tuple[object, ...]], fts: Fts5Reference, rng: random.Random) -> int:
    """Random queries at several k and lead weights rank as FTS5; the postings read to look up candidates."""
    probed = 0
    for _ in range(40):
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
        if rng.random() < 0.3:
            query += " " + rng.choice(COMMON)  # a common term, maybe twice
        for k in (1, 5, 20, 100):
            for lead_weight in (1.0, 0.5, 0.0, 2.0):
                reads = Reads()
                assert_same_ranking(fts.search(query, k, lead_weight), lx.search(cur, "bank", query, k, lead_weight,
                                                                                  reads))
                probed += reads.probed
    return probed
