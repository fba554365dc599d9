"""Retain throughput (nlp extractor) against bare embedding throughput, and retain latency as a bank grows.

    python bench/retain_throughput.py --data ../shared/data/locomo_dev.json [--scale-units 20000] [--json OUT]

Part 1 retains the LoCoMo conversations into a fresh bank and then embeds the very same unit texts with the
bare model, in the same process. Part 2 fills one bank to --scale-units units in 10-turn batches (LoCoMo turns
re-dated per cycle, so nothing is served from the embedding cache) and compares the p50 latency per batch near
1,000 units with the p50 near the end. Part 2 resumes from an existing --dir.
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
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from eval.datasets import load_locomo
from hindsight import Hindsight, Message
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder


def throughput(data: Path, embedder: SentenceTransformerEmbedder) -> dict[str, float]:
    convs = load_locomo(data)
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, embedder=embedder) as hs:
        bank = hs.bank("throughput")
        bank.retain("warm up the extractor and models", timestamp="2023-01-01")
        sessions = [s for c in convs for s in c.sessions]
        start = time.perf_counter()
        units = 0
        for s in tqdm(sessions, desc="retain (nlp)", unit="session"):
            units += bank.retain(s.messages, timestamp=s.date, document_id=s.id).created
        retain_s = time.perf_counter() - start
        con = sqlite3.connect(Path(tmp) / "hindsight.db")
        texts = [r[0] for r in con.execute("SELECT embed_text FROM units WHERE bank_id='throughput' AND "
                                           "document_id NOT LIKE 'doc-%' ORDER BY label")]
        con.close()
    embedder.embed(texts[:64])
    start = time.perf_counter()
    for i in tqdm(range(0, len(texts), 256), desc="bare embedding", unit="batch"):
        embedder.embed(texts[i : i + 256])
    embed_s = time.perf_counter() - start
    turns = sum(len(s.messages) for s in sessions)
    return {
        "turns": turns, "units": units, "retain_seconds": round(retain_s, 2),
        "retain_units_per_s": round(units / retain_s, 2), "embed_units_per_s": round(len(texts) / embed_s, 2),
        "ratio": round((units / retain_s) / (len(texts) / embed_s), 3),
    }


def scale(data: Path, embedder: SentenceTransformerEmbedder, directory: Path, target: int) -> dict[str, float]:
    turns = [m for c in load_locomo(data) for s in c.sessions for m in s.messages]
    log_path = directory / "latencies.jsonl"
    with Hindsight(directory, embedder=embedder) as hs:
        bank = hs.bank("scale")
        have = bank.stats().units["world"] + bank.stats().units["experience"]
        cycle_len = len(turns) // 10
        batch_no = have // 5
        bar = tqdm(total=target, initial=have, desc="fill", unit="unit")
        with log_path.open("a") as log:
            while have < target:
                cycle, pos = divmod(batch_no, cycle_len)
                msgs = turns[pos * 10 : pos * 10 + 10]
                # Same words, a new day per cycle: realistic text, no embedding-cache hits.
                when = msgs[0].timestamp + timedelta(days=400 * (cycle + 1))  # type: ignore[operator]
                batch = [Message(speaker=m.speaker, content=m.content, timestamp=when) for m in msgs]
                t0 = time.perf_counter()
                created = bank.retain(batch, timestamp=when, document_id=f"batch-{batch_no}").created
                log.write(json.dumps({"units_before": have, "ms": (time.perf_counter() - t0) * 1000}) + "\n")
                have += created
                batch_no += 1
                bar.update(created)
        bar.close()
    rows = [json.loads(line) for line in log_path.read_text().splitlines()]
    early = [r["ms"] for r in rows if 1000 <= r["units_before"] < 2000]
    late = [r["ms"] for r in rows if target - 1000 <= r["units_before"] < target]
    return {
        "units": have, "p50_ms_at_1k": round(statistics.median(early), 1),
        "p50_ms_at_end": round(statistics.median(late), 1),
        "growth": round(statistics.median(late) / statistics.median(early), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--scale-units", type=int, default=20_000)
    parser.add_argument("--dir", type=Path, default=None, help="bank directory for part 2 (reuse to resume)")
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
        result["scale"] = scale(args.data, embedder, directory, args.scale_units)
        print(json.dumps(result["scale"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
