"""Per-bank LLM token counters: the engine's LLM is wrapped so that every call is counted for the bank
whose operation made it (set with `bank_scope`), in memory for this engine and, through `persist`, in the bank's
store so that a bank's usage survives a restart."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel

from hindsight.errors import StoreError
from hindsight.llm.base import LLM, ChatMessage, LLMResponse, StructuredOutputError, StructuredResponse, T
from hindsight.models import LLMUsage

log = logging.getLogger(__name__)

# Calls made outside any bank_scope are counted under this key (and in the total).
UNSCOPED = ""

_current_bank: ContextVar[str] = ContextVar("hindsight_llm_bank", default=UNSCOPED)


@contextmanager
def bank_scope(bank_id: str) -> Iterator[None]:
    """Count LLM calls made inside the block (in this thread or task) for `bank_id`."""
    token = _current_bank.set(bank_id)
    try:
        yield
    finally:
        _current_bank.reset(token)


class UsageCounters:
    """Token usage per bank since the engine opened, in memory; thread-safe. With `persist`, the usage of every
    call made for a bank is also handed to `persist(bank_id, usage)` (the engine adds it to the store)."""

    def __init__(self, persist: Callable[[str, LLMUsage], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._by_bank: dict[str, LLMUsage] = {}
        self._persist = persist

    def add(self, usage: LLMUsage, bank_id: str | None = None) -> None:
        key = _current_bank.get() if bank_id is None else bank_id
        with self._lock:
            self._by_bank[key] = self._by_bank.get(key, LLMUsage()) + usage
        if self._persist is not None and key != UNSCOPED:
            try:
                self._persist(key, usage)
            except StoreError as exc:
                # The call itself succeeded; losing its count must not fail the operation that made it.
                log.warning("bank %s: LLM usage %s not stored: %s", key, usage, exc)

    def bank(self, bank_id: str) -> LLMUsage:
        with self._lock:
            found = self._by_bank.get(bank_id, LLMUsage())
            return LLMUsage(found.prompt_tokens, found.completion_tokens, found.calls)

    def by_bank(self) -> dict[str, LLMUsage]:
        with self._lock:
            return {k: LLMUsage(v.prompt_tokens, v.completion_tokens, v.calls) for k, v in self._by_bank.items()}

    @property
    def total(self) -> LLMUsage:
        return sum(self.by_bank().values(), LLMUsage())


class MeteredLLM(LLM):
    """Delegates to `inner` and adds the usage of every call to `counters`. Other attributes of the
    inner LLM (its model, options) read through."""

    def __init__(self, inner: LLM, counters: UsageCounters) -> None:
        self.inner = inner
        self.counters = counters
        self.name = inner.name

    def __repr__(self) -> str:
        return f"MeteredLLM({self.inner!r})"

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def context_tokens(self) -> int | None:
        return self.inner.context_tokens

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # not yet set (copy, unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
    ) -> LLMResponse:
        response = self.inner.complete(messages, max_tokens=max_tokens, temperature=temperature, json_mode=json_mode)
        self.counters.add(response.usage)
        return response

    def complete_json(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[BaseModel],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResponse:
        response = self.inner.complete_json(messages, response_model, max_tokens=max_tokens, temperature=temperature)
        self.counters.add(response.usage)
        return response

    def structured(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[T],
        *,
        max_retries: int = 2,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> StructuredResponse[T]:
        try:
            result = self.inner.structured(
                messages, response_model, max_retries=max_retries, max_tokens=max_tokens, temperature=temperature
            )
        except StructuredOutputError as exc:
            self.counters.add(exc.usage)
            raise
        self.counters.add(result.usage)
        return result
