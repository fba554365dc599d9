"""Retrieval metrics against hand-computed values, and the dataset rules that decide what is scored."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import pytest

from eval.baselines import rrf, split_tokens, word_tokens
from eval.locomo import parse_evidence
from eval.longmemeval_data import LmeQuestion, LmeSession, LmeTurn, load_longmemeval, parse_lme_date
from eval.metrics import (
    budget_evidence_recall,
    dcg,
    evidence_recall,
    flatten_turns,
    grouped_means,
    mean_metrics,
    ndcg,
    official_session_label,
    official_session_scores,
    pack_greedy,
    session_scores,
)

FIXTURES = Path(__file__).parent / "fixtures"
LOG3 = math.log2(3)


def test_dcg_uses_the_official_discount() -> None:
    # rel_1 + rel_2/log2(2) + rel_3/log2(3): positions 1 and 2 weigh the same.
    assert dcg([1, 1, 1], 3) == pytest.approx(2 + 1 / LOG3)
    assert dcg([1, 1, 1], 2) == pytest.approx(2.0)
    assert dcg([], 5) == 0.0


def test_ndcg() -> None:
    assert ndcg([False, True], 1, 5) == pytest.approx(1.0)
    assert ndcg([False, False, True], 1, 5) == pytest.approx(1 / LOG3)
    assert ndcg([True, False, True], 2, 3) == pytest.approx((1 + 1 / LOG3) / 2)
    assert ndcg([False, False], 0, 5) == 0.0


def test_session_scores_extend_k_to_distinct_sessions() -> None:
    ranked = ["a", "a", "b", "c", "a", "d"]  # the session of each ranked turn
    correct = {"c", "d"}
    at2 = session_scores(ranked, correct, 2)  # sessions a, b after 3 turns
    assert (at2.recall_any, at2.recall_all, at2.ndcg_any, at2.effective_k) == (0.0, 0.0, 0.0, 3)
    at3 = session_scores(ranked, correct, 3)  # a, b, c after 4 turns
    assert (at3.recall_any, at3.recall_all, at3.effective_k) == (1.0, 0.0, 4)
    assert at3.ndcg_any == pytest.approx((1 / LOG3) / 2)
    at4 = session_scores(ranked, correct, 4)  # a, b, c, d after 6 turns
    assert (at4.recall_any, at4.recall_all, at4.effective_k) == (1.0, 1.0, 6)
    assert at4.ndcg_any == pytest.approx((1 / LOG3 + 1 / 2) / 2)


def test_official_label_splits_evidence_sessions() -> None:
    assert official_session_label("answer_ab12", True) == "answer_ab12"
    assert official_session_label("answer_ab12", False) == "noans_ab12"
    assert official_session_label("sharegpt_x_0", False) == "sharegpt_x_0"


def test_official_scores_do_not_credit_the_wrong_turn_of_the_right_session() -> None:
    # Turn 1 is a non-evidence turn of the evidence session, turn 3 its evidence turn.
    sessions = ["answer_x", "y", "answer_x", "z"]
    labels = ["noans_x", "y", "answer_x", "z"]
    assert session_scores(sessions, {"answer_x"}, 2).recall_any == 1.0
    assert session_scores(sessions, {"answer_x"}, 2).ndcg_any == pytest.approx(1.0)
    at2 = official_session_scores(labels, {"answer_x"}, 1, 2)
    assert (at2.recall_any, at2.ndcg_any, at2.effective_k) == (0.0, 0.0, 2)
    at3 = official_session_scores(labels, {"answer_x"}, 1, 3)
    assert at3.recall_any == 1.0
    assert at3.ndcg_any == pytest.approx(1 / LOG3)  # turn-level relevance at turn 3


def test_official_scores_ndcg_counts_every_relevant_turn() -> None:
    # Two evidence turns of one session at ranks 1 and 3; the ideal puts both first.
    labels = ["answer_x", "y", "answer_x", "z"]
    s = official_session_scores(labels, {"answer_x"}, 2, 3)
    assert s.ndcg_any == pytest.approx((1 + 1 / LOG3) / 2)
    assert session_scores(labels, {"answer_x"}, 3).ndcg_any == pytest.approx(1.0)


def test_extension_past_the_end_of_a_short_ranking() -> None:
    assert official_session_scores(["a", "a"], {"a"}, 1, 3).effective_k == 3
    assert official_session_scores(["a", "a", "a", "b"], {"b"}, 1, 3).effective_k == 5
    short = session_scores(["a", "a", "b"], {"b"}, 5)
    assert (short.recall_all, short.ndcg_any) == (1.0, pytest.approx(1.0))


def test_evidence_and_budget_recall() -> None:
    ranked = ["D1:1", "D1:2", "D1:3"]
    assert evidence_recall(ranked, ["D1:3", "D2:1"], 2) == 0.0
    assert evidence_recall(ranked, ["D1:3", "D2:1"], 3) == 0.5
    assert budget_evidence_recall({"D1:3", "D2:1", "D9:9"}, ["D1:3", "D2:1"]) == 1.0


def test_pack_greedy_skips_what_does_not_fit() -> None:
    items = [(["t1"], 50), (["t2"], 80), (["t3", "t4"], 20), (["t5"], 31)]
    assert pack_greedy(items, 100) == {"t1", "t3", "t4"}
    assert pack_greedy(items, 0) == set()


def test_flatten_turns_keeps_first_mention() -> None:
    assert flatten_turns([["a", "b"], ["b", "c"], [], ["a", "d"]]) == ["a", "b", "c", "d"]


def test_means() -> None:
    rows = [{"m": 1.0, "n": 0.0}, {"m": 0.0}, {"m": 0.5, "n": 1.0}]
    assert mean_metrics(rows) == {"m": 0.5, "n": 0.5}
    groups = grouped_means(rows, ["10", "2", "2"], order=int)
    assert list(groups) == ["2", "10"]
    assert groups["2"] == {"questions": 2, "m": 0.25, "n": 1.0}


def test_rrf_and_tokenizers() -> None:
    # 0: 1/61 + 1/62, 2: 1/63 + 1/61, 1: 1/62 + 1/63
    assert rrf([[0, 1, 2], [2, 0, 1]]) == [0, 2, 1]
    assert word_tokens("The IKEA bookshelf? 4 hours!") == ["the", "ikea", "bookshelf", "4", "hours"]
    assert split_tokens("The IKEA bookshelf?") == ["The", "IKEA", "bookshelf?"]


def _question(qid: str, sessions: list[LmeSession]) -> LmeQuestion:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return LmeQuestion(qid, "multi-session", "q?", when, "a", sessions, [])


def test_longmemeval_skip_rules_and_relevance() -> None:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    user_evidence = LmeSession("answer_1", when, [LmeTurn("user", "x", True), LmeTurn("assistant", "y")])
    assistant_evidence = LmeSession("answer_2", when, [LmeTurn("user", "x"), LmeTurn("assistant", "y", True)])
    # has_answer outside an "answer" session is not evidence under the official rule.
    stray = LmeSession("plain_3", when, [LmeTurn("user", "x", True)])
    scored = _question("q1", [user_evidence, assistant_evidence, stray])
    assert scored.skip_reason() is None
    assert scored.relevant_turns() == {"answer_1:0"}
    assert scored.relevant_sessions() == {"answer_1"}
    assert scored.user_turns() == [("answer_1:0", "x"), ("answer_2:0", "x"), ("plain_3:0", "x")]
    assert _question("q2_abs", [user_evidence]).skip_reason() == "abstention"
    assert _question("q3", [assistant_evidence, stray]).skip_reason() == "no user-side evidence turn"


def test_longmemeval_loader_on_fixture() -> None:
    questions = load_longmemeval(FIXTURES / "longmemeval_tiny.json")
    assert [q.question_id for q in questions] == ["t001", "t002_abs"]
    first = questions[0]
    assert first.question_date == datetime(2024, 3, 10, 12, 0, tzinfo=timezone.utc)
    messages = first.sessions[1].messages()
    assert [m.id for m in messages] == ["answer_t001_a:0", "answer_t001_a:1", "answer_t001_a:2", "answer_t001_a:3"]
    assert messages[0].role == "user" and messages[0].timestamp == first.sessions[1].date
    assert parse_lme_date("2023/05/30 (Tue) 23:11") == datetime(2023, 5, 30, 23, 11, tzinfo=timezone.utc)


def test_locomo_evidence_parsing() -> None:
    assert parse_evidence(["D8:6; D9:17", "D1:2", "D1:2"]) == ["D8:6", "D9:17", "D1:2"]
    assert parse_evidence([]) == []
