"""Retain throughput (nlp extractor) against bare embedding throughput, and retain latency as a bank grows.

    python bench/retain_throughput.py --data ../shared/data/locomo_dev.json [--scale-units 20000]
        [--store sqlite postgres] [--json OUT]

Part 1 runs --rounds interleaved rounds. Each retains the LoCoMo conversations into a fresh directory, one
retain per session, and again as a history import (one retain_many per conversation). Then, in the same
process, the bare model embeds the very same unit texts: as one call at batch sizes 8/16/32/64, and in the
same per-document calls that retain makes. Medians over the rounds are compared, so that one lucky or
unlucky sample on a shared machine decides nothing. Part 2 fills one bank to --scale-units units and another to 1,000
units, in 10-turn batches (LoCoMo turns re-dated per cycle, so nothing is served from the embedding cache),
then times --probes retains into each, alternating, and compares the p50s. Part 2 resumes from an existing
--dir. `--store sqlite postgres` retains into both stores in each round (Postgres at HINDSIGHT_STORE_DSN, else a
server started in a temporary directory), and reports their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from bench import machine
from eval.datasets import LocomoConversation, load_locomo
from hindsight import Bank, Hindsight, Message, RetainRequest
from hindsight.config import EmbedderConfig, HindsightConfig, LLMConfig
from hindsight.embed.base import Embedder
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

# No LLM: one configured in the environment would otherwise run observations in the background and share the cores.
NO_LLM = HindsightConfig(llm=LLMConfig(backend="none"))


@dataclass
class RetainRun:
    units_per_s: float
    texts: list[str]  # the unit texts the model embedded
    per_document: list[list[str]]  # the same, grouped as retain embedded them (one call per document)
    ner_share: float  # sentences tagged by NER / sentences seen


def retain_locomo(convs: list[LocomoConversation], embedder: Embedder, bulk: bool,
                  config: HindsightConfig = NO_LLM) -> RetainRun:
    """Retain every session into a new bank (no embedding cache: the bank is deleted afterwards, and with SQLite the
    directory is new): one retain per session, or one retain_many per conversation (a history import)."""
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, config, embedder=embedder) as hs:
        bank_id = f"throughput-{uuid.uuid4().hex[:8]}"
        bank = hs.bank(bank_id)
        bank.retain("Warm-up: Alice met Bob in Paris.", timestamp="2023-01-01", document_id="warm-up")
        units, start = 0, time.perf_counter()
        for conv in convs:
            if bulk:
                requests = [RetainRequest(s.messages, timestamp=s.date, document_id=s.id) for s in conv.sessions]
                units += sum(r.created for r in bank.retain_many(requests))
            else:
                units += sum(bank.retain(s.messages, timestamp=s.date, document_id=s.id).created
                             for s in conv.sessions)
        seconds = time.perf_counter() - start
        document = {u.id: u.source.document_id for u in hs.store.list_units(bank_id)}
        rows = [(document[u.unit_id], u.text) for u in hs.store.indexed_units(bank_id)
                if document[u.unit_id] != "warm-up"]
        ner = hs.pipeline.extractor.ner  # type: ignore[attr-defined]
        share = ner.sentences_tagged / max(ner.sentences_seen, 1)
        hs.delete_bank(bank_id)
    per_document: dict[str, list[str]] = {}
    for doc_id, text in rows:
        per_document.setdefault(doc_id, []).append(text)
    return RetainRun(units / seconds, [r[1] for r in rows], list(per_document.values()), share)


def _bare(embedder: SentenceTransformerEmbedder, calls: list[list[str]], batch_size: int) -> float:
    """Units per second of the bare model over the given calls."""
    configured, embedder.batch_size = embedder.batch_size, batch_size
    start = time.perf_counter()
    for texts in calls:
        embedder.embed(texts)
    seconds = time.perf_counter() - start
    embedder.batch_size = configured
    return sum(len(c) for c in calls) / seconds


def throughput(data: Path, embedder: SentenceTransformerEmbedder, rounds: int,
               postgres: HindsightConfig | None = None) -> dict[str, object]:
    """Interleaved rounds of retain, retain_many and the bare model on the same texts, and with `postgres` the two
    retains into that store too; medians over rounds."""
    convs = load_locomo(data)
    samples: dict[str, list[float]] = {}
    runs: list[RetainRun] = []
    for _ in tqdm(range(rounds), desc="rounds (retain, retain_many, bare model)", unit="round"):
        one, bulk = retain_locomo(convs, embedder, bulk=False), retain_locomo(convs, embedder, bulk=True)
        runs.append(one)
        embedder.embed(one.texts[:64])
        measured = {"retain": one.units_per_s, "retain_many": bulk.units_per_s,
                    "bare_per_document_calls": _bare(embedder, one.per_document, embedder.batch_size)}
        if postgres is not None:
            measured["retain_postgres"] = retain_locomo(convs, embedder, False, postgres).units_per_s
            measured["retain_many_postgres"] = retain_locomo(convs, embedder, True, postgres).units_per_s
        for size in (8, 16, 32, 64):  # the bare model gets every text in one call: the strictest baseline
            measured[f"bare_one_call_batch_{size}"] = _bare(embedder, [one.texts], size)
        for key, value in measured.items():
            samples.setdefault(key, []).append(value)
    median = {k: statistics.median(v) for k, v in samples.items()}
    best = max((k for k in median if k.startswith("bare_one_call")), key=median.__getitem__)
    return {
        "turns": sum(len(s.messages) for c in convs for s in c.sessions), "units": len(runs[0].texts),
        "rounds": rounds, "median_units_per_s": {k: round(v, 2) for k, v in median.items()},
        "samples_units_per_s": {k: [round(x, 2) for x in v] for k, v in samples.items()},
        "bare_best": best,
        "ratio_retain": round(median["retain"] / median[best], 3),
        "ratio_retain_many": round(median["retain_many"] / median[best], 3),
        "ratio_retain_same_calls": round(median["retain"] / median["bare_per_document_calls"], 3),
        "ner_sentence_share": round(runs[0].ner_share, 3),
        **({"ratio_postgres_retain": round(median["retain_postgres"] / median["retain"], 3),
            "ratio_postgres_retain_many": round(median["retain_many_postgres"] / median["retain_many"], 3)}
           if postgres is not None else {}),
    }


def postgres_config() -> HindsightConfig:
    """NO_LLM on Postgres: HINDSIGHT_STORE_DSN, else a server of this run's own, stopped at exit."""
    from eval.postgres import postgres_dsn

    return NO_LLM.updated({"store": {"backend": "postgres", "dsn": postgres_dsn()}})


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
    with Hindsight(directory, NO_LLM, embedder=embedder) as hs:
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
    parser.add_argument("--rounds", type=int, default=5, help="interleaved throughput rounds (medians reported)")
    parser.add_argument("--store", nargs="+", choices=["sqlite", "postgres"], default=["sqlite"],
                        help="part 1 also retains into Postgres with postgres")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder(EmbedderConfig())
    result: dict[str, object] = {"machine": machine()}
    if not args.skip_throughput:
        postgres = postgres_config() if "postgres" in args.store else None
        result["throughput"] = throughput(args.data, embedder, args.rounds, postgres)
        print(json.dumps(result["throughput"]))
    if args.scale_units:
        directory = args.dir or Path(tempfile.mkdtemp(prefix="hindsight-scale-"))
        result["scale"] = scale(args.data, embedder, directory, args.scale_units, args.probes)
        print(json.dumps(result["scale"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
