"""The Postgres lexical bench times the search and counts the postings it read: whole, and probed."""

from __future__ import annotations

import psycopg

from bench.postgres_lexical import timed
from bench.recall_latency import BANK
from hindsight.store import postgres_lexical as lx
from hindsight.store.postgres_lexical import LexicalDoc
from hindsight.store.postgres_postings import Reads
from tests.postgres_server import fresh_database, postgres_dsn


def test_the_bench_counts_the_postings_the_search_read() -> None:
    docs = [LexicalDoc(i, f"Maya cooked {'pasta' if i % 3 else 'risotto'} on day {i}.", "") for i in range(1, 31)]
    with psycopg.connect(fresh_database(postgres_dsn()), autocommit=True) as conn, conn.cursor() as cur:
        lx.create_tables(cur)
        lx.index_units(cur, BANK, docs)
        lx.index_units(cur, "other bank", [LexicalDoc(100, "risotto risotto", "")])
        run = timed(cur, "What risotto did Maya cook?", 5)
        # risotto (10 rows) is read whole; then maya and cook (30 rows each, in every row: the IDF floor) cannot lift
        # a row outside the 5 best above them, so only their chunks holding the candidates are read, here all.
        # The other bank's posting is not read.
        assert run.reads == Reads(whole=10, probed=60) and run.postings == 70
        assert run.ms >= 0
