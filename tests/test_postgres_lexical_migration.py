"""Schema version 7 turns a database's lexical postings, a row each (version 6), into chunks: the same chunks, bounds
and rankings as indexing the same rows afresh."""

from __future__ import annotations

import time
from collections import Counter

import psycopg

from hindsight.store import postgres_lexical as lx
from hindsight.store.postgres_lexical import LexicalDoc
from hindsight.store.postgres_schema import MIGRATIONS, migrate
from tests.fts5_reference import Fts5Reference, RefDoc, assert_same_ranking
from tests.postgres_lexical_state import assert_consistent
from tests.postgres_server import fresh_database, postgres_dsn

# Labels whose bytes need every place of a 64-bit integer, counts past a byte, a row longer than 65,535 tokens
# (its count is kept at 65,535, as the SQLite index keeps it), and a term in more rows than a chunk holds.
DOCS = {
    "a": [LexicalDoc(label, f"plum {'fig ' * (label % 5)}day {label % 7}", "plum tart" if label % 3 else "")
          for label in range(1, 601)]
    + [LexicalDoc(2**31 + 7, "fig " * 300 + "pear", "fig"), LexicalDoc(2**40 + 255, "pear " * 70_000, ""),
       LexicalDoc(2**62 + 12_345, "pear plum", "quince")],
    "b": [LexicalDoc(5_000 + label, f"quince {'pear ' * label}", "") for label in range(1, 40)],
}
QUERIES = ["plum", "fig pear", "day 3 plum", "quince tart", "pear pear fig", "fig_day", "plum 2"]


def index_v6(cur: psycopg.Cursor[tuple[object, ...]], bank: str, docs: list[LexicalDoc]) -> None:
    """Index rows as schema version 6 did: a lex_postings row per (term, row), counts as they are."""
    split = {d.label: (lx._words(d.text), lx._words(d.lead)) for d in docs}
    stem = lx._stems(cur, sorted({w for text, lead in split.values() for w in (*text, *lead)}))
    counts = {label: (Counter(stem[w] for w in text), Counter(stem[w] for w in lead))
              for label, (text, lead) in split.items()}
    df = Counter(term for text, lead in counts.values() for term in text.keys() | lead.keys())
    cur.execute("INSERT INTO lex_terms (bank_id, term, df) SELECT %s, t, n FROM unnest(%s::text[], %s::bigint[])"
                " AS u(t, n) RETURNING term, term_id", (bank, list(df), list(df.values())))
    ids = dict(cur.fetchall())
    for label, (text, lead) in counts.items():
        length = sum(len(ws) for ws in split[label])
        terms = sorted(text.keys() | lead.keys())
        cur.executemany("INSERT INTO lex_postings VALUES (%s, %s, %s, %s, %s)",
                        [(ids[t], label, text[t], lead[t], length) for t in terms])
        cur.execute("INSERT INTO lex_docs VALUES (%s, %s, %s, %s, %s)",
                    (bank, label, len(split[label][0]), len(split[label][1]), [ids[t] for t in terms]))
    text_tokens, lead_tokens = (sum(len(ws[column]) for ws in split.values()) for column in (0, 1))
    cur.execute("INSERT INTO lex_banks VALUES (%s, %s, %s, %s)", (bank, len(docs), text_tokens, lead_tokens))


def stored(cur: psycopg.Cursor[tuple[object, ...]]) -> dict[str, object]:
    """The lexical tables by bank and term text (term ids differ between databases)."""
    cur.execute("SELECT t.bank_id, t.term, c.first, c.data FROM lex_chunks c JOIN lex_terms t USING (term_id)"
                " ORDER BY 1, 2, 3", binary=True)
    chunks = [(bank, term, first, bytes(data)) for bank, term, first, data in cur.fetchall()]
    cur.execute("SELECT bank_id, term, df, max_text, max_lead, min_len, last, open_first, open_chunks FROM lex_terms"
                " ORDER BY 1, 2")
    terms = cur.fetchall()
    cur.execute("SELECT * FROM lex_banks ORDER BY 1")
    return {"chunks": chunks, "terms": terms, "banks": cur.fetchall()}


def test_version_7_turns_postings_into_the_chunks_indexing_makes() -> None:
    with psycopg.connect(fresh_database(postgres_dsn())) as old:
        old.execute("CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
        for version, sql in enumerate(MIGRATIONS[:6], 1):
            old.execute(sql)
            old.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (version, time.time()))
        with old.cursor() as cur:
            for bank, docs in DOCS.items():
                index_v6(cur, bank, docs)
        old.commit()
        old.autocommit = True
        assert migrate(old) == 6
        with psycopg.connect(fresh_database(postgres_dsn()), autocommit=True) as new, new.cursor() as fresh, \
                old.cursor() as cur:
            lx.create_tables(fresh)
            for bank, docs in DOCS.items():
                lx.index_units(fresh, bank, docs)
            assert stored(cur) == stored(fresh)
            cur.execute("SELECT count(*) FROM lex_chunks")
            assert cur.fetchone()[0] > len({t for _, t, *_ in stored(cur)["terms"]})  # some term has several chunks
            for bank, docs in DOCS.items():
                assert_consistent(cur, bank)
                fts = Fts5Reference([RefDoc(d.label, d.text, d.lead) for d in docs])
                for query in QUERIES:
                    hits = lx.search(cur, bank, query, 10, 0.5)
                    assert hits == lx.search(fresh, bank, query, 10, 0.5)
                    if "_" not in query and "pear" not in query:  # FTS5: phrases, and counts past 65,535
                        assert_same_ranking(fts.search(query, 10, 0.5), hits)
            # The migrated index takes writes as a fresh one does.
            more = [LexicalDoc(2**62 + 20_000 + i, "plum fig", "") for i in range(300)]
            lx.index_units(cur, "a", more)
            lx.remove_units(cur, "a", [1, 2, 2**31 + 7])
            assert_consistent(cur, "a")
