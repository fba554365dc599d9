"""The figures of bench/reflect_opinions.py and bench/opinion_claims.py: what they count."""

from __future__ import annotations

from bench.opinion_claims import score
from bench.reflect_opinions import load_conversations, summary


def test_summary_counts_stored_rejected_and_the_confidence_distribution() -> None:
    answers = [
        {"refuses": False, "opinion_error": None,
         "opinions": [{"text": "I think the move was good for him.", "confidence": 0.6, "evidence": 2}],
         "rejected": [{"text": "I believe Danny lives in Portland.", "reason": "factual_claim"},
                      {"text": "I think he should join the club.", "reason": "uncited"}], "prompt_tokens": 900},
        {"refuses": True, "opinion_error": "the answer is a refusal: it shows no opinion", "opinions": [],
         "rejected": [], "prompt_tokens": 500},
        {"refuses": False, "opinion_error": None,
         "opinions": [{"text": "I think he should wait.", "confidence": 0.5, "evidence": 1},
                      {"text": "I think the plan is too ambitious.", "confidence": 0.6, "evidence": 2}],
         "rejected": [{"text": "Danny works at Cascade Cycles.", "reason": "not_first_person"}], "prompt_tokens": 1000},
    ]  # fmt: skip
    got = summary(answers)
    assert {k: v for k, v in got.items() if k != "candidate_texts"} == {
        "answers": 3,
        "candidates": 6,
        "opinions_stored": 3,
        "factual_claims_rejected": 1,
        "uncited_rejected": 1,
        "unsupported_rejected": 0,
        "stored_without_evidence": 0,
        "rejected_by_reason": {"factual_claim": 1, "not_first_person": 1, "uncited": 1},
        "confidence_distribution": {"0.50": 1, "0.60": 2},
        "opinion_errors": 1,
        "refusing_answers": 1,
        "prompt_tokens_per_answer": 800,
    }
    verdicts = {c["text"]: c["judgment"] for c in got["candidate_texts"]}
    assert verdicts["I believe Danny lives in Portland."] is False and verdicts["I think he should wait."] is True


def test_score_counts_claims_of_fact_kept_and_judgments_lost() -> None:
    candidates = [{"text": "I think the move was good for him.", "label": "judgment"},
                  {"text": "I think Danny likes the rain.", "label": "judgment"},  # a mislabel the rule disputes
                  {"text": "I believe Danny lives in Portland.", "label": "factual"}]  # fmt: skip
    got = score(candidates)
    assert (got["kept_as_judgments"], got["factual_kept"], got["judgments_rejected"]) == (1, 0, 1)
    assert (got["accuracy"], got["judgment_precision"], got["judgment_recall"]) == (0.667, 1.0, 0.5)
    assert got["mistakes"] == [{"text": "I think Danny likes the rain.", "label": "judgment"}]


def test_the_bench_conversations_have_questions_and_sessions() -> None:
    conversations = load_conversations()
    assert len(conversations) >= 3
    assert all(len(c["questions"]) >= 3 and c["sessions"] and c["profile"]["name"] for c in conversations)
