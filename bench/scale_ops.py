"""Operations on a big bank against a small one: retain, forget, check, index rebuilds and delete_bank.

    python bench/scale_ops.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --big DIR --small DIR10K [--retains 5] [--json OUT]

--big is a bank directory that `bench/recall_latency.py` filled (1M units for issue J); --small is filled here to
10,000 units by the same fill if it holds fewer. Every step runs on a copy of each (DIR-ops), since forgetting and
deleting change the bank; the copy's `ops.json` records the finished steps, so a stopped run resumes at the next one
(a fresh run starts with --fresh). With the real model and no LLM, on each copy in turn:
1. open: the engine and the bank, its indexes loaded;
2. retain: --retains new 10-turn sessions (median wall time; the model call included);
3. forget a unit (one from the middle of the bank), then the entity with the most mentions;
4. check();
5. rebuild each derived index (vectors, lexical): its files deleted, the bank reopened;
6. delete_bank.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from bench import corpus_parser, machine
from bench.recall_latency import BANK, NO_LLM, SessionText, bank_copy, fill, load_corpus
from hindsight import Hindsight
from hindsight.bank import Bank
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

TURNS = 10
SMALL_UNITS = 10_000
# The derived index files of a bank, by index (hindsight/store/sqlite_search.py).
INDEX_FILES = {"vectors": ["vectors.hnsw", "vectors.json"],
               "lexical": ["lexical.db", "lexical.db-wal", "lexical.db-shm"]}


class Steps:
    """The finished steps of one copy, in its ops.json: a stopped run resumes after the last one."""

    def __init__(self, work: Path) -> None:
        self.path = work / "ops.json"
        self.done: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}

    def run(self, name: str, step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if name not in self.done:
            t0 = time.perf_counter()
            result = step()
            self.done[name] = {"seconds": round(time.perf_counter() - t0, 3), **result}
            self.path.write_text(json.dumps(self.done, indent=2))
        return dict(self.done[name])


def copy_of(directory: Path, fresh: bool) -> Path:
    """DIR-ops: a copy of the bank directory (without the fill's vector cache), kept across a resumed run."""
    work = directory.with_name(directory.name + "-ops")
    if fresh or not (work / "ops.json").exists():
        work = bank_copy(directory, "ops")
        (work / "ops.json").write_text("{}")
    return work


def sessions_of(corpus: list[SessionText], n: int) -> list[list[dict[str, Any]]]:
    """n new 10-turn sessions, dated past anything in the bank."""
    long = [s for s in corpus if len(s.messages) >= TURNS][:n]
    return [[{"speaker": m.speaker, "role": m.role, "content": m.content,
              "timestamp": (s.date + timedelta(days=365 * 70 + i)).isoformat()} for m in s.messages[:TURNS]]
            for i, s in enumerate(long)]


def index_dir(work: Path) -> Path:
    return work / "banks" / BANK


def operate(work: Path, model: SentenceTransformerEmbedder, sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Every step on one copy; each step's result with its wall time."""
    steps = Steps(work)

    def engine() -> Hindsight:
        return Hindsight(work, NO_LLM, embedder=model)

    def opened(hs: Hindsight) -> Bank:
        bank = hs.bank(BANK, create=False)
        bank.indexes.sync()
        return bank

    def open_step() -> dict[str, Any]:
        with engine() as hs:
            return {"units": sum(opened(hs).stats().units.values())}

    def retain_step() -> dict[str, Any]:
        with engine() as hs:
            bank = opened(hs)
            ms = []
            for i, turns in enumerate(tqdm(sessions, desc=f"retain in {work.name}", unit="session")):
                t0 = time.perf_counter()
                bank.retain(turns, document_id=f"ops-{i}")
                ms.append((time.perf_counter() - t0) * 1000)
        return {"retains": len(ms), "median_ms": round(statistics.median(ms), 1), "ms": [round(m, 1) for m in ms]}

    def forget_unit_step() -> dict[str, Any]:
        with engine() as hs:
            bank = opened(hs)
            n = sum(bank.stats().units.values())
            [unit] = bank.units(limit=1, offset=n // 2)
            t0 = time.perf_counter()
            result = bank.forget(unit.id)
            return {"forget_s": round(time.perf_counter() - t0, 3), "removed": len(result.unit_ids)}

    def forget_entity_step() -> dict[str, Any]:
        with engine() as hs:
            bank = opened(hs)
            t0 = time.perf_counter()
            entities = bank.entities()
            listed = time.perf_counter() - t0
            top = max(entities, key=lambda e: e.mention_count)
            t0 = time.perf_counter()
            result = bank.forget(entity=top.id)
            return {"entities": len(entities), "list_entities_s": round(listed, 3), "entity": top.name,
                    "mentions": top.mention_count, "forget_s": round(time.perf_counter() - t0, 3),
                    "removed": len(result.unit_ids)}

    def check_step() -> dict[str, Any]:
        with engine() as hs:
            bank = opened(hs)
            t0 = time.perf_counter()
            report = bank.check()
            return {"check_s": round(time.perf_counter() - t0, 3), "ok": report.ok, "units": report.units,
                    "problems": len(report.problems)}

    def rebuild_step(index: str) -> Callable[[], dict[str, Any]]:
        def step() -> dict[str, Any]:
            for name in INDEX_FILES[index]:
                (index_dir(work) / name).unlink(missing_ok=True)
            with engine() as hs:
                t0 = time.perf_counter()
                bank = opened(hs)
                seconds = time.perf_counter() - t0
                rebuilt = list(getattr(bank.indexes, "rebuilt", []))
            return {"rebuild_s": round(seconds, 3), "rebuilt": rebuilt}
        return step

    def delete_step() -> dict[str, Any]:
        with engine() as hs:
            opened(hs)
            t0 = time.perf_counter()
            hs.delete_bank(BANK)
            return {"delete_s": round(time.perf_counter() - t0, 3), "banks_left": len(hs.banks())}

    out = {"open": steps.run("open", open_step), "retain": steps.run("retain", retain_step),
           "forget_unit": steps.run("forget_unit", forget_unit_step),
           "forget_entity": steps.run("forget_entity", forget_entity_step), "check": steps.run("check", check_step)}
    for index in INDEX_FILES:
        out[f"rebuild_{index}"] = steps.run(f"rebuild_{index}", rebuild_step(index))
    out["delete_bank"] = steps.run("delete_bank", delete_step)
    return out


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--big", type=Path, required=True, help="a bank directory bench/recall_latency.py filled")
    parser.add_argument("--small", type=Path, required=True, help="filled here to 10,000 units if it holds fewer")
    parser.add_argument("--retains", type=int, default=5)
    parser.add_argument("--fresh", action="store_true", help="new copies: start every step again")
    args = parser.parse_args()
    model = SentenceTransformerEmbedder(EmbedderConfig())
    corpus, _ = load_corpus(args.locomo, args.longmemeval)
    fill(args.small, model, corpus, SMALL_UNITS, noise=0.025, per_call=20)
    sessions = sessions_of(corpus, args.retains)
    result: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv)}
    for name, directory in (("small", args.small), ("big", args.big)):
        result[name] = operate(copy_of(directory, args.fresh), model, sessions)
        print(json.dumps({name: result[name]}))
    result["retain_big_over_small"] = round(result["big"]["retain"]["median_ms"]
                                            / result["small"]["retain"]["median_ms"], 3)
    print(json.dumps({"retain_big_over_small": result["retain_big_over_small"]}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
