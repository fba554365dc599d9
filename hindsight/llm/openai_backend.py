"""The `openai` backend: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio, llama.cpp server).

Every request has a timeout and bounded retries with exponential backoff; what retries cannot fix becomes an
LLMRequestError. Structured output goes through instructor's JSON-schema mode; servers that reject or ignore
it (llama-cpp-python's server does) are served by JSON mode with the schema in the prompt, optionally also in
response_format (a llama-cpp-python extension that constrains decoding with a grammar).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import instructor
import openai
from instructor.core import IncompleteOutputException, InstructorRetryException
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from hindsight.errors import LLMError, LLMNotConfiguredError, LLMRequestError
from hindsight.llm.base import LLM, ChatMessage, LLMResponse, StructuredOutputError, StructuredResponse, T, truncate
from hindsight.models import LLMUsage

logger = logging.getLogger(__name__)

StructuredMode = Literal["json_schema", "json_object_schema", "json"]
# auto tries these in order and keeps the first that works.
MODE_LADDER: tuple[StructuredMode, ...] = ("json_schema", "json_object_schema", "json")
_RETRYABLE_STATUS = {408, 409, 425, 429}
# A server that does not know a response_format answers one of these.
_REJECTED_STATUS = {400, 422}
# Local servers need some key in the header but ignore it.
_PLACEHOLDER_KEY = "not-needed"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a failed request."""

    timeout_s: float = 120.0
    retries: int = 3
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1-based): doubling, capped, with up to 25% jitter."""
        base = min(self.backoff_max_s, self.backoff_s * 2 ** (retry - 1))
        return float(base * (1 + 0.25 * random.random()))


def usage_of(completion: ChatCompletion) -> LLMUsage:
    u = completion.usage
    if u is None:
        return LLMUsage(calls=1)
    return LLMUsage(prompt_tokens=u.prompt_tokens or 0, completion_tokens=u.completion_tokens or 0, calls=1)


class _UsageSink:
    """Usage of every completion made while serving one structured() call (instructor re-asks included)."""

    def __init__(self) -> None:
        self.usage = LLMUsage()
        self.last_text = ""


class OpenAICompatibleLLM(LLM):
    """Chat completions from an OpenAI-compatible endpoint; `model=None` takes the server's first model."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        structured_mode: Literal["auto"] | StructuredMode = "auto",
        policy: RetryPolicy | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.base_url = base_url
        self._model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._auto = structured_mode == "auto"
        self.mode: StructuredMode = "json_schema" if structured_mode == "auto" else structured_mode
        self._mode_confirmed = not self._auto
        self._lock = threading.Lock()
        # Retries are ours (logged, typed, configurable), so the client's own are off.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or _PLACEHOLDER_KEY, timeout=self.policy.timeout_s, max_retries=0
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(base_url={self.base_url!r}, model={self._model!r}, mode={self.mode!r})"

    @property
    def model_name(self) -> str:
        """The configured model, or the server's once a call has asked for it (never a request of its own)."""
        return self._model or self.name

    # -- requests ----------------------------------------------------------------------------
    @property
    def model(self) -> str:
        """The configured model, or the first one the server lists."""
        with self._lock:
            if self._model is None:
                self._model = self._first_server_model()
            return self._model

    def _first_server_model(self) -> str:
        try:
            models = self._retrying("list models", lambda: list(self._client.models.list()))
        except LLMRequestError as exc:
            raise LLMNotConfiguredError(
                f"{self.name}: no llm.model configured and the server did not list one: {exc}"
            ) from exc
        if not models:
            raise LLMNotConfiguredError(f"{self.name}: no llm.model configured and the server lists no models")
        logger.info("%s: using the server's model %s", self.name, models[0].id)
        return str(models[0].id)

    def _retrying(self, what: str, call: Any) -> Any:
        """Run `call()` with the retry policy; raise LLMRequestError once retries are exhausted."""
        attempts = self.policy.retries + 1
        for attempt in range(1, attempts + 1):
            failure: Exception
            try:
                return call()
            except openai.APIStatusError as exc:
                error = f"HTTP {exc.status_code}: {truncate(str(exc.message), 300)}"
                transient = exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
                if not transient or _rejects_format(exc.status_code, error):
                    raise LLMRequestError(
                        f"{self.name}: {what} failed: {error}",
                        attempts=attempt,
                        retryable=False,
                        status=exc.status_code,
                    ) from exc
                failure = exc
            except openai.APITimeoutError as exc:  # before APIConnectionError, its base class
                error, failure = f"timed out after {self.policy.timeout_s:g}s", exc
            except (openai.APIConnectionError, openai.APIResponseValidationError, MalformedResponseError) as exc:
                error, failure = f"{type(exc).__name__}: {truncate(str(exc), 300)}", exc
            if attempt == attempts:
                raise LLMRequestError(
                    f"{self.name}: {what} failed after {attempts} attempts: {error}", attempts=attempts
                ) from failure
            delay = self.policy.delay(attempt)
            logger.warning(
                "%s: %s failed (%s); retry %d/%d in %.1fs", self.name, what, error, attempt, attempts - 1, delay
            )
            time.sleep(delay)
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _create(self, sink: _UsageSink | None = None, **kwargs: Any) -> ChatCompletion:
        """One chat completion with retries; usage is logged and added to `sink`."""
        kwargs.setdefault("model", self.model)

        def call() -> ChatCompletion:
            completion = self._client.chat.completions.create(**kwargs)
            if not isinstance(completion, ChatCompletion) or not completion.choices:
                raise MalformedResponseError(f"not a chat completion: {truncate(repr(completion), 200)}")
            return completion

        completion: ChatCompletion = self._retrying("chat completion", call)
        usage = usage_of(completion)
        logger.debug(
            "%s: %s used %d prompt + %d completion tokens",
            self.name,
            kwargs["model"],
            usage.prompt_tokens,
            usage.completion_tokens,
        )
        if sink is not None:
            sink.usage = sink.usage + usage
            sink.last_text = completion.choices[0].message.content or ""
        return completion

    def _request(
        self, messages: Sequence[ChatMessage], max_tokens: int | None, temperature: float | None
    ) -> dict[str, Any]:
        return {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens or self.max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
    ) -> LLMResponse:
        kwargs = self._request(messages, max_tokens, temperature)
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        return _response(self._create(**kwargs))

    def complete_json(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[BaseModel],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResponse:
        kwargs = self._request(messages, max_tokens, temperature)
        kwargs["response_format"] = {"type": "json_object"}
        if self.mode == "json_object_schema":
            kwargs["response_format"]["schema"] = response_model.model_json_schema()
        return _response(self._create(**kwargs))

    # -- structured output -------------------------------------------------------------------
    def structured(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[T],
        *,
        max_retries: int = 2,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> StructuredResponse[T]:
        """A validated reply in the current structured mode. In auto mode, until one mode has worked, a mode
        the server rejects (HTTP 400/422) or cannot answer validly steps down to the next one."""
        spent = LLMUsage()  # by modes that did not work
        while True:
            mode = self.mode
            try:
                if mode == "json_schema":
                    result = self._structured_instructor(messages, response_model, max_retries, max_tokens, temperature)
                else:
                    result = super().structured(
                        messages,
                        response_model,
                        max_retries=max_retries,
                        max_tokens=max_tokens,
                        temperature=temperature,
                    )
            except (StructuredOutputError, LLMRequestError) as exc:
                rejected = isinstance(exc, LLMRequestError) and _rejects_format(exc.status, str(exc))
                if self._mode_confirmed or not (rejected or isinstance(exc, StructuredOutputError)):
                    raise
                if not self._step_down(mode, exc):
                    raise
                if isinstance(exc, StructuredOutputError):
                    spent = spent + exc.usage
                continue
            self._mode_confirmed = True
            result.usage = spent + result.usage
            return result

    def _step_down(self, failed: StructuredMode, exc: LLMError) -> bool:
        """Move from `failed` to the next mode of the ladder; False at its bottom."""
        with self._lock:
            if self.mode != failed:  # another thread already moved on
                return True
            index = MODE_LADDER.index(failed)
            if index + 1 >= len(MODE_LADDER):
                return False
            self.mode = MODE_LADDER[index + 1]
        logger.warning(
            "%s: structured mode %s did not work with %s (%s); switching to %s",
            self.name,
            failed,
            self.base_url or "the endpoint",
            truncate(str(exc), 300),
            self.mode,
        )
        return True

    def _structured_instructor(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[T],
        max_retries: int,
        max_tokens: int | None,
        temperature: float | None,
    ) -> StructuredResponse[T]:
        sink = _UsageSink()

        def create(**kwargs: Any) -> ChatCompletion:
            return self._create(sink, **kwargs)

        patched = instructor.patch(create=create, mode=instructor.Mode.JSON_SCHEMA)
        attempts = max(0, max_retries) + 1
        error = ""
        # instructor re-asks after parse errors but not after truncation; those are re-run here, within budget.
        while sink.usage.calls < attempts:
            try:
                value = patched(
                    response_model=response_model,
                    max_retries=attempts - sink.usage.calls - 1,
                    **self._request(messages, max_tokens, temperature),
                )
            except IncompleteOutputException:
                error = "the JSON is truncated (max_tokens reached)"
                continue
            except InstructorRetryException as exc:
                if isinstance(exc.__cause__, LLMError):
                    raise exc.__cause__ from exc
                error = truncate(str(exc), 500)
                break
            # instructor returns an instance of its own subclass of the model; hand back the model itself.
            fields = {name: getattr(value, name) for name in response_model.model_fields}
            plain = response_model.model_construct(_fields_set=value.model_fields_set, **fields)
            return StructuredResponse(value=plain, usage=sink.usage, attempts=sink.usage.calls)
        raise StructuredOutputError(
            f"{self.name}: no valid {response_model.__name__} after {sink.usage.calls} attempts",
            raw_text=truncate(sink.last_text, 500),
            validation_error=error,
            attempts=sink.usage.calls,
            usage=sink.usage,
        )


def _rejects_format(status: int | None, message: str) -> bool:
    """The server refused the form of the request: HTTP 400/422, or a server error naming response_format
    (llama-cpp-python's server answers 500 to a response_format it does not know)."""
    return status in _REJECTED_STATUS or (status is not None and "response_format" in message)


class MalformedResponseError(Exception):
    """The server answered 200 with something that is not a chat completion."""


def _response(completion: ChatCompletion) -> LLMResponse:
    choice = completion.choices[0]
    message = choice.message
    # A model's refusal arrives in its own field on OpenAI; keep it as the text so callers see it.
    text = message.content or getattr(message, "refusal", None) or ""
    return LLMResponse(text=text, usage=usage_of(completion), finish_reason=choice.finish_reason)
