"""Retrieval metrics: LongMemEval's session-level recall and NDCG as its official code computes them, evidence
recall at k, and evidence recall of a token-budget-packed context."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hindsight.text import split_sentences

LME_KS = (1, 3, 5, 10)
LOCOMO_KS = (5, 10, 20, 50)
BUDGETS = (1024, 2048, 4096)


def dcg(relevances: Sequence[float], k: int) -> float:
    """DCG at k the way LongMemEval's eval_utils computes it: rel_1 + sum over positions p >= 2 of rel_p / log2(p).

    Positions 1 and 2 weigh the same; this differs from the textbook log2(p + 1) and is kept for comparability.
    """
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(p) for p, r in enumerate(rel[1:], start=2))


def ndcg(ranked_relevant: Sequence[bool], n_relevant: int, k: int) -> float:
    """NDCG at k; the ideal ranking puts all `n_relevant` relevant items of the corpus first."""
    ideal = dcg([1.0] * min(n_relevant, k), k)
    if ideal == 0:
        return 0.0
    return dcg([float(r) for r in ranked_relevant], k) / ideal


@dataclass(frozen=True)
class SessionScores:
    recall_any: float
    recall_all: float
    ndcg_any: float
    effective_k: int  # ranked turns needed to cover k distinct sessions


def _extend(ranked_labels: Sequence[str], k: int) -> tuple[list[str], int]:
    """The first k distinct labels, and how many ranked turns it took to see them (the extended k).

    Like the official loop, a ranking with fewer than k distinct labels extends k past its end.
    """
    seen: dict[str, None] = {}
    used = 0
    for label in ranked_labels:
        if len(seen) == k:
            break
        seen.setdefault(label)
        used += 1
    return list(seen), used if len(seen) == k else max(k, len(ranked_labels) + 1)


def session_scores(ranked_sessions: Sequence[str], correct: Collection[str], k: int) -> SessionScores:
    """Session-level scores at k (docs/ARCHITECTURE.md, Measuring): a turn ranking is read as sessions in the order
    of their first turn.

    k is extended until the top turns cover k distinct sessions; recall_any / recall_all ask whether any / all
    correct sessions are among them, and NDCG ranks those k sessions (relevance 1 for a correct session).
    """
    top, effective = _extend(ranked_sessions, k)
    relevant = [s in correct for s in top]
    return SessionScores(
        recall_any=float(any(relevant)),
        recall_all=float(all(c in top for c in correct)),
        ndcg_any=ndcg(relevant, len(correct), k),
        effective_k=effective,
    )


def official_session_label(session_id: str, relevant_turn: bool) -> str:
    """The session a ranked turn counts for in the official LongMemEval code.

    Its corpus renames the turns of an evidence session that carry no evidence ('answer' -> 'noans'), so those
    turns count as a separate, irrelevant session: finding the right session through the wrong turn scores 0.
    """
    if relevant_turn or "answer" not in session_id:
        return session_id
    return session_id.replace("answer", "noans")


def official_session_scores(ranked_labels: Sequence[str], correct: Collection[str], n_relevant_turns: int,
                            k: int) -> SessionScores:
    """Session-level scores exactly as LongMemEval's evaluate_retrieval_turn2session computes them.

    Labels come from official_session_label. k is extended as in session_scores, but NDCG stays at turn level:
    over the first (extended) k turns, each relevant turn counting 1, against an ideal of all relevant turns first.
    """
    top, effective = _extend(ranked_labels, k)
    return SessionScores(
        recall_any=float(any(c in top for c in correct)),
        recall_all=float(all(c in top for c in correct)),
        ndcg_any=ndcg([label in correct for label in ranked_labels], n_relevant_turns, effective),
        effective_k=effective,
    )


def evidence_recall(ranked_turns: Sequence[str], evidence: Collection[str], k: int) -> float:
    """Share of the evidence turns among the first k ranked turns."""
    top = set(ranked_turns[:k])
    return sum(e in top for e in evidence) / len(evidence)


def budget_evidence_recall(packed_turns: Collection[str], evidence: Collection[str]) -> float:
    """Share of the evidence turns that lie in the packed context."""
    return sum(e in packed_turns for e in evidence) / len(evidence)


@dataclass(frozen=True)
class TurnText:
    """A turn as the history holds it: its text, and whether the agent wrote it."""

    text: str
    assistant: bool


@dataclass(frozen=True)
class PackedHit:
    """A packed hit as the metric reads it: the turns its unit covers, the unit's whole text and the text packed."""

    turn_ids: Sequence[str]
    text: str
    context: str


def _norm(text: str) -> str:
    return " ".join(text.split())


def shown_turns(hits: Iterable[PackedHit], turns: Mapping[str, TurnText]) -> set[str]:
    """Turns whose text the packed context shows. A hit shows a person's turn when every sentence of the turn that
    its unit holds is in the packed context (a unit may hold one chunk of a split turn), and an assistant's turn
    when at least one of them is. A turn whose sentences its unit does not hold verbatim counts only when the hit is
    packed whole. A packed hit's unit is not enough: an excerpt may have elided the turn."""
    shown: set[str] = set()
    for hit in hits:
        text, context = _norm(hit.text), _norm(hit.context)
        for turn_id in hit.turn_ids:
            turn = turns.get(turn_id)
            held = [] if turn is None else [s for s in map(_norm, split_sentences(turn.text)) if s and s in text]
            if not held:
                ok = context == text
            elif turn is not None and turn.assistant:
                ok = any(s in context for s in held)
            else:
                ok = all(s in context for s in held)
            if ok:
                shown.add(turn_id)
    return shown


def flatten_turns(groups: Iterable[Sequence[str]]) -> list[str]:
    """Turn ids of ranked hits (each covering one or more turns) as one ranked turn list, first mention wins."""
    return list(dict.fromkeys(t for group in groups for t in group))


def pack_greedy(items: Iterable[tuple[Sequence[str], int]], budget: int) -> set[str]:
    """Turns of the ranked (turns, tokens) items that fit a token budget, taking each item that still fits."""
    used = 0
    packed: set[str] = set()
    for turns, tokens in items:
        if used + tokens <= budget:
            used += tokens
            packed.update(turns)
    return packed


def mean_metrics(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per-key means over rows (keys missing from a row are averaged over the rows that have them)."""
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for key, value in row.items():
            sums[key] += value
            counts[key] += 1
    return {key: round(sums[key] / counts[key], 4) for key in sums}


def grouped_means(rows: Sequence[Mapping[str, float]], groups: Sequence[str],
                  order: Callable[[str], Any] = str) -> dict[str, dict[str, float]]:
    """Means per group plus the group's question count, groups sorted by `order`."""
    by_group: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for row, group in zip(rows, groups, strict=True):
        by_group[group].append(row)
    return {g: {"questions": len(by_group[g]), **mean_metrics(by_group[g])} for g in sorted(by_group, key=order)}
