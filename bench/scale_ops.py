"""Operations on a big bank against a small one: retain, forget, check, index rebuilds and delete_bank.

    python bench/scale_ops.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --big DIR --small DIR10K [--retains 5] \
        [--store postgres] [--json OUT]

--big is a bank directory that `bench/recall_latency.py` filled (1M units for issue J); --small is filled here to
10,000 units by the same fill if it holds fewer. Every step runs on a copy of each, since forgetting and deleting
change the bank; the copy's `ops.json` (in DIR-ops, or DIR-ops-postgres) records the finished steps, so a stopped
run resumes at the next one (a fresh run starts with --fresh). With the real model and no LLM, on each copy in turn:
1. open: the engine and the bank, its indexes loaded;
2. retain: --retains new 10-turn sessions (median wall time; the model call included);
3. forget a unit (one from the middle of the bank), then the entity with the most mentions;
4. check();
5. rebuild each derived index: dropped, then the bank reopened;
6. delete_bank.

`--store postgres` runs the steps on the bank's Postgres copy, made as `bench/recall_latency.py --store postgres`
makes it (the same server under DIR/postgres, or HINDSIGHT_STORE_DSN), then cloned into a database of its own with
CREATE DATABASE ... TEMPLATE. There the lexical tables are written with the units, so pgvector's HNSW index is the one
derived index; it is rebuilt with the same maintenance_work_mem as the copy's build.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from bench import corpus_parser, machine
from bench.recall_latency import BANK, BUILD_MEMORY, NO_LLM, SessionText, bank_copy, fill, load_corpus, postgres_copy
from hindsight import Hindsight
from hindsight.bank import Bank
from hindsight.config import EmbedderConfig, HindsightConfig
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


@dataclass
class Copy:
    """Where one bank's steps run: the directory of its ops.json and the engine's own files, the engine's config, and
    how each derived index is dropped so that the next open rebuilds it from the database."""

    work: Path
    config: HindsightConfig
    drops: dict[str, Callable[[], None]]


def copy_of(directory: Path, fresh: bool) -> Copy:
    """DIR-ops: a copy of the bank directory (without the fill's vector cache), kept across a resumed run."""
    work = directory.with_name(directory.name + "-ops")
    if fresh or not (work / "ops.json").exists():
        work = bank_copy(directory, "ops")
        (work / "ops.json").write_text("{}")

    def drop(index: str) -> Callable[[], None]:
        def files() -> None:
            for name in INDEX_FILES[index]:
                (work / "banks" / BANK / name).unlink(missing_ok=True)
        return files

    return Copy(work, NO_LLM, {index: drop(index) for index in INDEX_FILES})


def postgres_copy_of(directory: Path, fresh: bool, model: SentenceTransformerEmbedder) -> Copy:
    """A database cloned from the bank's Postgres copy (named for the source database and DIR), kept across a
    resumed run, with DIR-ops-postgres for its ops.json."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    source, _ = postgres_copy(directory, model)
    dsn = str(source.store.dsn)
    name = f"{conninfo_to_dict(dsn)['dbname']}_ops_{directory.name}"
    work = directory.with_name(directory.name + "-ops-postgres")
    if fresh or not (work / "ops.json").exists():
        # From template1: CREATE DATABASE ... TEMPLATE needs its source free of connections.
        with psycopg.connect(make_conninfo(dsn, dbname="template1"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(str(conninfo_to_dict(dsn)["dbname"]))))
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        (work / "ops.json").write_text("{}")
    clone = make_conninfo(dsn, dbname=name, options=f"-c maintenance_work_mem={BUILD_MEMORY}")

    def drop_vectors() -> None:
        with psycopg.connect(clone, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(f"units_hnsw_{model.dim}")))

    return Copy(work, NO_LLM.updated({"store": {"backend": "postgres", "dsn": clone}}), {"vectors": drop_vectors})


def sessions_of(corpus: list[SessionText], n: int) -> list[list[dict[str, Any]]]:
    """n new 10-turn sessions, dated past anything in the bank."""
    long = [s for s in corpus if len(s.messages) >= TURNS][:n]
    return [[{"speaker": m.speaker, "role": m.role, "content": m.content,
              "timestamp": (s.date + timedelta(days=365 * 70 + i)).isoformat()} for m in s.messages[:TURNS]]
            for i, s in enumerate(long)]


def operate(copy: Copy, model: SentenceTransformerEmbedder, sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Every step on one copy; each step's result with its wall time."""
    work = copy.work
    steps = Steps(work)

    def engine() -> Hindsight:
        return Hindsight(work, copy.config, embedder=model)

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
            copy.drops[index]()
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
    for index in copy.drops:
        out[f"rebuild_{index}"] = steps.run(f"rebuild_{index}", rebuild_step(index))
    out["delete_bank"] = steps.run("delete_bank", delete_step)
    return out


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--big", type=Path, required=True, help="a bank directory bench/recall_latency.py filled")
    parser.add_argument("--small", type=Path, required=True, help="filled here to 10,000 units if it holds fewer")
    parser.add_argument("--retains", type=int, default=5)
    parser.add_argument("--fresh", action="store_true", help="new copies: start every step again")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    model = SentenceTransformerEmbedder(EmbedderConfig())
    corpus, _ = load_corpus(args.locomo, args.longmemeval)
    fill(args.small, model, corpus, SMALL_UNITS, noise=0.025, per_call=20)
    sessions = sessions_of(corpus, args.retains)
    result: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv), "store": args.store}
    for name, directory in (("small", args.small), ("big", args.big)):
        copy = (postgres_copy_of(directory, args.fresh, model) if args.store == "postgres"
                else copy_of(directory, args.fresh))
        result[name] = operate(copy, model, sessions)
        print(json.dumps({name: result[name]}))
    result["retain_big_over_small"] = round(result["big"]["retain"]["median_ms"]
                                            / result["small"]["retain"]["median_ms"], 3)
    print(json.dumps({"retain_big_over_small": result["retain_big_over_small"]}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
