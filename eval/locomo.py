"""LoCoMo retrieval: evidence dia_id recall at k and evidence recall under a token budget, per QA category.

    python eval/locomo.py retrieval --data locomo10.json --out OUT.json [--system S ...]
        [--work DIR] [--budgets 1024 2048 4096] [--depth 50] [--fresh]
    python eval/locomo.py answer --data locomo10.json --out OUT.json --answer-llm M --judge-llm M [--limit N]
        (QA accuracy on categories 1-4 with the paper's LoCoMo judge prompt; see eval/qa.py)

Scoring follows LoCoMo's own retrieval evaluation (task_eval in its repository): per question, the share of its
evidence dia_ids among the top-k retrieved turns, averaged over questions; questions without evidence are left out
(counted under "skipped"), and an entry like "D8:6; D9:17" is read as two ids. The headline metrics average
categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop); category 5 (adversarial) is reported on its
own under "category5." keys and in per_category.

The baselines index all turns of both speakers, as LoCoMo's retrieval experiments do (there is no user side), each
as "Speaker: text" with image captions as "[shares ...]". hindsight retains each conversation into one bank (one
session = one document, message ids = dia_ids) and ranks by the turns of its hits in order. Its query_time is the
date of the last session: LoCoMo questions carry no date of their own and are asked after the conversation ends,
so relative expressions ("last year") resolve against the end of the history.

Reruns resume as in eval/longmemeval.py: a change of config or code starts new results; banks are reused.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.datasets import LocomoConversation, load_locomo
from eval.haystack import BankDocument, Haystack, Retrieved
from eval.metrics import LOCOMO_KS, budget_evidence_recall, evidence_recall, grouped_means, mean_metrics
from eval.qa import (
    GoldAnswer,
    QAModels,
    QARun,
    add_qa_args,
    locomo_judge_prompt,
    parse_correct_wrong,
    run_answer,
)
from eval.runner import (
    Query,
    QuestionResult,
    Runner,
    add_common_args,
    chosen_systems,
    digest,
    print_groups,
    print_summary,
    write_reports,
)
from hindsight.embed.base import Embedder

CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
SCORED_CATEGORIES = ("1", "2", "3", "4")
SUMMARY_COLUMNS = (
    "evidence_recall@5", "evidence_recall@10", "evidence_recall@50", "budget_evidence_recall@1024",
    "budget_evidence_recall@4096", "category5.evidence_recall@10",
)


def parse_evidence(entries: list[str]) -> list[str]:
    """Evidence dia_ids; a few official entries hold several ids in one string."""
    return list(dict.fromkeys(e for entry in entries for e in re.split(r"[;,\s]+", entry) if e))


def haystack(conv: LocomoConversation) -> Haystack:
    sessions = conv.sessions
    key = digest(f"{s.id}|{s.date.isoformat()}|{len(s.messages)}" for s in sessions)
    return Haystack(
        bank_id=f"locomo-{conv.sample_id}-{key}",
        documents=[BankDocument(s.id, s.messages, s.date) for s in sessions],
        corpus=[(m.id or "", f"{m.speaker}: {m.content}") for s in sessions for m in s.messages],
    )


@dataclass(frozen=True)
class LocomoQuestion:
    """One official QA item, as the runner asks it."""

    query: Query
    qa: dict[str, Any]

    def evidence(self) -> list[str]:
        return parse_evidence(self.qa.get("evidence", []))


def questions(conv: LocomoConversation) -> list[LocomoQuestion]:
    """The conversation's QA items, asked against the whole conversation at the date of its last session."""
    conv_haystack = cache(partial(haystack, conv))
    return [LocomoQuestion(Query(id=f"{conv.sample_id}:q{i}", group=str(qa["category"]), text=qa["question"],
                                 query_time=conv.sessions[-1].date, haystack=conv_haystack), qa)
            for i, qa in enumerate(conv.qa)]


