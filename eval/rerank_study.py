"""How far reranking the recalled candidates can go with what runs offline: a study on the dev files.

    python eval/rerank_study.py --longmemeval FILE --locomo FILE --work-longmemeval DIR --work-locomo DIR
        --out OUT.json [--config F] [--folds 6] [--second-model PATH] [--second-weights 1 3]

Every scored question is recalled once (the hindsight system of eval/longmemeval.py and eval/locomo.py, whose banks
in --work-* are reused or retained anew) with top_k = recall.rerank_top_n: the candidates the reranker saw, in the
pipeline's order, with their explanations. Orderings of the same candidates are then scored:
- `pipeline`: recall's own order (the eval's ranking); `fused`: the RRF order, before reranking;
- `learned-cv`: a linear reranker over the candidates' explanation features (FEATURES), fitted by pairwise logistic
  regression on the other folds' questions of both files pooled, and scored on each held-out fold;
- `learned-in-sample`: the same fitted on every question and scored on them: optimistic for such a model, not a result;
- `second-w`: the pipeline's rerank score plus w times the cosine, under a second sentence-transformers model (a local
  folder), between the query and the hit text as the reranker sees it.
Metrics: LongMemEval session recall_any@5, recall_all@5, ndcg_any@5, recall_all@10; LoCoMo evidence recall @5/10/20
(categories 1-4). The candidates are stored as they are made, in OUT with the suffix .candidates.jsonl; a rerun
with the same config, code and second model resumes from them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from rich.table import Table
from tqdm import tqdm

from eval import locomo, longmemeval
from eval.datasets import load_locomo
from eval.hindsight_system import UNLIMITED_BUDGET, HindsightSystem, retain_key, system_config
from eval.longmemeval_data import load_longmemeval, session_of
from eval.metrics import evidence_recall, flatten_turns, session_scores
from eval.runner import Query, code_version, config_overrides, console, digest
from hindsight import HindsightConfig
from hindsight.config import EmbedderConfig
from hindsight.embed.factory import make_embedder
from hindsight.recall.rerank import asks_latest
from hindsight.recall.types import Channel, RecallHit

FEATURES = (
    "fused", "rerank", "semantic", "lexical", "graph", "temporal", "semantic_rr", "lexical_rr", "graph_rr",
    "temporal_rr", "recency", "recency_if_latest", "log_tokens", "channels",
)
RR_K = 5  # reciprocal-rank features: 1 / (RR_K + rank)


@dataclass
class StudyQuestion:
    """One scored question and the candidates recall reranked for it, in the pipeline's order."""

    dataset: str  # "longmemeval" | "locomo"
    question_id: str
    truth: list[str]  # relevant sessions (LongMemEval) or evidence turns (LoCoMo)
    turns: list[list[str]]  # each candidate's source turns
    features: list[list[float]]  # candidate x FEATURES
    second: list[float] | None = None  # second-model cosine of each candidate

    def labels(self) -> np.ndarray:
        truth = set(self.truth)
        key: Callable[[str], str] = session_of if self.dataset == "longmemeval" else str
        return np.array([any(key(t) in truth for t in turns) for turns in self.turns], dtype=float)


def candidate_features(query: str, hits: Sequence[RecallHit]) -> list[list[float]]:
    """FEATURES of each hit, scaled within the query's candidates."""
    def scaled(values: list[float]) -> np.ndarray:
        v = np.asarray(values, dtype=float)
        span = v.max() - v.min()
        return (v - v.min()) / span if span > 0 else np.zeros_like(v)

    def channel(hit: RecallHit, which: Channel) -> tuple[float, float]:
        found = next((c for c in hit.channels if c.channel is which), None)
        return (max(found.score, 0.0), 1.0 / (RR_K + found.rank)) if found else (0.0, 0.0)

    latest = float(asks_latest(query))
    recency = scaled([h.unit.mentioned_at.timestamp() for h in hits])
    columns = [scaled([h.fused_score for h in hits]),
               scaled([h.rerank_score if h.rerank_score is not None else h.score for h in hits]),
               np.array([channel(h, Channel.SEMANTIC)[0] for h in hits])]
    for which in (Channel.LEXICAL, Channel.GRAPH, Channel.TEMPORAL):
        raw = np.array([channel(h, which)[0] for h in hits])
        columns.append(raw / raw.max() if raw.max() > 0 else raw)
    columns += [np.array([channel(h, which)[1] for h in hits]) for which in Channel]
    columns += [recency, recency * latest, np.log1p([h.tokens for h in hits]) / 8.0,
                np.array([len(h.channels) / len(Channel) for h in hits])]
    rows: list[list[float]] = np.stack(columns, axis=1).round(6).tolist()
    return rows


