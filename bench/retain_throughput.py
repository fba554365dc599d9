"""Retain throughput (nlp extractor) against bare embedding throughput, and retain latency as a bank grows.

    python bench/retain_throughput.py --data ../shared/data/locomo_dev.json [--scale-units 20000] [--json OUT]

Part 1 retains the LoCoMo conversations into a fresh bank, one retain per session, and again, into another
fresh directory, as a history import (one retain_many per conversation). It then embeds the very same unit
texts with the bare model, in the same process: once as one call at the best batch size, once in the same
per-document calls that retain makes. Part 2 fills one bank to --scale-units units and another to 1,000
units, in 10-turn batches (LoCoMo turns re-dated per cycle, so nothing is served from the embedding cache),
then times --probes retains into each, alternating, and compares the p50s. Part 2 resumes from an existing
--dir.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from eval.datasets import load_locomo
from hindsight import Bank, Hindsight, Message, RetainRequest
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder


def throughput(data: Path, embedder: SentenceTransformerEmbedder) -> dict[str, float]:
    convs = load_locomo(data)
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, embedder=embedder) as hs:
        bank = hs.bank("throughput")
        # Loads spaCy and MiniLM before timing: throughput, not start-up, is measured.
        bank.retain("Warm-up: Alice met Bob in Paris.", timestamp="2023-01-01")
        sessions = [s for c in convs for s in c.sessions]
        start = time.perf_counter()
        units = 0
        for s in tqdm(sessions, desc="retain (nlp)", unit="session"):
            units += bank.retain(s.messages, timestamp=s.date, document_id=s.id).created
        retain_s = time.perf_counter() - start
        con = sqlite3.connect(Path(tmp) / "hindsight.db")
        rows = con.execute("SELECT document_id, embed_text FROM units WHERE bank_id='throughput' AND "
                           "document_id NOT LIKE 'doc-%' ORDER BY label").fetchall()
        texts = [r[1] for r in rows]
        per_document: dict[str, list[str]] = {}
        for doc_id, text in rows:
            per_document.setdefault(doc_id, []).append(text)
        sentences = hs.pipeline.extractor.ner  # type: ignore[attr-defined]
        ner_share = round(sentences.sentences_tagged / max(sentences.sentences_seen, 1), 3)
        con.close()
    # A history import: each conversation's sessions in one retain_many, into a fresh directory so that
    # no embedding is served from the first run's cache.
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, embedder=embedder) as hs:
        bank = hs.bank("bulk")
        bank.retain("Warm-up: Alice met Bob in Paris.", timestamp="2023-01-01")
        start = time.perf_counter()
        bulk_units = 0
        for conv in tqdm(convs, desc="retain_many (nlp)", unit="conversation"):
            requests = [RetainRequest(s.messages, timestamp=s.date, document_id=s.id) for s in conv.sessions]
            bulk_units += sum(r.created for r in bank.retain_many(requests))
        bulk_s = time.perf_counter() - start
    # The bare model gets every text in one call at its best batch size: the strictest baseline.
    embedder.embed(texts[:64])
    bare: dict[int, float] = {}
    configured = embedder.batch_size
    for size in tqdm((8, 16, 32, 64), desc="bare embedding", unit="batch size"):
        embedder.batch_size = size
        start = time.perf_counter()
        embedder.embed(texts)
        bare[size] = time.perf_counter() - start
    embedder.batch_size = configured
    embed_s = min(bare.values())
    # The same texts in the same calls as retain makes (one per document): isolates the engine's own cost.
    start = time.perf_counter()
    for doc_texts in per_document.values():
        embedder.embed(doc_texts)
    per_doc_s = time.perf_counter() - start
    turns = sum(len(s.messages) for s in sessions)
    return {
        "turns": turns, "units": units, "retain_seconds": round(retain_s, 2),
        "retain_units_per_s": round(units / retain_s, 2), "embed_units_per_s": round(len(texts) / embed_s, 2),
        "embed_units_per_s_by_batch_size": {k: round(len(texts) / v, 2) for k, v in bare.items()},
        "ratio": round((units / retain_s) / (len(texts) / embed_s), 3),
        "embed_units_per_s_per_document_calls": round(len(texts) / per_doc_s, 2),
        "ratio_same_calls": round((units / retain_s) / (len(texts) / per_doc_s), 3),
        "ner_sentence_share": ner_share,
        "retain_many_units_per_s": round(bulk_units / bulk_s, 2),
        "ratio_retain_many": round((bulk_units / bulk_s) / (len(texts) / embed_s), 3),
    }


def _batches(turns: list[Message], start: int, count: int, day_offset: int) -> Iterator[list[Message]]:
    """10-turn batches of LoCoMo text; each cycle through the corpus moves to new dates (no cache hits)."""
    cycle_len = len(turns) // 10
    for n in range(start, start + count):
        cycle, pos = divmod(n, cycle_len)
        msgs = turns[pos * 10 : pos * 10 + 10]
        when = msgs[0].timestamp + timedelta(days=day_offset + 400 * (cycle + 1))  # type: ignore[operator]
        yield [Message(speaker=m.speaker, content=m.content, timestamp=when) for m in msgs]


def _fill(bank: Bank, turns: list[Message], target: int, day_offset: int, desc: str) -> int:
    """Retain batches until the bank holds `target` units; resumes from what is there."""
    have = sum(bank.stats().units.values())
    batch_no = have // 5
    with tqdm(total=target, initial=have, desc=desc, unit="unit") as bar:
        for batch in _batches(turns, batch_no, 10**9, day_offset):
            if have >= target:
                break
            created = bank.retain(batch, document_id=f"batch-{batch_no}").created
            have += created
            batch_no += 1
            bar.update(created)
    return have


def scale(
    data: Path, embedder: SentenceTransformerEmbedder, directory: Path, target: int, probes: int
) -> dict[str, float]:
    """Fill a bank to `target` units and one to 1,000; then time 10-turn retains into both, alternating."""
    turns = [m for c in load_locomo(data) for s in c.sessions for m in s.messages]
    with Hindsight(directory, embedder=embedder) as hs:
        big, small = hs.bank("scale"), hs.bank("small")
        units = _fill(big, turns, target, 0, f"fill to {target}")
        _fill(small, turns, 1000, 200, "fill to 1000")
        # Alternating probes see the same machine noise. Each run gets its own dates, so neither the
        # embedding cache nor document dedup can serve a probe from an earlier run.
        run = 1000 + (int(time.time()) // 60) % 5000
        times: dict[str, list[float]] = {"small": [], "big": []}
        big_batches = _batches(turns, 0, probes, run)
        small_batches = _batches(turns, 0, probes, run + 7)
        for i in tqdm(range(probes), desc="probe retains", unit="pair"):
            order = [("small", small, next(small_batches)), ("big", big, next(big_batches))]
            for name, bank, batch in order if i % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                created = bank.retain(batch, document_id=f"probe-{run}-{i}").created
                assert created == 5, f"probe {i} created {created} units; the measurement would be void"
                times[name].append((time.perf_counter() - t0) * 1000)
    p50_small, p50_big = statistics.median(times["small"]), statistics.median(times["big"])
    return {
        "units": units, "probes": probes, "p50_ms_at_1k": round(p50_small, 1), "p50_ms_at_target": round(p50_big, 1),
        "p95_ms_at_1k": round(statistics.quantiles(times["small"], n=20)[-1], 1),
        "p95_ms_at_target": round(statistics.quantiles(times["big"], n=20)[-1], 1),
        "growth": round(p50_big / p50_small, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--scale-units", type=int, default=20_000)
    parser.add_argument("--dir", type=Path, default=None, help="bank directory for part 2 (reuse to resume)")
    parser.add_argument("--probes", type=int, default=100, help="timed retains per bank size")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder(EmbedderConfig())
    result: dict[str, object] = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}
    if not args.skip_throughput:
        result["throughput"] = throughput(args.data, embedder)
        print(json.dumps(result["throughput"]))
    if args.scale_units:
        directory = args.dir or Path(tempfile.mkdtemp(prefix="hindsight-scale-"))
        result["scale"] = scale(args.data, embedder, directory, args.scale_units, args.probes)
        print(json.dumps(result["scale"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