def score(evidence: list[str], retrieved: Retrieved) -> tuple[dict[str, float], dict[str, Any]]:
    metrics = {f"evidence_recall@{k}": round(evidence_recall(retrieved.ranked_turns, evidence, k), 6)
               for k in LOCOMO_KS}
    for budget, packed in sorted(retrieved.packed.items()):
        metrics[f"budget_evidence_recall@{budget}"] = round(budget_evidence_recall(packed, evidence), 6)
    top10 = set(retrieved.ranked_turns[:10])
    detail = {"evidence": evidence, "missed_at_10": [e for e in evidence if e not in top10],
              "ranked_turns": retrieved.ranked_turns[:20]}
    return metrics, detail


def summarize(results: list[QuestionResult]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    main = mean_metrics(r.metrics for r in results if r.group in SCORED_CATEGORIES)
    adversarial = mean_metrics(r.metrics for r in results if r.group not in SCORED_CATEGORIES)
    metrics = {**main, **{f"category5.{k}": v for k, v in adversarial.items()}}
    return metrics, grouped_means([r.metrics for r in results], [r.group for r in results], order=int)


def retrieval(args: argparse.Namespace, embedder: Embedder | None) -> int:
    conversations = load_locomo(args.data)
    queries: list[Query] = []
    evidence: dict[str, list[str]] = {}
    skipped: Counter[str] = Counter()
    for conv in conversations:
        for question in questions(conv):
            ids = question.evidence()
            if not ids:
                skipped["no evidence"] += 1
                continue
            evidence[question.query.id] = ids
            queries.append(question.query)
    runner = Runner(args, "locomo", "per_category", {
        "ks": list(LOCOMO_KS), "baseline_corpus": "all turns, 'Speaker: text'",
        "hindsight_ranking": "turns of the hits in rank order",
        "hindsight_query_time": "date of the last session",
    }, embedder)
    reports = runner.run(chosen_systems(args.system), queries,
                         lambda query, retrieved: score(evidence[query.id], retrieved), summarize)
    write_reports(args.out, reports, {"skipped": dict(skipped), "category_names": CATEGORIES})
    counts = Counter(q.group for q in queries)
    title = (f"LoCoMo retrieval, {args.data.name}: {sum(counts[c] for c in SCORED_CATEGORIES)} questions in "
             f"categories 1-4, {counts['5']} adversarial, skipped {dict(skipped)}")
    print_summary(title, reports, SUMMARY_COLUMNS)
    print_groups("per category", reports, "per_category", "evidence_recall@10")
    return 0


def answer(args: argparse.Namespace, embedder: Embedder | None, models: QAModels | None) -> int:
    """QA accuracy on categories 1-4 (adversarial questions have no answer to grade), grouped by category."""
    queries: list[Query] = []
    gold: dict[str, GoldAnswer] = {}
    for conv in load_locomo(args.data):
        for question in questions(conv):
            if question.query.group in SCORED_CATEGORIES:
                gold[question.query.id] = GoldAnswer(str(question.qa["answer"]), locomo_judge_prompt,
                                                     parse_correct_wrong)
                queries.append(question.query)
    queries = queries[: args.limit]
    title = f"LoCoMo QA, {args.data.name}: {len(queries)} questions in categories 1-4"
    return run_answer(args, QARun("locomo", "per_category", "Hindsight paper A.4 LoCoMo prompt", queries, gold,
                                  title, {"category_names": CATEGORIES}), embedder, models)


def main(argv: list[str] | None = None, embedder: Embedder | None = None, models: QAModels | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    add_common_args(commands.add_parser("retrieval", help="retrieval metrics of the baselines and hindsight"))
    sub = commands.add_parser("answer", help="QA accuracy: recall, answer model, judge model")
    add_common_args(sub)
    add_qa_args(sub)
    sub.add_argument("--limit", type=int, default=None, help="only the first N scored questions")
    args = parser.parse_args(argv)
    return answer(args, embedder, models) if args.command == "answer" else retrieval(args, embedder)


if __name__ == "__main__":
    sys.exit(main())
