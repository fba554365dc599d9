"""What the garbage collector tracks in a recall process: objects after each loading step.

    python bench/gc_objects.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir DIR [--json OUT]

DIR is a bank directory filled by bench/recall_latency.py. Each step is counted with gc.get_objects() after a full
collection, in the order a latency run loads things: hindsight imported, the embedding model loaded (with
embedder.freeze_gc off, so that its objects are counted), the bench's corpus, the bank opened and 20 recalls made.
A full collection scans every one of these objects that is not frozen.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import machine
from bench.recall_latency import BANK, NO_LLM, load_corpus
from hindsight import Hindsight
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True, help="a bank directory filled by recall_latency.py")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    steps = {"hindsight imported": tracked()}
    model = SentenceTransformerEmbedder(EmbedderConfig(freeze_gc=False))
    model.embed(["warm-up"])
    steps["embedding model loaded"] = tracked()
    _, queries = load_corpus(args.locomo, args.longmemeval)
    steps["bench corpus loaded"] = tracked()
    with Hindsight(args.dir, NO_LLM, embedder=model) as hs:
        bank = hs.bank(BANK, create=False)
        for q in queries[:20]:
            bank.recall(q.text, budget=4096, query_time=q.when)
        steps["bank opened, 20 recalls"] = tracked()
    previous = 0
    for step, count in steps.items():
        print(f"{step:28s} {count:>9,d}  (+{count - previous:,d})")
        previous = count
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "command": " ".join(sys.argv), "tracked": steps},
                                        indent=2))


if __name__ == "__main__":
    main()
