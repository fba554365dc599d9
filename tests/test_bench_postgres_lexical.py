"""The Postgres lexical bench reads the search's own plan: the postings it scanned and the blocks it touched."""

from __future__ import annotations

import psycopg

from bench.postgres_lexical import explained, postings
from bench.recall_latency import BANK
from hindsight.store import postgres_lexical as lx
from hindsight.store.postgres_lexical import LexicalDoc
from tests.postgres_server import fresh_database, postgres_dsn


def test_the_plan_counts_every_posting_of_the_query_terms() -> None:
    docs = [LexicalDoc(i, f"Maya cooked {'pasta' if i % 3 else 'risotto'} on day {i}.", "") for i in range(1, 31)]
    with psycopg.connect(fresh_database(postgres_dsn()), autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(lx.LEXICAL_SCHEMA)
        lx.index_units(cur, BANK, docs)
        lx.index_units(cur, "other bank", [LexicalDoc(100, "risotto risotto", "")])
        plan = explained(cur, "What risotto did Maya cook?", 5)
        # risotto: 10 rows, maya: 30, cook: 30; the other bank's posting is not read.
        assert postings(plan["Plan"]) == 70
        assert plan["Plan"]["Shared Hit Blocks"] + plan["Plan"].get("Shared Read Blocks", 0) > 0
