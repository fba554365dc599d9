"""The Postgres lexical index against a real server: FTS5's ranking, exact statistics, bank isolation, hostile text."""

from __future__ import annotations

import math
from collections.abc import Iterator

import psycopg
import pytest

from hindsight.store import postgres_lexical as lx
from hindsight.store.postgres_lexical import LexicalDoc
from hindsight.store.search import IndexHit
from tests.fts5_reference import SCORE_TOLERANCE, Fts5Reference, RefDoc, assert_same_ranking
from tests.postgres_lexical_state import assert_consistent, postings_of, table_state
from tests.postgres_server import fresh_database, postgres_dsn

CORPUS = [
    LexicalDoc(1, "Ines started learning the cello this winter with a retired teacher.", ""),
    LexicalDoc(2, "Marco has been training for a half marathon; his Sundays are long runs.", ""),
    LexicalDoc(3, "The cello teacher says Ines can play in the spring recital.", "Ines started learning the cello"),
    LexicalDoc(4, "Marco finished his first half marathon yesterday, running along the river.", ""),
    LexicalDoc(5, "Kilometer fifteen was hard, but the crowd kept him going.", "Marco finished his half marathon"),
    LexicalDoc(6, "We moved to Lisbon for my new job at the café near the river.", ""),
    LexicalDoc(7, "Packing list: layers, a rain shell, broken-in boots and a first aid kit for the Alps.", ""),
    LexicalDoc(8, "I don't like running in the rain; I'd rather swim.", ""),
    LexicalDoc(9, "Teachers teach; teaching is what a teacher does. Runners run.", ""),
    LexicalDoc(10, "", "a lead only: the recital in spring"),
    LexicalDoc(11, "Zürich naïve façade Ångström résumé CAFÉ", ""),
    LexicalDoc(12, "Rivers, river, RIVER and the riverside.", ""),
]
QUERIES = [
    "cello teacher", "half marathon running", "What did Marco run along?", "river", "Rivers", "cafe",
    "Café résumé zurich", "spring recital", "rain boots", "teaching teachers", "running runs run", "don't",
    "Lisbon job", "the cello the cello", "first aid", "kilometer 15 fifteen", "naive angstrom facade",
]


@pytest.fixture
def conn() -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(fresh_database(postgres_dsn())) as connection:
        lx.create_tables(connection.cursor())
        connection.commit()
        yield connection


def fts5_of(docs: list[LexicalDoc]) -> Fts5Reference:
    return Fts5Reference([RefDoc(d.label, d.text, d.lead) for d in docs])


@pytest.mark.parametrize("lead_weight", [1.0, 0.5, 0.0])
def test_ranking_agrees_with_fts5(conn: psycopg.Connection[tuple[object, ...]],
                                  lead_weight: float) -> None:
    fts = fts5_of(CORPUS)
    with conn.cursor() as cur:
        lx.index_units(cur, "bank", CORPUS)
        compared = 0
        for query in QUERIES:
            expected = fts.search(query, 5, lead_weight)
            assert_same_ranking(expected, lx.search(cur, "bank", query, 5, lead_weight))
            compared += bool(expected)
    assert compared >= len(QUERIES) - 1  # the queries do find things


