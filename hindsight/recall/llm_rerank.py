"""The listwise LLM reranker (`recall.rerank.backend: llm`): the blend scores the window, then the LLM reorders the
blend's top `llm_top_n` candidates in one structured call.

The model is shown the query's date, the numbered candidates, one line each (its text cut to `TEXT_TOKENS` tokens,
then the day of the unit's fact), and the query; it answers `{"ranking": [numbers, most relevant first]}`: the
candidates that answer the query. Numbers it repeats or does not know are dropped; candidates it leaves out follow
the ranked ones in the blend's order, and so does the rest of the window. An LLM failure, or no LLM, leaves the
blend's scores, with a warning."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from datetime import UTC
from functools import cache
from typing import Any

from pydantic import AliasChoices, Field, create_model

from hindsight.errors import LLMError
from hindsight.llm.base import LLM, ChatMessage
from hindsight.llm.schema import LenientOutput, Numbers
from hindsight.recall.format import TokenCounter, unit_day
from hindsight.recall.ranked import Candidate
from hindsight.recall.rerank import Reranker, RerankQuery

log = logging.getLogger(__name__)

# Enough of a unit for the model to judge it; keeps the prompt of 20 candidates under 2,000 tokens, which a small
# local model's 4,096-token context holds with room for the reply.
TEXT_TOKENS = 80
# No re-ask: a recall waits for this call, and a bad reply costs only the LLM's reordering (the blend stands).
RETRIES = 0
# Room for the whitespace a model may put between the ranking's numbers, beyond the longest compact ranking.
_REPLY_SLACK = 16

# Small local models copy a list's numbers back in order when asked to rank all of it; asked which memories
# answer, with one worked example, they pick. The candidates they leave out keep the blend's order.
SYSTEM = ('You pick the memories that answer a question. Example: for the memories "1. Tom works in a bakery." '
          '"2. Tom lives in Oslo." "3. Tom likes jazz." and the question "Where does Tom live?", the reply is '
          '{"ranking": [2]}.')

_SPACE = re.compile(r"\s+")
_ALIASES = AliasChoices("ranking", "order", "numbers")  # what small models call the list


class RankingOut(LenientOutput):
    """The model's ranking: candidate numbers, most relevant first."""

    ranking: Numbers = Field(validation_alias=_ALIASES)


@cache
def ranking_schema(count: int) -> type[RankingOut]:
    """RankingOut whose JSON schema allows at most `count` numbers, each from 1 to `count`. Shown to the model (a
    constrained decoder stops there), not enforced on validation: numbers out of range are dropped instead."""
    bounds: dict[str, Any] = {"maxItems": count, "items": {"type": "integer", "minimum": 1, "maximum": count}}
    field = Field(validation_alias=_ALIASES, json_schema_extra=bounds)
    schema: type[RankingOut] = create_model("RankingOut", __base__=RankingOut, ranking=(Numbers, field))
    return schema


def reply_tokens(count: int) -> int:
    """max_tokens for a ranking of `count` numbers: the characters of the longest valid reply (a token covers at
    least one of them), and some slack."""
    return len(json.dumps({"ranking": list(range(1, count + 1))})) + _REPLY_SLACK


def rank_messages(query: RerankQuery, lines: Sequence[str]) -> list[ChatMessage]:
    """The prompt: the question's date, the numbered candidates, the question, what to reply."""
    # The date first: a server's repeat penalty (llama.cpp's default, which the OpenAI API cannot turn off) weighs
    # against the digits of the prompt's last tokens, and so against the numbers the reply is made of.
    today = f"Today is {query.when.date().isoformat()}.\n\n" if query.when is not None else ""
    numbered = "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
    return [
        ChatMessage("system", SYSTEM),
        ChatMessage("user", f"{today}Memories:\n{numbered}\n\nQuestion: {query.text}\n\nWhich memories answer the "
                            'question? Reply with their numbers, the best answer first, as JSON: {"ranking": [...]}. '
                            "Leave out memories that do not answer it."),
    ]


def merge_ranking(ranking: Sequence[int], count: int) -> list[int]:
    """Positions 0..count-1 in the new order: the model's numbers (1-based; repeats and unknown numbers dropped),
    then the positions it left out, in their order."""
    ranked = [n - 1 for n in dict.fromkeys(ranking) if 1 <= n <= count]
    seen = set(ranked)
    return ranked + [i for i in range(count) if i not in seen]


def reordered_scores(base: Sequence[float], order: Sequence[int], head: Sequence[int]) -> list[float]:
    """Scores that sort the candidates `head` (indexes into `base`, in `order`'s new order) above the rest, which
    keep their base scores. The head takes the head's base scores from the highest down, raised by the least float
    step where needed so that each is strictly above the next (and the last above every other candidate): the
    pipeline's stable sort would otherwise let a tie fall back to the fused order."""
    out = list(base)
    ranked = [head[i] for i in order]
    values = sorted((base[i] for i in head), reverse=True)
    chosen = set(head)
    rest = [s for i, s in enumerate(base) if i not in chosen]
    floor = max(rest) if rest else -math.inf
    for index, value in zip(reversed(ranked), reversed(values), strict=True):
        value = max(value, math.nextafter(floor, math.inf))
        out[index] = floor = value
    return out


class LLMReranker(Reranker):
    """`base` (the blend) scores the window; the LLM reorders the base's top `top_n` candidates."""

    name = "llm"

    def __init__(self, base: Reranker, llm: LLM | None, top_n: int, tokens: TokenCounter,
                 text_tokens: int = TEXT_TOKENS) -> None:
        self.base = base
        self.llm = llm
        self.top_n = top_n
        self.tokens = tokens
        self.text_tokens = text_tokens
        self.needs_vectors = base.needs_vectors
        self.needs_query_vector = base.needs_query_vector

    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        base = self.base.scores(query, candidates)
        # A base that keeps the fused order: scores that say that order, for the LLM's to reorder.
        scores = list(base) if base is not None else [float(len(candidates) - i) for i in range(len(candidates))]
        head = sorted(range(len(candidates)), key=lambda i: -scores[i])[: self.top_n]
        if len(head) < 2:
            return base
        if self.llm is None:
            log.warning("recall.rerank.backend llm: no LLM is configured; the blend's order stands")
            return base
        try:
            ranking = self._ask(self.llm, query, [candidates[i] for i in head])
        except LLMError as exc:
            log.warning("LLM rerank failed, the blend's order stands: %s", exc)
            return base
        return reordered_scores(scores, merge_ranking(ranking, len(head)), head)

    def _ask(self, llm: LLM, query: RerankQuery, candidates: Sequence[Candidate]) -> list[int]:
        """The model's ranking of `candidates` (1-based numbers, unchecked)."""
        zone = query.when.tzinfo if query.when is not None else None
        # The date after the text: between a candidate's number and its text, the date's digits drew small models'
        # picks to the wrong number.
        lines = [f"{self._line(c.unit.text)} ({unit_day(c.unit, zone or UTC).isoformat()})" for c in candidates]
        reply = llm.structured(rank_messages(query, lines), ranking_schema(len(lines)), max_retries=RETRIES,
                               max_tokens=reply_tokens(len(lines)), temperature=0.0)
        return list(reply.value.ranking)

    def _line(self, text: str) -> str:
        """The unit's text on one line, cut to `text_tokens` tokens."""
        return self.tokens.cut(_SPACE.sub(" ", text).strip(), self.text_tokens)
