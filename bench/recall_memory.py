"""Resident memory of a long-lived process over many recalls: it must stay flat once warm.

    python bench/recall_memory.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir DIR [--units 10000] [--recalls 100000] \
        [--every 1000] [--json OUT]

DIR holds one bank filled through the real retain pipeline (bench/recall_latency.py's fill, resumable). One process
opens it with the real model and recalls the dev questions in turn, each with a counter appended so that no query
comes from a cache, --recalls times. Every --every recalls it records the process's resident memory (total and
anonymous, from /proc/self/status), and the blocks Python's allocator holds (objects, whatever their bytes).
Reported: the series, and the growth over the second half of the run (the first half warms the caches, which are
bounded: the embedding cache holds `embedder.cache_size` entries). One run is one process, so it does not resume;
it shows its progress.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from bench import corpus_parser, machine
from bench.recall_latency import BANK, NO_LLM, Query, fill, load_corpus, rss_mb
from hindsight import Hindsight
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder


def resident_mb() -> dict[str, float]:
    """This process's resident memory, total and anonymous, in MB, and the blocks Python's allocator holds: when
    resident memory grows and the blocks do not, the growth is outside Python's objects (the C heap)."""
    mb = rss_mb()
    return {"rss": round(mb["rss"], 1), "anon": round(mb["anon"], 1), "python_blocks": sys.getallocatedblocks()}


def run(directory: Path, queries: list[Query], recalls: int, every: int,
        model: SentenceTransformerEmbedder) -> dict[str, Any]:
    """Recall `recalls` times in one bank; resident memory every `every` recalls."""
    series: list[dict[str, float]] = []
    t0 = time.perf_counter()
    with Hindsight(directory, NO_LLM, embedder=model) as hs:
        bank = hs.bank(BANK, create=False)
        for i in tqdm(range(recalls), desc="recalls", unit="recall"):
            q = queries[i % len(queries)]
            bank.recall(f"{q.text} ({i})", query_time=q.when)
            if (i + 1) % every == 0:
                series.append({"recalls": i + 1, **resident_mb()})
    half = series[len(series) // 2]
    last = series[-1]
    per_10k = 10_000 / max(1, last["recalls"] - half["recalls"])
    return {"recalls": recalls, "seconds": round(time.perf_counter() - t0, 1), "series": series,
            "second_half_growth_mb": {k: round(last[k] - half[k], 1) for k in ("rss", "anon")},
            "second_half_python_blocks": last["python_blocks"] - half["python_blocks"],
            "second_half_mb_per_10k_recalls": {k: round((last[k] - half[k]) * per_10k, 2) for k in ("rss", "anon")}}


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--dir", type=Path, required=True, help="the bank directory (reuse it to resume the fill)")
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=1000)
    args = parser.parse_args()
    model = SentenceTransformerEmbedder(EmbedderConfig())
    corpus, queries = load_corpus(args.locomo, args.longmemeval)
    units = fill(args.dir, model, corpus, args.units, noise=0.025, per_call=20).units
    result = {"machine": machine(), "command": " ".join(sys.argv), "units": units,
              **run(args.dir, queries, args.recalls, args.every, model)}
    print(json.dumps({k: v for k, v in result.items() if k != "series"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