def test_phrase_terms_approximate_fts5(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """A query term FTS5 reads as a phrase ("half_marathon") matches rows holding all its words."""
    fts = fts5_of(CORPUS)
    with conn.cursor() as cur:
        lx.index_units(cur, "bank", CORPUS)
        # Here every row with both words has them side by side, so the approximation is exact.
        assert_same_ranking(fts.search("half_marathon", 5), lx.search(cur, "bank", "half_marathon", 5))
        assert lx.search(cur, "bank", "marco_cello", 5) == fts.search("marco_cello", 5) == []


def test_banks_are_isolated(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    small = CORPUS[:4]
    other = [LexicalDoc(100 + d.label, d.text + " cello cello", d.lead) for d in CORPUS]
    with conn.cursor() as cur:
        lx.index_units(cur, "a", small)
        lx.index_units(cur, "b", other)
        fts = fts5_of(small)  # bank a's scores use bank a's statistics alone
        for query in ("cello", "half marathon", "river teacher"):
            hits = lx.search(cur, "a", query, 10)
            assert {h.label for h in hits} <= {1, 2, 3, 4}
            assert_same_ranking(fts.search(query, 10), hits)
            assert {h.label for h in lx.search(cur, "b", query, 20)} <= {100 + d.label for d in CORPUS}
            assert lx.lexical_labels(cur, "a") == {1, 2, 3, 4}
        before = {q: lx.search(cur, "b", q, 20) for q in QUERIES}
        lx.drop_bank(cur, "a")
        assert lx.lexical_labels(cur, "a") == set()
        assert lx.search(cur, "a", "cello", 10) == []
        assert lx.lexical_labels(cur, "b") == {100 + d.label for d in CORPUS}
        for table in ("lex_banks", "lex_docs", "lex_terms"):
            cur.execute(f"SELECT count(*) FROM {table} WHERE bank_id = 'a'")
            assert cur.fetchone() == (0,)
        cur.execute("SELECT count(*) FROM lex_chunks c WHERE NOT EXISTS (SELECT FROM lex_terms t"
                    " WHERE t.term_id = c.term_id)")
        assert cur.fetchone() == (0,)  # no chunk of bank a's terms is left behind
        assert {q: lx.search(cur, "b", q, 20) for q in QUERIES} == before


def test_replace_and_remove_keep_statistics_exact(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    replaced = [
        LexicalDoc(2, "Marco switched from marathons to rowing on the Tagus.", "rowing club"),
        LexicalDoc(7, "Packing list: boots, boots, boots.", ""),
    ]
    removed = [4, 9, 11]
    final = {d.label: d for d in CORPUS}
    final.update({d.label: d for d in replaced})
    for label in removed:
        del final[label]
    with conn.cursor() as cur:
        lx.index_units(cur, "bank", CORPUS[:6])
        lx.index_units(cur, "bank", [*CORPUS[6:], CORPUS[3], CORPUS[3]])  # a label again, twice in one batch
        assert_consistent(cur, "bank")
        lx.index_units(cur, "bank", replaced)
        assert_consistent(cur, "bank")
        lx.remove_units(cur, "bank", [*removed, 999])  # an unknown label is ignored
        assert_consistent(cur, "bank")
        got = table_state(cur, "bank")
        assert lx.lexical_labels(cur, "bank") == set(final)
        # Words only the removed or replaced rows held leave no row behind.
        cur.execute("SELECT term FROM lex_terms WHERE bank_id = 'bank' AND term = ANY(%s)",
                    (["angstrom", "zurich", "resum", "alp", "sunday", "teacher", "marathon"],))
        assert {r[0] for r in cur.fetchall()} == {"teacher", "marathon"}  # still in rows 1, 2, 3 and 5
        assert not {p.label for p in postings_of(cur, "bank")} & set(removed)
        searched = {q: lx.search(cur, "bank", q, 10, 0.7) for q in QUERIES}
    with psycopg.connect(fresh_database(postgres_dsn())) as scratch, scratch.cursor() as cur:
        lx.create_tables(cur)
        lx.index_units(cur, "bank", sorted(final.values(), key=lambda d: d.label))
        assert table_state(cur, "bank") == got
        for query, hits in searched.items():
            assert_same_ranking(lx.search(cur, "bank", query, 10, 0.7), hits)
    with conn.cursor() as cur:  # removing everything leaves an empty bank that still answers
        lx.remove_units(cur, "bank", list(final))
        assert_consistent(cur, "bank")
        assert table_state(cur, "bank") == {"banks": [(0, 0, 0)], "terms": [], "docs": [], "postings": []}
        assert lx.search(cur, "bank", "cello", 10) == []


HOSTILE = [
    "", "   ", "the of and to a", "'", '"', "''", '"cello"', "%", "%%", "%s", "%(bank)s", "\\", "\\x00", "\x00",
    "'); DROP TABLE lex_docs; --", "cello'; DELETE FROM lex_terms; --", "NEAR(cello teacher)", "cello AND NOT teacher",
    "cello* OR -teacher", "text:cello", "{cello teacher}", "^cello", "\ud800", "cello\ud800teacher", "\udfff\ud800",
    "$$", "$1", "E'\\''", "ts_lexize('lex_porter', 'x')", "cello" * 500, "x" * 5000, "🎻 cello", "\u0301\u0301",
    "_", "__", "a_b", "___cello___", "1", "0 0 0", "Ω", "\uffff\ufffe", "\U0010ffff",
]


def test_hostile_text_is_only_text(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    docs = [LexicalDoc(1000 + i, text, text) for i, text in enumerate(HOSTILE)]
    with conn.cursor() as cur:
        lx.index_units(cur, "bank", [*CORPUS, *docs])
        assert_consistent(cur, "bank")
        for query in HOSTILE:
            hits = lx.search(cur, "bank", query, 10)
            assert all(isinstance(h, IndexHit) for h in hits)
        assert lx.search(cur, "bank", "", 10) == []
        assert lx.search(cur, "bank", "the of and to a", 10) == []
        assert lx.search(cur, "bank", "'); DROP TABLE lex_docs; --", 10)[0].label == 1000 + HOSTILE.index(
            "'); DROP TABLE lex_docs; --")
        assert {h.label for h in lx.search(cur, "bank", "NEAR(cello teacher)", 20)} >= {1, 3}
        assert lx.search(cur, "bank", "cello", 0) == []
        assert lx.lexical_labels(cur, "bank") == {d.label for d in [*CORPUS, *docs]}
        lx.remove_units(cur, "bank", [d.label for d in docs])
        assert_consistent(cur, "bank")
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM lex_docs")
        assert cur.fetchone() == (len(CORPUS),)


def test_lead_weighs_lead_weight(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    docs = [
        LexicalDoc(1, "violin lesson today", "nothing here"),
        LexicalDoc(2, "nothing here today", "violin lesson"),
        LexicalDoc(3, "unrelated words only", "still unrelated"),
        LexicalDoc(4, "more unrelated words", ""),
        LexicalDoc(5, "filler words here", ""),
        LexicalDoc(6, "other filler words", ""),
    ]
    fts = fts5_of(docs)
    with conn.cursor() as cur:
        lx.index_units(cur, "bank", docs)
        even = lx.search(cur, "bank", "violin", 10, lead_weight=1.0)
        assert {h.label for h in even} == {1, 2}
        assert math.isclose(even[0].score, even[1].score, rel_tol=SCORE_TOLERANCE)  # same length, same frequency
        for weight in (0.25, 0.5, 2.0):
            hits = lx.search(cur, "bank", "violin", 10, lead_weight=weight)
            assert [h.label for h in hits] == ([1, 2] if weight < 1 else [2, 1])
            assert_same_ranking(fts.search("violin", 10, weight), hits)
            # The lead's occurrence counts `weight` times: idf * f (k1 + 1) / (f + k1 (1 - b + b |D| / avgdl))
            idf = math.log((6 - 2 + 0.5) / (2 + 0.5))
            avgdl = (5 + 5 + 5 + 3 + 3 + 3) / 6
            f = weight
            expected = idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * 5 / avgdl))
            assert math.isclose({h.label: h.score for h in hits}[2], expected, rel_tol=SCORE_TOLERANCE)


def test_writers_of_other_banks_do_not_wait(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Two transactions indexing the same words in two banks never wait on each other's rows."""
    with conn.cursor() as cur:
        lx.index_units(cur, "a", CORPUS)  # uncommitted: holds its rows' locks
        with psycopg.connect(conn.info.dsn) as other, other.cursor() as cur2:
            cur2.execute("SET lock_timeout = '2s'")
            lx.index_units(cur2, "b", [LexicalDoc(100 + d.label, d.text, d.lead) for d in CORPUS])
            lx.remove_units(cur2, "b", [101, 102])
            other.commit()
        lx.remove_units(cur, "a", [1])
        conn.commit()
        assert lx.lexical_labels(cur, "b") == {100 + d.label for d in CORPUS[2:]}
