"""The `llamacpp` backend: llama-cpp-python in-process over a GGUF file, JSON output constrained by the schema."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hindsight.errors import LLMNotConfiguredError, LLMRequestError
from hindsight.llm.base import LLM, ChatMessage, LLMResponse
from hindsight.llm.llamacpp_quiet import quiet_load
from hindsight.models import LLMUsage

logger = logging.getLogger(__name__)


def usable_cores() -> int:
    """The cores this process may run on: a call the user waits for uses them all (a reflect on two cores takes about
    half the time it takes on one; docs/DECISIONS.md)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class LlamaCppLLM(LLM):
    """A local GGUF model. Weights load on the first call; calls are serialized (a llama context is not
    thread-safe). A call is bounded by max_tokens, not by time: the library cannot stop a chat completion."""

    name = "llamacpp"

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_threads: int | None = None,
        n_ctx: int = 4096,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 1024,
    ) -> None:
        self.model_path = Path(model_path)
        self.n_threads = n_threads or usable_cores()
        self.n_ctx = n_ctx
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._llama: Any = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self.model_path.stem

    @property
    def context_tokens(self) -> int | None:
        return self.n_ctx

    def __repr__(self) -> str:
        return f"LlamaCppLLM({str(self.model_path)!r}, n_threads={self.n_threads})"

    def _load(self) -> Any:
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise LLMNotConfiguredError(
                    "the llamacpp backend needs llama-cpp-python: pip install 'hindsight-memory[local]'"
                ) from exc
            started = time.monotonic()
            try:
                with quiet_load():  # llama.cpp logs through `logging`; the host's streams stay as they are
                    self._llama = Llama(
                        model_path=str(self.model_path),
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads,
                        n_ctx=self.n_ctx,
                        seed=self.seed,
                        verbose=False,
                    )
            except (ValueError, OSError, RuntimeError) as exc:
                raise LLMNotConfiguredError(f"llamacpp: cannot load {self.model_path}: {exc}") from exc
            logger.info(
                "llamacpp: loaded %s in %.1fs (%d threads)",
                self.model_path.name,
                time.monotonic() - started,
                self.n_threads,
            )
        return self._llama

    def _chat(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int | None,
        temperature: float | None,
        response_format: dict[str, Any] | None,
    ) -> LLMResponse:
        with self._lock:
            llama = self._load()
            try:
                reply = llama.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in messages],
                    max_tokens=max_tokens or self.max_tokens,
                    temperature=self.temperature if temperature is None else temperature,
                    seed=self.seed,
                    response_format=response_format,
                )
            except (ValueError, RuntimeError) as exc:  # e.g. the prompt exceeds n_ctx
                raise LLMRequestError(f"llamacpp: completion failed: {exc}", retryable=False) from exc
        u = reply.get("usage") or {}
        usage = LLMUsage(u.get("prompt_tokens", 0), u.get("completion_tokens", 0), 1)
        logger.debug(
            "llamacpp: %s used %d prompt + %d completion tokens",
            self.model_path.name,
            usage.prompt_tokens,
            usage.completion_tokens,
        )
        choice = reply["choices"][0]
        return LLMResponse(choice["message"].get("content") or "", usage, choice.get("finish_reason"))

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
    ) -> LLMResponse:
        return self._chat(messages, max_tokens, temperature, {"type": "json_object"} if json_mode else None)

    def complete_json(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[BaseModel],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResponse:
        """Decoding constrained by a grammar built from the model's JSON schema."""
        schema = response_model.model_json_schema()
        return self._chat(messages, max_tokens, temperature, {"type": "json_object", "schema": schema})
