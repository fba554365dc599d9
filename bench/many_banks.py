"""Many banks in one directory against one: open the engine, list the banks, open a bank, recall in it.

    python bench/many_banks.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir DIR [--banks 10000] [--units 100] \
        [--queries 50] [--json OUT]

DIR/one holds one bank of --units units, filled through the real retain pipeline (bench/recall_latency.py's fill).
DIR/many holds --banks copies of it: the bank is exported once, and each copy is imported under its own bank id,
its unit and entity ids renamed (ids are unique across a store). The import resumes from the banks already there.
Then, for each directory, in a fresh process with the real model: seconds to open the engine, to list the banks, to
open one bank (its indexes loaded), and recall p50/p99 over --queries questions in that bank. An imported bank's
search indexes are built from the store when it is first opened, so the measured bank is opened once beforehand; the
open of another bank with its index files deleted, as after its import, is reported apart (`unindexed_open_bank_s`).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from bench import corpus_parser, machine, percentiles
from bench.recall_latency import BANK, NO_LLM, Query, fill, in_child, load_corpus
from hindsight import Hindsight
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

# The export's rows whose `id` names a unit or an entity: the ids a copy renames.
_ID_TABLES = ("units", "entities")


def bank_name(n: int) -> str:
    return f"bank-{n:05d}"


def renamed(lines: list[str], n: int) -> Iterator[str]:
    """The export with every unit and entity id given copy n's own suffix, wherever a row names it."""
    rows = [json.loads(line) for line in lines if line.strip()]
    ids = {r["values"]["id"] for r in rows if r.get("table") in _ID_TABLES}
    new = {i: f"{i}-{n:05d}" for i in ids}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return new.get(value, value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    for row in rows:
        yield json.dumps(walk(row)) + "\n"


def populate(one: Path, many: Path, banks: int, model: SentenceTransformerEmbedder) -> int:
    """Import copies of the one bank into `many` until it holds `banks` banks; returns how many it holds."""
    with Hindsight(one, NO_LLM, embedder=model) as hs:
        lines = list(hs.export_bank(BANK))
    with Hindsight(many, NO_LLM, embedder=model) as hs:
        have = set(hs.banks())
        todo = [n for n in range(banks) if bank_name(n) not in have]
        for n in tqdm(todo, desc=f"import into {many.name}", unit="bank"):
            hs.import_bank(renamed(lines, n), bank_id=bank_name(n))
        hs.bank(bank_name(banks // 2), create=False).indexes.vector_count()  # the measured bank's indexes built
        return len(hs.banks())


def measure(directory: Path, bank_id: str, queries: list[Query], unindexed: str | None = None) -> dict[str, Any]:
    """In this (fresh) process: open the engine, list its banks, open one bank, recall each query in it; with
    `unindexed`, also open that bank with its index files deleted first."""
    model = SentenceTransformerEmbedder(EmbedderConfig())
    if unindexed is not None:
        shutil.rmtree(directory / "banks" / unindexed, ignore_errors=True)
    t0 = time.perf_counter()
    with Hindsight(directory, NO_LLM, embedder=model) as hs:
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        banks = hs.banks()
        listed = time.perf_counter() - t0
        first: dict[str, float] = {}
        if unindexed is not None:
            t0 = time.perf_counter()
            hs.bank(unindexed, create=False).indexes.vector_count()
            first["unindexed_open_bank_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        bank = hs.bank(bank_id, create=False)
        bank.indexes.vector_count()  # opens (and loads) the indexes
        bank_open = time.perf_counter() - t0
        bank.recall(queries[0].text + " (warm-up)", query_time=queries[0].when)
        ms = []
        for q in queries:
            t0 = time.perf_counter()
            bank.recall(q.text, query_time=q.when)
            ms.append((time.perf_counter() - t0) * 1000)
    return {"banks": len(banks), "open_engine_s": round(opened, 3), "list_banks_s": round(listed, 6),
            "open_bank_s": round(bank_open, 3), **first, **{f"recall_{k}": v for k, v in percentiles(ms).items()}}


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--dir", type=Path, required=True, help="holds one/ and many/ (reuse it to resume)")
    parser.add_argument("--banks", type=int, default=10_000)
    parser.add_argument("--units", type=int, default=100)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    model = SentenceTransformerEmbedder(EmbedderConfig())
    corpus, queries = load_corpus(args.locomo, args.longmemeval)
    one, many = args.dir / "one", args.dir / "many"
    units = fill(one, model, corpus, args.units, noise=0.025, per_call=1).units
    populate(one, many, args.banks, model)
    del model
    asked = queries[: args.queries]
    result = {"machine": machine(), "command": " ".join(sys.argv), "units_per_bank": units,
              "one": in_child(measure, one, BANK, asked),
              "many": in_child(measure, many, bank_name(args.banks // 2), asked, bank_name(args.banks - 1))}
    result["many_over_one"] = {k: round(result["many"][k] / result["one"][k], 2) if result["one"][k] else None
                               for k in ("open_engine_s", "list_banks_s", "open_bank_s", "recall_p50_ms")}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
