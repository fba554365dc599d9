"""Reflect (CARA; docs/ARCHITECTURE.md, Reflect): recall across all networks, then one structured call that answers in
the bank's voice, citing its memories by number, and states the opinions the answer shows; the answer is checked for
grounding (grounding.py) and asked for once more when it is not; the opinions that pass opinion_check.py are stored."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hindsight.config import ReflectConfig
from hindsight.errors import InvalidInputError, LLMError
from hindsight.llm.base import LLM, ChatMessage, StructuredOutputError, StructuredResponse, is_refusal
from hindsight.llm.schema import with_max_items
from hindsight.models import BankProfile, LLMUsage
from hindsight.recall.pipeline import RecallPipeline
from hindsight.recall.types import RecallHit
from hindsight.reflect import grounding
from hindsight.reflect.disposition import system_message
from hindsight.reflect.opinion_check import check_opinions, stated_judgments
from hindsight.reflect.opinions import OpinionFormer
from hindsight.reflect.prompts import memory_sections, reflect_messages
from hindsight.reflect.schemas import ReflectOut, reflect_max_tokens
from hindsight.reflect.types import ReflectResult, Usage
from hindsight.reflect.writer import SourcesForgottenError
from hindsight.text import has_visible
from hindsight.units import BankHandle
from hindsight.validate import count

log = logging.getLogger(__name__)

# A model with a known context window reads at most this share of it as evidence: the rules, the question and the
# largest reply fit in the rest (a 4,096-token local model reads about 1,000 tokens of memories).
EVIDENCE_SHARE = 4


def evidence_budget(llm: LLM, budget: int) -> int:
    """The recall budget of a reflect's evidence: `budget`, at most a quarter of the model's context window."""
    window = llm.context_tokens
    return budget if window is None else max(1, min(budget, window // EVIDENCE_SHARE))


def cited_ids(reply: ReflectOut, hits: Sequence[RecallHit]) -> list[str]:
    """Unit ids of the numbered memories the reply cites (in its text, then its sources), in that order."""
    return [hits[n - 1].unit.id for n in grounding.citations(reply) if 1 <= n <= len(hits)]


class Reflector:
    """Answers a query from a bank's memories in the bank's voice and keeps the opinions the answer shows."""

    def __init__(self, llm: LLM, config: ReflectConfig, recall: RecallPipeline, former: OpinionFormer) -> None:
        self.llm = llm
        self.config = config
        self.recall = recall
        self.former = former

    @property
    def max_opinions(self) -> int:
        return self.config.opinions.max_per_reflect if self.config.opinions.enabled else 0

    def reflect(
        self, bank: BankHandle, profile: BankProfile, query: Any, budget: Any = None, query_time: Any = None
    ) -> ReflectResult:
        """Raises InvalidInputError (or ContentTooLargeError) for a bad query, budget or time, before any LLM call,
        and LLMError when no valid reply comes. An answer that is not grounded after one more try is returned with
        `weak` saying why. A refusal is returned as the answer, without opinions. Candidates that are not opinions
        (opinion_check.py) are reported in `rejected_opinions`, never stored. Opinion events are dated at the query
        time (the bank's time), now when none is given."""
        started = time.perf_counter()
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("reflect needs a non-empty query string")
        if budget is not None and count(budget, "budget") < 1:
            raise InvalidInputError("reflect needs a budget of at least 1 token: without memories there is no answer")
        wanted = self.config.answer.budget if budget is None else budget
        budget = evidence_budget(self.llm, wanted)
        if budget < wanted:
            log.debug("reflect: evidence budget %d tokens, not %d: the model reads %s tokens at most", budget,
                      wanted, self.llm.context_tokens)
        recalled = self.recall.recall(bank.indexes, query, bank.zone, budget=budget, query_time=query_time,
                                      apart=True)
        if not has_visible(recalled.query):
            raise InvalidInputError("the query has nothing to ask once private spans and invisible characters go")
        hits = recalled.hits
        messages = reflect_messages(system_message(profile), recalled.query, memory_sections(hits),
                                    recalled.query_time, self.max_opinions)
        reply, usage, retried, weak = self._grounded_reply(messages, [h.context for h in hits])
        result = ReflectResult(query=recalled.query, answer=reply.answer, evidence=[h.unit for h in hits],
                               cited=cited_ids(reply, hits), known=reply.known, weak=weak, retried=retried,
                               model=self.llm.model_name)
        if is_refusal(reply.answer):
            result.opinion_error = "the answer is a refusal: it shows no opinion"
            log.info("reflect: the model refused to answer; no opinions are formed")
        elif not reply.known:
            result.opinion_error = "the memories do not answer the question: no opinion is formed"
        elif self.max_opinions > 0:
            self._store_opinions(bank, reply, result, recalled.query_time)
        result.usage = Usage.of(usage)
        result.seconds = round(time.perf_counter() - started, 3)
        log.debug("reflect %r: %d memories, %d cited, %d opinions, weak %s, usage %s", recalled.query[:60], len(hits),
                  len(result.cited), len(result.opinions), weak, usage)
        return result

    def _ask(self, messages: Sequence[ChatMessage]) -> StructuredResponse[ReflectOut]:
        schema = with_max_items(ReflectOut, "opinions", self.max_opinions)
        return self.llm.structured(messages, schema, max_retries=self.former.max_retries,
                                   max_tokens=reflect_max_tokens(self.max_opinions),
                                   temperature=self.config.answer.temperature)

    def _grounded_reply(
        self, messages: list[ChatMessage], memories: list[str]
    ) -> tuple[ReflectOut, LLMUsage, bool, str | None]:
        """The reply, the usage of every call, whether it was asked for again, and why it is weak (None when
        grounded). A second try that fails to give valid output leaves the first reply, weak."""
        first = self._ask(messages)
        found = grounding.problem(first.value, memories)
        if found is None:
            return first.value, first.usage, False, None
        kind, reason = found
        log.info("reflect: the answer is not grounded (%s); asking once more", reason)
        try:
            second = self._ask(grounding.retry_messages(messages, first.value, kind, reason))
        except LLMError as exc:
            log.warning("reflect: the second try failed, the first answer is kept as weak: %s", exc)
            spent = exc.usage if isinstance(exc, StructuredOutputError) else LLMUsage()
            return first.value, first.usage + spent, True, reason
        usage = first.usage + second.usage
        found = grounding.problem(second.value, memories)
        if found is not None:
            log.warning("reflect: the answer is weak: %s", found[1])
        return second.value, usage, True, None if found is None else found[1]

    def _store_opinions(self, bank: BankHandle, reply: ReflectOut, result: ReflectResult, at: datetime) -> None:
        """Check the reply's opinion candidates and store those that are opinions into `result`. A reply that lists
        none offers its answer's first-person judgments instead: a small model states its view in the answer and
        leaves the list empty."""
        candidates = reply.opinions or stated_judgments(reply.answer)
        if not candidates:
            return
        opinions, result.rejected_opinions = check_opinions(candidates, result.query, result.answer,
                                                            result.evidence, result.cited)
        try:
            result.opinions = self.former.store_opinions(bank, opinions[: self.max_opinions], result.evidence, at)
        except SourcesForgottenError as exc:
            result.opinion_error = str(exc)
            log.warning("reflect: the opinions are not stored, their evidence was forgotten meanwhile: %s", exc)
