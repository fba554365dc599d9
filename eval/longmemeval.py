"""LongMemEval retrieval: session-level recall_any, recall_all and ndcg_any at k; evidence recall under a budget.

    python eval/longmemeval.py retrieval --data longmemeval_s.json[.gz] --out OUT.json [--limit N] [--system S ...]
        [--work DIR] [--budgets 1024 2048 4096] [--depth 50] [--bm25-tokens words|split] [--fresh]
        [--evidence user|assistant]
    python eval/longmemeval.py answer --data ... --out OUT.json --answer-llm M --judge-llm M [--limit N]
        [--answer-budget 2048]   (QA accuracy with the official per-type judge prompts; see eval/qa.py)

As in the official code (LongMemEval src/retrieval): abstention (_abs) questions and questions without a user-side
has_answer turn are skipped; the baselines index user turns only; a session is relevant when its id contains
"answer" and one of its user turns has has_answer; a turn ranking is read as sessions, extending k until k distinct
sessions are covered; NDCG uses the official discount (eval/metrics.py).
  session.*   docs/ARCHITECTURE.md, Measuring: a relevant session counts through any of its turns; NDCG over the
  first k sessions.
  official.*  the official evaluate_retrieval_turn2session exactly: the non-evidence turns of an evidence session
              count as another, irrelevant session ("noans_..."), and NDCG is taken over turns.
budget_evidence_recall@B is the share of the relevant turns (user turns with has_answer) inside the context packed
for B cl100k tokens: the baselines pack their ranked turns greedily, hindsight packs in recall (a unit covers the
turns of its source.turn_ids). A hindsight turn counts only when the packed context shows its text
(eval/metrics.shown_turns): a packed unit whose excerpt elided the turn does not count it, and a reply packed below
the turn it answers shows that turn too.
--evidence assistant scores, instead, the questions about what the agent said (single-session-assistant), with the
assistant's has_answer turns as the relevant ones: not an official metric, it measures what packing keeps of replies.

hindsight retains each question's haystack into its own bank (one session = one document, message ids
"<session id>:<turn index>", timestamps = the session date) and recalls with query_time = the question date. The
hindsight systems rank by the turns of their hits in order (a hit covering a user and an assistant turn yields both);
their turn list is scored exactly like a baseline's.

With several systems, each gets OUT with its name before the suffix and OUT holds the combined summary.
Per-question results go to DIR/results as they are made; a rerun resumes, unless the config or the code (hindsight's and
these scripts' sources) changed, which starts new results. Banks in DIR are reused across code versions; a bank
retained by another version is reported after the run (delete the memory directory to retain anew).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.haystack import BankDocument, Haystack, Retrieved
from eval.longmemeval_data import LmeQuestion, load_longmemeval, session_of
from eval.metrics import (
    LME_KS,
    budget_evidence_recall,
    grouped_means,
    mean_metrics,
    official_session_label,
    official_session_scores,
    session_scores,
)
from eval.qa import (
    GoldAnswer,
    QAModels,
    QARun,
    add_qa_args,
    longmemeval_judge_prompt,
    parse_yes_no,
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

SUMMARY_COLUMNS = (
    "session.recall_any@5", "session.recall_all@5", "session.ndcg_any@5", "session.recall_all@10",
    "official.recall_all@5", "official.ndcg_any@5", "budget_evidence_recall@1024", "budget_evidence_recall@4096",
)


def haystack(question: LmeQuestion) -> Haystack:
    """The question's history; the bank id carries a digest of it, so another file's haystack never reuses a bank."""
    key = digest(f"{s.id}|{s.date.isoformat()}|{sum(len(t.content) for t in s.turns)}" for s in question.sessions)
    return Haystack(
        bank_id=f"lme-{question.question_id}-{key}",
        # retain rejects a conversation without text; such a session holds nothing to find anyway.
        documents=[BankDocument(s.id, s.messages(), s.date) for s in question.sessions
                   if any(t.content.strip() for t in s.turns)],
        corpus=question.user_turns(),
    )


def query(question: LmeQuestion) -> Query:
    """The question as the runner asks it: against its own haystack, at the question date."""
    return Query(id=question.question_id, group=question.question_type, text=question.question,
                 query_time=question.question_date, haystack=partial(haystack, question))


def score(question: LmeQuestion, retrieved: Retrieved, side: str = "user") -> tuple[dict[str, float], dict[str, Any]]:
    relevant = question.relevant_turns(side)
    correct = question.relevant_sessions(side)
    sessions = [session_of(t) for t in retrieved.ranked_turns]
    labels = [official_session_label(session_of(t), t in relevant) for t in retrieved.ranked_turns]
    metrics: dict[str, float] = {}
    effective_k = {}
    for k in LME_KS:
        for prefix, s in (("session", session_scores(sessions, correct, k)),
                          ("official", official_session_scores(labels, correct, len(relevant), k))):
            metrics[f"{prefix}.recall_any@{k}"] = s.recall_any
            metrics[f"{prefix}.recall_all@{k}"] = s.recall_all
            metrics[f"{prefix}.ndcg_any@{k}"] = round(s.ndcg_any, 6)
        effective_k[k] = s.effective_k
    for budget, packed in sorted(retrieved.packed.items()):
        metrics[f"budget_evidence_recall@{budget}"] = round(budget_evidence_recall(packed, relevant), 6)
    detail = {
        "relevant_sessions": sorted(correct),
        "relevant_turns": sorted(relevant),
        "ranked_sessions": list(dict.fromkeys(sessions))[:10],
        "ranked_turns": retrieved.ranked_turns[:20],
        "official_effective_k": effective_k,
    }
    return metrics, detail


def summarize(results: list[QuestionResult]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    return mean_metrics(r.metrics for r in results), grouped_means([r.metrics for r in results],
                                                                   [r.group for r in results])


def retrieval(args: argparse.Namespace, embedder: Embedder | None) -> int:
    questions = load_longmemeval(args.data)[: args.limit]
    side = args.evidence
    skipped = Counter(reason for q in questions if (reason := q.skip_reason(side)))
    scored = {q.question_id: q for q in questions if q.skip_reason(side) is None}
    queries = [query(q) for q in scored.values()]
    runner = Runner(args, "longmemeval", "per_type", {
        "ks": list(LME_KS), "baseline_corpus": "user turns", "hindsight_ranking": "turns of the hits in rank order",
        "evidence": side,
    }, embedder)
    reports = runner.run(chosen_systems(args.system), queries,
                         lambda query, retrieved: score(scored[query.id], retrieved, side), summarize)
    write_reports(args.out, reports, {"skipped": dict(skipped), "file_questions": len(questions)})
    title = f"LongMemEval retrieval, {args.data.name}: {len(scored)} questions scored, skipped {dict(skipped)}"
    print_summary(title, reports, SUMMARY_COLUMNS)
    print_groups("per question type", reports, "per_type", "session.recall_all@5")
    return 0


def answer(args: argparse.Namespace, embedder: Embedder | None, models: QAModels | None) -> int:
    """QA accuracy: every question (abstention ones too, with their own judge prompt), grouped by type."""
    questions = load_longmemeval(args.data)[: args.limit]
    gold = {q.question_id: GoldAnswer(q.answer, partial(longmemeval_judge_prompt, q.question_type, q.is_abstention),
                                      parse_yes_no) for q in questions}
    queries = [query(q) for q in questions]
    title = f"LongMemEval QA, {args.data.name}: {len(queries)} questions"
    return run_answer(args, QARun("longmemeval", "per_type", "LongMemEval evaluate_qa.py prompts", queries, gold,
                                  title, {"file_questions": len(questions)}), embedder, models)


def main(argv: list[str] | None = None, embedder: Embedder | None = None, models: QAModels | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("retrieval", "retrieval metrics of the baselines and hindsight"),
                            ("answer", "QA accuracy: recall, answer model, judge model")):
        sub = commands.add_parser(name, help=help_text)
        add_common_args(sub)
        sub.add_argument("--limit", type=int, default=None, help="only the first N questions of the file")
        if name == "answer":
            add_qa_args(sub)
        else:
            sub.add_argument("--evidence", choices=["user", "assistant"], default="user",
                             help="score the questions whose evidence turns are the user's (the official metric) or "
                                  "the assistant's (what the agent said; the baselines index user turns only)")
    args = parser.parse_args(argv)
    return answer(args, embedder, models) if args.command == "answer" else retrieval(args, embedder)


if __name__ == "__main__":
    sys.exit(main())
