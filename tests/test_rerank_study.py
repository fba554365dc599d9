"""The rerank study's parts: candidate features from explanations, the pairwise fit, folds and per-ordering metrics."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from eval.rerank_study import (
    FEATURES,
    StudyQuestion,
    candidate_features,
    fit_pairwise,
    fold_of,
    learned_scores,
    metrics,
)
from hindsight.models import MemoryUnit, Network, Source
from hindsight.recall.types import Channel, ChannelHit, RecallHit

NOW = datetime(2024, 5, 1, tzinfo=timezone.utc)


def _hit(day: int, fused: float, rerank: float, channels: list[ChannelHit], tokens: int = 50) -> RecallHit:
    when = NOW + timedelta(days=day)
    unit = MemoryUnit(id=f"u{day}", bank_id="b", text="t", network=Network.EXPERIENCE, occurred_start=None,
                      occurred_end=None, mentioned_at=when, source=Source(document_id="d"), content_hash="h",
                      created_at=when)
    return RecallHit(unit=unit, text="t", tokens=tokens, channels=channels, fused_score=fused, rerank_score=rerank,
                     score=rerank)


def test_candidate_features_scale_within_the_query_and_read_the_explanations() -> None:
    hits = [_hit(0, 0.03, 2.0, [ChannelHit(channel=Channel.SEMANTIC, rank=1, score=0.6),
                                ChannelHit(channel=Channel.LEXICAL, rank=3, score=8.0)]),
            _hit(10, 0.01, 1.0, [ChannelHit(channel=Channel.LEXICAL, rank=1, score=4.0)])]
    first, second = (dict(zip(FEATURES, row, strict=True)) for row in candidate_features("what now?", hits))
    assert (first["fused"], second["fused"]) == (1.0, 0.0)
    assert (first["rerank"], second["rerank"]) == (1.0, 0.0)
    assert (first["semantic"], second["semantic"]) == (0.6, 0.0)
    assert (first["lexical"], second["lexical"]) == (1.0, 0.5)
    assert first["lexical_rr"] == pytest.approx(1 / 8) and second["semantic_rr"] == 0.0
    assert (first["recency"], second["recency"]) == (0.0, 1.0)
    assert second["recency_if_latest"] == 1.0  # "now" asks for the latest state
    assert (first["channels"], second["channels"]) == (0.5, 0.25)
    plain = dict(zip(FEATURES, candidate_features("what then?", hits)[1], strict=True))
    assert plain["recency_if_latest"] == 0.0


def test_fit_pairwise_weights_the_informative_feature_and_ranks_relevant_first() -> None:
    rng = np.random.RandomState(1)
    groups = []
    for _ in range(30):
        y = (rng.rand(20) < 0.2).astype(float)
        y[0] = 1.0
        X = np.stack([y + rng.normal(0, 0.3, 20), rng.normal(0, 1, 20)], axis=1)  # column 1 is noise
        groups.append((X, y))
    w = fit_pairwise(groups)
    assert w[0] > 1.0 and abs(w[1]) < 0.5 * w[0]
    X, y = groups[0]
    assert y[np.argmax(X @ w)] == 1.0


def test_fit_pairwise_needs_a_question_with_both_kinds_of_candidate() -> None:
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        fit_pairwise([(np.ones((3, 2)), np.ones(3)), (np.ones((2, 2)), np.zeros(2))])


def _question(dataset: str, truth: list[str], turns: list[list[str]]) -> StudyQuestion:
    features = [[float(i == 0)] + [0.0] * (len(FEATURES) - 1) for i in range(len(turns))]
    return StudyQuestion(dataset, "q", truth, turns, features)


def test_folds_are_deterministic_and_cover_every_question() -> None:
    questions = [_question("locomo", ["D1:1"], [["D1:1"]]) for _ in range(13)]
    folds = fold_of(questions, 4)
    assert folds == fold_of(questions, 4)
    assert sorted(set(folds)) == [0, 1, 2, 3] and max(folds.count(k) for k in range(4)) == 4


def test_learned_scores_are_fitted_without_the_question_they_score() -> None:
    # Relevant candidates sit first in every question and carry feature 0: every held-out fold learns that.
    questions = [_question("locomo", ["D1:1"], [["D1:1"], ["D1:2"], ["D1:3"]]) for _ in range(6)]
    scores = learned_scores(questions, folds=3)
    assert all(int(np.argmax(s)) == 0 for s in scores)


def test_metrics_read_the_ordering_per_dataset() -> None:
    lme = _question("longmemeval", ["answer_1"], [["s_2:0"], ["s_3:1"], ["answer_1:3"]])
    assert metrics(lme, np.array([0.0, 0.0, 1.0]))["ndcg_any@5"] == 1.0
    late = metrics(lme, np.array([2.0, 1.0, 0.0]))  # third: the official discount leaves ranks 1 and 2 alike
    assert late["ndcg_any@5"] < 1.0 and late["recall_all@5"] == 1.0
    loc = _question("locomo", ["D1:2", "D1:9"], [["D1:1"], ["D1:2"]])
    assert metrics(loc, np.array([1.0, 0.0]))["evidence_recall@5"] == 0.5
    assert loc.labels().tolist() == [0.0, 1.0]
