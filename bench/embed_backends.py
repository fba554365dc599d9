"""Texts per second of the two embedder backends (sentence-transformers on torch, int8 ONNX on onnxruntime) at
their best batch size, and how close their vectors are.

    python bench/embed_backends.py --locomo ../shared/data/locomo_dev.json \\
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz [--questions 5] [--rounds 3] [--threads N] [--json OUT]

Two corpora: the unit texts of the LoCoMo conversations (retained once with the nlp extractor, as
bench/retain_throughput.py does) and the distinct user turns of the first --questions LongMemEval-S questions
(long texts). Each round embeds every corpus in one call per backend and batch size, the backends in alternating
order, so that both see the same machine noise; medians over the rounds. Both backends run with the same number of
intra-op threads (--threads, default: torch's default and the core count for onnxruntime; both are reported).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from tqdm import tqdm

from bench import machine
from bench.retain_throughput import retain_locomo
from eval.datasets import load_locomo
from eval.longmemeval_data import load_longmemeval
from hindsight.config import EmbedderConfig
from hindsight.embed.onnx_int8 import OnnxInt8Embedder
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

Backend = SentenceTransformerEmbedder | OnnxInt8Embedder


def corpora(locomo: Path, longmemeval: Path, questions: int, embedder: Backend) -> dict[str, list[str]]:
    """The LoCoMo unit texts and the distinct LongMemEval user turns (the eval embeds each text once)."""
    units = retain_locomo(load_locomo(locomo), embedder, bulk=True).texts
    turns = [text for q in load_longmemeval(longmemeval)[:questions] for _, text in q.user_turns()]
    return {"locomo_units": units, f"longmemeval_user_turns_{questions}q": list(dict.fromkeys(turns))}


def timed_embed(embedder: Backend, texts: list[str], batch_size: int) -> tuple[float, np.ndarray]:
    """Texts per second of one embed call at `batch_size`, and the vectors."""
    embedder.batch_size = batch_size
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start), vectors


def compare(
    backends: dict[str, Backend], texts: dict[str, list[str]], batch_sizes: list[int], rounds: int
) -> dict[str, object]:
    """Interleaved rounds over corpora, batch sizes and backends; medians, best batch sizes and cosines."""
    rates: dict[tuple[str, str, int], list[float]] = {}
    vectors: dict[tuple[str, str], np.ndarray] = {}
    steps = [(r, c, b) for r in range(rounds) for c in texts for b in batch_sizes]
    for round_no, corpus, batch_size in tqdm(steps, desc="rounds x corpora x batch sizes", unit="step"):
        names = list(backends) if round_no % 2 == 0 else list(backends)[::-1]
        for name in names:
            rate, vectors[corpus, name] = timed_embed(backends[name], texts[corpus], batch_size)
            rates.setdefault((corpus, name, batch_size), []).append(rate)
    out: dict[str, object] = {}
    for corpus, items in texts.items():
        per_backend: dict[str, dict[str, object]] = {}
        best_rate: dict[str, float] = {}
        for name in backends:
            median = {b: statistics.median(rates[corpus, name, b]) for b in batch_sizes}
            best = max(median, key=median.__getitem__)
            best_rate[name] = median[best]
            per_backend[name] = {
                "median_texts_per_s": {str(b): round(v, 1) for b, v in median.items()},
                "samples_texts_per_s": {str(b): [round(x, 1) for x in rates[corpus, name, b]] for b in batch_sizes},
                "best_batch_size": best,
                "best_texts_per_s": round(median[best], 1),
            }
        cosines = np.sum(vectors[corpus, "sentence-transformers"] * vectors[corpus, "onnx-int8"], axis=1)
        out[corpus] = {
            "texts": len(items),
            "mean_chars": round(statistics.mean(len(t) for t in items), 1),
            "backends": per_backend,
            "speedup_onnx_over_torch": round(best_rate["onnx-int8"] / best_rate["sentence-transformers"], 2),
            "cosine_mean": round(float(cosines.mean()), 5),
            "cosine_min": round(float(cosines.min()), 5),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=5, help="LongMemEval questions whose user turns are embedded")
    parser.add_argument("--batch-sizes", default="8,16,32,64")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians reported)")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads of both backends")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    load_before = os.getloadavg()
    if args.threads:
        torch.set_num_threads(args.threads)
    loaded: dict[str, float] = {}
    start = time.perf_counter()
    onnx = OnnxInt8Embedder(EmbedderConfig(backend="onnx-int8", threads=args.threads))
    loaded["onnx-int8"] = time.perf_counter() - start
    start = time.perf_counter()
    torch_model = SentenceTransformerEmbedder(EmbedderConfig())
    loaded["sentence-transformers"] = time.perf_counter() - start
    backends: dict[str, Backend] = {"sentence-transformers": torch_model, "onnx-int8": onnx}
    texts = corpora(args.locomo, args.longmemeval, args.questions, onnx)
    for embedder in backends.values():  # warm-up, untimed
        embedder.embed([t for items in texts.values() for t in items[:32]])
    result: dict[str, object] = {
        "machine": machine(),
        "threads": {"sentence-transformers": torch.get_num_threads(), "onnx-int8": onnx.threads},
        "load_seconds": {k: round(v, 2) for k, v in loaded.items()},
        "rounds": args.rounds,
        "corpora": compare(backends, texts, [int(b) for b in args.batch_sizes.split(",")], args.rounds),
        "loadavg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
