"""The Postgres store's lexical search on a big bank: its time per query against the postings it scores.

    python bench/postgres_lexical.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir DIR [--queries 300] [--json OUT]

DIR is a bank directory whose Postgres copy `bench/recall_latency.py --store postgres` made (the server under
DIR/postgres, or HINDSIGHT_STORE_DSN). The dev questions run against the bank's lexical search with the lexical
channel's pool and lead weight, each query twice:
1. cold, after the OS page cache is dropped (root only), under EXPLAIN (ANALYZE, BUFFERS, TIMING OFF): the
   database's time, the blocks it found in shared buffers and read from outside them, and the postings it read
   (the rows of its scans of lex_postings: every posting of every query term, each scored);
2. warm, timed from the client: `postgres_lexical.search` as a recall calls it.
Reported: the percentiles of both, the postings per query, the warm time per posting, and how closely the warm time
follows the postings (Pearson's r).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from tqdm import tqdm

from bench import corpus_parser, machine, percentiles
from bench.recall_latency import BANK, drop_page_cache, load_corpus
from eval.postgres import postgres_dsn
from hindsight.config import RecallConfig
from hindsight.recall.lexical import LEAD_WEIGHT
from hindsight.store import postgres_lexical


def explained(cur: Any, query: str, k: int) -> dict[str, Any]:
    """The search statement under EXPLAIN ANALYZE: its plan as JSON."""
    statement = postgres_lexical.search_statement(BANK, query, k, LEAD_WEIGHT)
    assert statement is not None, f"no searchable word in {query!r}"
    sql, params = statement
    cur.execute(f"EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) {sql}", params)
    return dict(cur.fetchone()[0][0])


def postings(plan: dict[str, Any]) -> int:
    """The postings the plan read: the rows of its scans of lex_postings, over all their loops (EXPLAIN reports
    rows per loop, rounded)."""
    own = round(float(plan.get("Actual Rows", 0)) * int(plan.get("Actual Loops", 1))) \
        if plan.get("Relation Name") == "lex_postings" else 0
    return own + sum(postings(child) for child in plan.get("Plans", []))


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    import psycopg

    k = RecallConfig().fusion.pool
    _, queries = load_corpus(args.locomo, args.longmemeval)
    texts = [q.text for q in queries[: args.queries]]
    dsn = postgres_dsn(args.dir / "postgres")
    dropped = drop_page_cache()
    rows: list[dict[str, Any]] = []
    with psycopg.connect(dsn, autocommit=True) as conn, conn.cursor() as cur:
        for text in tqdm(texts, desc="cold (EXPLAIN)", unit="query"):
            plan = explained(cur, text, k)
            top = plan["Plan"]
            rows.append({"postings": postings(top), "cold_ms": round(float(plan["Execution Time"]), 2),
                         "cold_blocks_hit": int(top.get("Shared Hit Blocks", 0)),
                         "cold_blocks_read": int(top.get("Shared Read Blocks", 0))})
        for row, text in zip(tqdm(rows, desc="warm", unit="query"), texts, strict=True):
            t0 = time.perf_counter()
            postgres_lexical.search(cur, BANK, text, k, LEAD_WEIGHT)
            row["warm_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    scored = [r["postings"] for r in rows]
    result = {
        "machine": machine(), "command": " ".join(sys.argv), "k": k, "lead_weight": LEAD_WEIGHT,
        "page_cache_dropped": dropped, "queries": len(rows),
        "postings_per_query": {"p50": statistics.median(scored), "max": max(scored)},
        "cold": percentiles([r["cold_ms"] for r in rows]), "warm": percentiles([r["warm_ms"] for r in rows]),
        "cold_blocks_read_p50": statistics.median(r["cold_blocks_read"] for r in rows),
        "warm_us_per_posting": round(1000 * sum(r["warm_ms"] for r in rows) / max(sum(scored), 1), 3),
        "warm_ms_vs_postings_r": round(float(np.corrcoef(scored, [r["warm_ms"] for r in rows])[0, 1]), 3),
        "per_query": rows,
    }
    print(json.dumps({key: value for key, value in result.items() if key != "per_query"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
