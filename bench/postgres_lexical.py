"""The Postgres store's lexical search on a big bank: its time per query against the postings it reads.

    python bench/postgres_lexical.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir DIR [--queries 300] [--json OUT]

DIR is a bank directory whose Postgres copy `bench/recall_latency.py --store postgres` made (the server under
DIR/postgres, or HINDSIGHT_STORE_DSN). The dev questions run against the bank's lexical search with the lexical
channel's pool and lead weight, each query twice, timed from the client as a recall calls it:
1. cold, after the OS page cache is dropped (root only; the server's shared buffers are not);
2. warm.
`postgres_lexical.search` counts the postings it read: those of the query terms scored in full, and those of the
chunks it read to look up candidates in the other terms (MaxScore, store/maxscore.py).
Reported: the percentiles of both runs, the postings read per query, the warm time per posting read, and how closely
the warm time follows the postings read (Pearson's r).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass
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
from hindsight.store.postgres_postings import Reads


@dataclass(frozen=True)
class Timed:
    """One search: its time from the client and what it read."""

    ms: float
    reads: Reads

    @property
    def postings(self) -> int:
        return self.reads.whole + self.reads.probed


def timed(cur: Any, query: str, k: int) -> Timed:
    """The bank's lexical search for `query`, as a recall runs it."""
    reads = Reads()
    t0 = time.perf_counter()
    postgres_lexical.search(cur, BANK, query, k, LEAD_WEIGHT, reads)
    return Timed(round((time.perf_counter() - t0) * 1000, 2), reads)


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
    with psycopg.connect(dsn, autocommit=True) as conn, conn.cursor() as cur:
        cold = [timed(cur, text, k) for text in tqdm(texts, desc="cold", unit="query")]
        warm = [timed(cur, text, k) for text in tqdm(texts, desc="warm", unit="query")]
    read = [w.postings for w in warm]
    warm_ms = [w.ms for w in warm]
    result = {
        "machine": machine(), "command": " ".join(sys.argv), "k": k, "lead_weight": LEAD_WEIGHT,
        "page_cache_dropped": dropped, "queries": len(warm),
        "postings_read_per_query": {"p50": statistics.median(read), "max": max(read),
                                    "whole_p50": statistics.median(w.reads.whole for w in warm),
                                    "probed_p50": statistics.median(w.reads.probed for w in warm)},
        "cold": percentiles([c.ms for c in cold]), "warm": percentiles(warm_ms),
        "warm_us_per_posting_read": round(1000 * sum(warm_ms) / max(sum(read), 1), 3),
        "warm_ms_vs_postings_read_r": round(float(np.corrcoef(read, warm_ms)[0, 1]), 3),
        "per_query": [{"cold_ms": c.ms, "warm_ms": w.ms, "whole": w.reads.whole, "probed": w.reads.probed}
                      for c, w in zip(cold, warm, strict=True)],
    }
    print(json.dumps({key: value for key, value in result.items() if key != "per_query"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
