"""The lexical index against SQLite's FTS5 on a filled bank's units: the same top k, build time, size and latency.

    python bench/lexical_index.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir DIR --units 100000 300000 [--k 100] \
        [--queries 500] [--json OUT]

DIR is a directory bench/recall_latency.py filled. For each --units N, the bank's first N units (by label; their
indexed text and lead, as the store gives them to its indexes) go into a fresh `Bm25Index` and into an FTS5 table
with the tokenizer and bm25() the SQLite store used before (tests/fts5_reference.py). Then the dev questions run
against both, the lead at the lexical channel's weight, each index timed alone. Reported per size: build seconds,
file bytes per unit, search p50/p95/p99, and how many queries got a different top k (rows tied at the k-th score
may differ; nothing else may). A run holds no state to resume: each size takes a few minutes.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from tqdm import tqdm

from bench import corpus_parser, machine, percentiles
from bench.recall_latency import BANK, load_corpus
from hindsight.recall.lexical import LEAD_WEIGHT
from hindsight.store.base import IndexedUnit
from hindsight.store.bm25 import Bm25Index
from hindsight.store.search import IndexHit
from tests.fts5_reference import SCORE_TOLERANCE, Fts5Reference, RefDoc

_BATCH = 20_000


def read_units(directory: Path, n: int) -> list[RefDoc]:
    """The first n units of the filled bank, as its indexes receive them."""
    db = sqlite3.connect(f"file:{directory / 'hindsight.db'}?mode=ro", uri=True)
    rows = db.execute("SELECT label, embed_text, coalesce(lead, '') FROM units WHERE bank_id=? ORDER BY label "
                      "LIMIT ?", (BANK, n)).fetchall()
    db.close()
    return [RefDoc(int(label), text, lead) for label, text, lead in rows]


def same_top(expected: list[IndexHit], got: list[IndexHit]) -> bool:
    """The same rows in the same order, except rows tied at the k-th score."""
    if len(expected) != len(got):
        return False
    cut = expected[-1].score if expected else 0.0
    for e, g in zip(expected, got, strict=True):
        if abs(e.score - g.score) > SCORE_TOLERANCE * abs(e.score) + 1e-12:
            return False
        if e.label != g.label and abs(e.score - cut) > SCORE_TOLERANCE * abs(cut) + 1e-12:
            return False
    return True


def run_size(docs: list[RefDoc], queries: list[str], k: int, work: Path) -> dict[str, Any]:
    index = Bm25Index(work)
    index.load()
    start = time.perf_counter()
    for i in tqdm(range(0, len(docs), _BATCH), desc=f"index {len(docs)}", unit="batch"):
        index.add_units([IndexedUnit(d.label, "", np.zeros(1, np.float32), d.text, d.lead)
                         for d in docs[i : i + _BATCH]], i + 1)
    index.save()
    built = time.perf_counter() - start
    start = time.perf_counter()
    fts5 = Fts5Reference(docs)
    fts5_built = time.perf_counter() - start
    fts5.conn.commit()
    fts5.conn.execute("VACUUM INTO ?", (str(work / "fts5.db"),))
    ours_ms, fts5_ms, differing = [], [], []
    for q in tqdm(queries, desc="queries", unit="query"):
        start = time.perf_counter()
        got = index.search(q, k, LEAD_WEIGHT)
        ours_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        expected = fts5.search(q, k, LEAD_WEIGHT)
        fts5_ms.append((time.perf_counter() - start) * 1000)
        if not same_top(expected, got):
            differing.append(q)
    index.close()
    return {
        "units": len(docs), "queries": len(queries), "k": k, "differing": len(differing),
        "differing_examples": differing[:5],
        "ours": {"build_s": round(built, 1), "bytes_per_unit": round((work / "lexical.db").stat().st_size / len(docs)),
                 **percentiles(ours_ms)},
        "fts5": {"build_s": round(fts5_built, 1),
                 "bytes_per_unit": round((work / "fts5.db").stat().st_size / len(docs)), **percentiles(fts5_ms)},
    }


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--units", type=int, nargs="+", required=True)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    _, questions = load_corpus(args.locomo, args.longmemeval)
    queries = [q.text for q in questions[: args.queries]]
    runs = []
    for n in args.units:
        work = Path(tempfile.mkdtemp(prefix="lexical-", dir=args.dir))
        try:
            runs.append(run_size(read_units(args.dir, n), queries, args.k, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(runs[-1]))
    out = {"machine": machine(), "runs": runs}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