def fit_pairwise(groups: Sequence[tuple[np.ndarray, np.ndarray]], l2: float = 1e-3, steps: int = 30) -> np.ndarray:
    """Weights w minimising the mean logistic loss of w . (x_pos - x_neg) over every (relevant, irrelevant) pair
    of candidates of a question, plus l2 * |w|^2 (Newton's method; the loss is convex)."""
    diffs = [X[y > 0][:, None, :] - X[y == 0][None, :, :] for X, y in groups if 0 < y.sum() < len(y)]
    if not diffs:
        raise ValueError("no question has both relevant and irrelevant candidates")
    D = np.concatenate([d.reshape(-1, d.shape[-1]) for d in diffs])
    w = np.zeros(D.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(D @ w)))
        grad = D.T @ (p - 1.0) / len(D) + 2 * l2 * w
        hess = (D * (p * (1 - p))[:, None]).T @ D / len(D) + 2 * l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def fold_of(questions: Sequence[StudyQuestion], folds: int) -> list[int]:
    """Each question's fold: a seeded shuffle, dealt round-robin."""
    order = np.random.RandomState(0).permutation(len(questions))
    out = [0] * len(questions)
    for position, index in enumerate(order):
        out[index] = position % folds
    return out


def learned_scores(questions: Sequence[StudyQuestion], folds: int) -> list[np.ndarray]:
    """Each question's candidates scored by weights fitted on the other folds."""
    data = [(np.asarray(q.features), q.labels()) for q in questions]
    assigned = fold_of(questions, folds)
    out: list[np.ndarray] = [np.zeros(0)] * len(questions)
    for k in range(folds):
        w = fit_pairwise([d for d, f in zip(data, assigned, strict=True) if f != k])
        for i, f in enumerate(assigned):
            if f == k:
                out[i] = data[i][0] @ w
    return out


def metrics(question: StudyQuestion, scores: np.ndarray) -> dict[str, float]:
    """The question's metrics for its candidates ordered by descending score (ties keep the pipeline order)."""
    order = np.argsort(-scores, kind="stable")
    turns = flatten_turns(question.turns[i] for i in order)
    if question.dataset == "longmemeval":
        sessions = [session_of(t) for t in turns]
        at5, at10 = session_scores(sessions, question.truth, 5), session_scores(sessions, question.truth, 10)
        return {"recall_any@5": at5.recall_any, "recall_all@5": at5.recall_all, "ndcg_any@5": at5.ndcg_any,
                "recall_all@10": at10.recall_all}
    return {f"evidence_recall@{k}": evidence_recall(turns, question.truth, k) for k in (5, 10, 20)}


def orderings(questions: Sequence[StudyQuestion], folds: int, second_weights: Sequence[float]
              ) -> dict[str, list[np.ndarray]]:
    """Every ordering the study scores, as one score array per question."""
    pipeline = [-np.arange(len(q.turns), dtype=float) for q in questions]
    rerank = FEATURES.index("rerank")
    out = {"pipeline": pipeline,
           "fused": [np.asarray(q.features)[:, FEATURES.index("fused")] for q in questions],
           "learned-cv": learned_scores(questions, folds)}
    everything = fit_pairwise([(np.asarray(q.features), q.labels()) for q in questions])
    out["learned-in-sample"] = [np.asarray(q.features) @ everything for q in questions]
    if all(q.second is not None for q in questions):
        for w in second_weights:
            out[f"second-{w:g}"] = [np.asarray(q.features)[:, rerank] + w * np.asarray(q.second) for q in questions]
    return out


