"""Reflect (CARA; docs/ARCHITECTURE.md, Reflect): recall across all networks, answer in the bank's voice, form
opinions, store them."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hindsight.config import ReflectConfig
from hindsight.errors import InvalidInputError, LLMError
from hindsight.llm.base import LLM, ChatMessage, LLMResponse, StructuredOutputError, as_llm_error, is_refusal
from hindsight.models import BankProfile, LLMUsage
from hindsight.recall.pipeline import RecallPipeline
from hindsight.recall.types import RecallHit
from hindsight.reflect.disposition import system_message
from hindsight.reflect.opinion_check import check_opinions
from hindsight.reflect.opinions import OpinionFormer
from hindsight.reflect.prompts import answer_messages, memory_sections, opinion_messages
from hindsight.reflect.types import ReflectResult, Usage
from hindsight.reflect.writer import SourcesForgottenError
from hindsight.text import has_visible, safe_text
from hindsight.units import BankHandle
from hindsight.validate import count

log = logging.getLogger(__name__)

_CITATION = re.compile(r"\[(\d{1,4})\]")


def cited_ids(answer: str, hits: Sequence[RecallHit]) -> list[str]:
    """Unit ids of the numbered memories the answer cites ("[2]"), in order of first citation."""
    numbers = dict.fromkeys(int(m) for m in _CITATION.findall(answer))
    return [hits[n - 1].unit.id for n in numbers if 1 <= n <= len(hits)]


def complete_text(llm: LLM, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float) -> LLMResponse:
    """A free-text completion, made safe to store and show; an empty reply or an untyped backend failure becomes an
    LLMError."""
    try:
        response = llm.complete(messages, max_tokens=max_tokens, temperature=temperature)
    except LLMError:
        raise
    except Exception as exc:  # a backend bug or an unexpected client error: keep it typed
        raise as_llm_error(llm.name, exc) from exc
    response.text = safe_text(response.text).strip()
    if not has_visible(response.text):
        raise LLMError(f"{llm.name}: the answer was empty (finish reason {response.finish_reason})")
    return response


class Reflector:
    """Answers a query from a bank's memories in the bank's voice and keeps the opinions the answer shows."""

    def __init__(self, llm: LLM, config: ReflectConfig, recall: RecallPipeline, former: OpinionFormer) -> None:
        self.llm = llm
        self.config = config
        self.recall = recall
        self.former = former

    def reflect(
        self, bank: BankHandle, profile: BankProfile, query: Any, budget: Any = None, query_time: Any = None
    ) -> ReflectResult:
        """Raises InvalidInputError (or ContentTooLargeError) for a bad query, budget or time, before any LLM call,
        and LLMError when the answer cannot be generated. A failed opinion extraction is logged and reported in the
        result (`opinion_error`); the answer stands. A refusal is returned as the answer, without opinions. Candidates
        that are not opinions (opinion_check.py) are reported in `rejected_opinions`, never stored. Opinion events are
        dated at the query time (the bank's time), now when none is given."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("reflect needs a non-empty query string")
        if budget is not None and count(budget, "budget") < 1:
            raise InvalidInputError("reflect needs a budget of at least 1 token: without memories there is no answer")
        budget = self.config.answer.budget if budget is None else budget
        recalled = self.recall.recall(bank.indexes, query, bank.zone, budget=budget, query_time=query_time,
                                      apart=True)
        if not has_visible(recalled.query):
            raise InvalidInputError("the query has nothing to ask once private spans and invisible characters go")
        hits = recalled.hits
        identity = system_message(profile)
        memories = memory_sections(hits)
        response = complete_text(self.llm, answer_messages(identity, recalled.query, memories, recalled.query_time),
                                 max_tokens=self.config.answer.max_tokens, temperature=self.config.answer.temperature)
        usage = response.usage
        answer = response.text
        cited = cited_ids(answer, hits)
        result = ReflectResult(query=recalled.query, answer=answer, evidence=[h.unit for h in hits], cited=cited)
        if is_refusal(answer):
            result.opinion_error = "the answer is a refusal: it shows no opinion"
            log.info("reflect: the model refused to answer; no opinions are formed")
        elif self.config.opinions.enabled and self.config.opinions.max_per_reflect > 0:
            usage = usage + self._opinions(bank, identity, memories, result, recalled.query_time)
        result.usage = Usage.of(usage)
        log.debug("reflect %r: %d memories, %d cited, %d opinions, usage %s", recalled.query[:60], len(hits),
                  len(cited), len(result.opinions), usage)
        return result

    def _opinions(
        self, bank: BankHandle, identity: str, memories: str, result: ReflectResult, at: datetime
    ) -> LLMUsage:
        """Extract the answer's opinions (the model is shown the numbered memories again, to cite them), check them
        and store them into `result`; returns the usage."""
        messages = opinion_messages(identity, result.query, result.answer, memories,
                                    self.config.opinions.max_per_reflect)
        try:
            candidates, usage = self.former.extract(messages)
        except LLMError as exc:
            result.opinion_error = str(exc)
            log.warning("reflect: opinion extraction failed, the answer is kept without opinions: %s", exc)
            return exc.usage if isinstance(exc, StructuredOutputError) else LLMUsage()
        opinions, result.rejected_opinions = check_opinions(candidates, result.query, result.answer, result.evidence,
                                                            result.cited)
        try:
            kept = opinions[: self.config.opinions.max_per_reflect]
            result.opinions = self.former.store_opinions(bank, kept, result.evidence, at)
        except SourcesForgottenError as exc:
            result.opinion_error = str(exc)
            log.warning("reflect: the opinions are not stored, their evidence was forgotten meanwhile: %s", exc)
        return usage