def summarize(questions: Sequence[StudyQuestion], scored: dict[str, list[np.ndarray]]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, scores in scored.items():
        for dataset in ("longmemeval", "locomo"):
            rows = [metrics(q, s) for q, s in zip(questions, scores, strict=True) if q.dataset == dataset]
            report.setdefault(name, {})[dataset] = {k: round(float(np.mean([r[k] for r in rows])), 4)
                                                    for k in rows[0]} if rows else {}
    return report


@dataclass(frozen=True)
class StudyQuery:
    dataset: str
    query: Query
    truth: list[str]


def study_queries(lme_path: Path, locomo_path: Path) -> list[StudyQuery]:
    """The scored questions of both files, as the eval scripts pick and ask them."""
    out = [StudyQuery("longmemeval", longmemeval.query(q), sorted(q.relevant_sessions()))
           for q in load_longmemeval(lme_path) if q.skip_reason() is None]
    for conv in load_locomo(locomo_path):
        out += [StudyQuery("locomo", q.query, q.evidence()) for q in locomo.questions(conv)
                if q.evidence() and q.query.group in locomo.SCORED_CATEGORIES]
    return out


class SecondModel:
    """Cosines of a second sentence-transformers model (through the project's embedder), each text embedded once."""

    def __init__(self, path: str) -> None:
        self.embedder = make_embedder(EmbedderConfig(model=path, max_tokens=None, batch_size=16, freeze_gc=False))
        self.cache: dict[str, np.ndarray] = {}

    def cosines(self, query: str, texts: list[str]) -> list[float]:
        new = [t for t in dict.fromkeys([query, *texts]) if t not in self.cache]
        if new:
            self.cache.update(zip(new, self.embedder.embed(new), strict=True))
        return [round(float(self.cache[t] @ self.cache[query]), 6) for t in texts]


def capture(args: argparse.Namespace, config: HindsightConfig, cache_path: Path) -> list[StudyQuestion]:
    """Recall every question once, resuming from the candidates already stored under the same key."""
    key = digest([config.model_dump_json(), code_version(), str(args.second_model)])
    done: dict[str, StudyQuestion] = {}
    if cache_path.exists():
        for line in cache_path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.pop("key") == key:
                done[f"{row['dataset']}/{row['question_id']}"] = StudyQuestion(**row)
    queries = study_queries(args.longmemeval, args.locomo)
    todo = [q for q in queries if f"{q.dataset}/{q.query.id}" not in done]
    console.print(f"{len(queries)} questions, {len(queries) - len(todo)} stored, {len(todo)} to recall")
    if todo:
        second = SecondModel(args.second_model) if args.second_model else None
        embedder = make_embedder(config.embedder)
        systems = {d: HindsightSystem("hindsight", work / f"hindsight-{d}-{retain_key(config)}", embedder, (),
                                      config.recall.rerank.top_n, config, code_version())
                   for d, work in (("longmemeval", args.work_longmemeval), ("locomo", args.work_locomo))}
        with cache_path.open("a", encoding="utf-8") as log:
            for q in tqdm(todo, desc="recall", unit="q"):
                bank, _ = systems[q.dataset].bank(q.query.haystack())
                text = q.query.text
                hits = bank.recall(text, budget=UNLIMITED_BUDGET, query_time=q.query.query_time,
                                   top_k=config.recall.rerank.top_n).hits
                row = StudyQuestion(q.dataset, q.query.id, q.truth, [list(h.unit.source.turn_ids) for h in hits],
                                    candidate_features(text, hits) if hits else [],
                                    second.cosines(text, [h.text for h in hits]) if second and hits else None)
                log.write(json.dumps({"key": key, **asdict(row)}) + "\n")
                log.flush()
                done[f"{q.dataset}/{q.query.id}"] = row
        for system in systems.values():
            system.close()
    return [done[f"{q.dataset}/{q.query.id}"] for q in queries]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--work-longmemeval", type=Path, required=True, help="the --work DIR of eval/longmemeval.py")
    parser.add_argument("--work-locomo", type=Path, required=True, help="the --work DIR of eval/locomo.py")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=None, help="YAML config sections, as in the eval scripts")
    parser.add_argument("--folds", type=int, default=6)
    parser.add_argument("--second-model", default=None, help="a sentence-transformers model folder")
    parser.add_argument("--second-weights", type=float, nargs="+", default=[1.0, 3.0])
    args = parser.parse_args(argv)
    config = system_config("hindsight", overrides=config_overrides(args.config))
    start = time.perf_counter()
    questions = [q for q in capture(args, config, args.out.with_suffix(".candidates.jsonl")) if q.turns]
    report = summarize(questions, orderings(questions, args.folds, args.second_weights))
    weights = fit_pairwise([(np.asarray(q.features), q.labels()) for q in questions])
    result = {"questions": {d: sum(q.dataset == d for q in questions) for d in ("longmemeval", "locomo")},
              "folds": args.folds, "second_model": args.second_model, "features": list(FEATURES),
              "in_sample_weights": dict(zip(FEATURES, np.round(weights, 4).tolist(), strict=True)), "orderings": report,
              "config": config.model_dump(mode="json")["recall"], "seconds": round(time.perf_counter() - start, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    table = Table(title=f"rerank study: {result['questions']}")
    columns = [("longmemeval", k, f"LME {k.replace('recall_', '')}")
               for k in ("recall_any@5", "recall_all@5", "ndcg_any@5", "recall_all@10")]
    columns += [("locomo", f"evidence_recall@{k}", f"LoCoMo R@{k}") for k in (5, 10, 20)]
    table.add_column("ordering", no_wrap=True)
    for _, _, header in columns:
        table.add_column(header, no_wrap=True)
    for name, by_dataset in report.items():
        table.add_row(name, *[f"{by_dataset[d].get(k, float('nan')):.3f}" for d, k, _ in columns])
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
