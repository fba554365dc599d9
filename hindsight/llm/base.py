"""The LLM interface: chat completion plus validated structured output with re-asks."""

from __future__ import annotations

import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from hindsight.errors import LLMError, LLMRequestError
from hindsight.models import LLMUsage

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

Role = Literal["system", "user", "assistant"]

# How much of a bad reply is kept in errors and re-ask prompts: enough to see what went wrong,
# small enough not to flood logs or a small model's context window.
RAW_TEXT_LIMIT = 2000
# At most this many candidate JSON values are tried in one reply (prose may hold brackets too).
_MAX_JSON_STARTS = 20
_MAX_REPORTED_ERRORS = 6

_OPEN = re.compile(r"[{\[]")
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry,|i apologi[sz]e|i can'?not|i can'?t|i won'?t|i'm unable|"
    r"i am unable|i'm not able|i am not able|as an ai\b|unfortunately,? i)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ChatMessage:
    """One chat message sent to an LLM."""

    role: Role
    content: str



@dataclass
class LLMResponse:
    """The text of one completion, its usage and why generation stopped ("stop", "length", ...)."""

    text: str
    usage: LLMUsage = field(default_factory=LLMUsage)
    finish_reason: str | None = None


@dataclass
class StructuredResponse(Generic[T]):
    """A validated structured reply, the usage of all attempts and how many attempts it took."""

    value: T
    usage: LLMUsage
    attempts: int


class StructuredOutputError(LLMError):
    """No attempt produced output that parses and validates against the response model."""

    def __init__(
        self,
        message: str,
        *,
        raw_text: str,
        validation_error: str,
        attempts: int,
        usage: LLMUsage | None = None,
    ) -> None:
        super().__init__(f"{message}: {validation_error}; last reply: {raw_text!r}")
        self.raw_text = raw_text
        self.validation_error = validation_error
        self.attempts = attempts
        self.usage = usage or LLMUsage()


class ReplyFormatError(ValueError):
    """A reply could not be turned into a validated value; the message is fit for a re-ask."""


def as_llm_error(name: str, exc: Exception) -> LLMError:
    """An untyped backend failure as an LLMError; a timeout or a lost connection is a retryable LLMRequestError."""
    message = f"{name}: completion failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return LLMRequestError(message, retryable=True)
    return LLMError(message)


def truncate(text: str, limit: int = RAW_TEXT_LIMIT) -> str:
    """Shorten `text` to `limit` characters, marking the cut."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def is_refusal(text: str) -> bool:
    """True when a reply opens like a refusal ("I'm sorry, I can't ...")."""
    return bool(_REFUSAL.match(text.strip()))


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket closing the one at `start`, or None if it never closes."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def parse_json_reply(text: str, *, finish_reason: str | None = None) -> Any:
    """Return the outermost JSON value of a reply, tolerating code fences and surrounding prose.

    Raises ReplyFormatError for empty replies, refusals, missing, truncated or invalid JSON.
    """
    stripped = text.strip()
    if not stripped:
        raise ReplyFormatError("the reply was empty")
    try:
        return _first_json_value(stripped, finish_reason)
    except ReplyFormatError:
        if is_refusal(stripped):
            raise ReplyFormatError("the reply was a refusal instead of JSON") from None
        raise


def _first_json_value(text: str, finish_reason: str | None) -> Any:
    """The first JSON value that parses, scanning candidate starts left to right."""
    fenced = _FENCE.search(text)
    body = fenced.group(1).strip() if fenced and any(c in fenced.group(1) for c in "{[") else text
    error: str | None = None
    pos = 0
    for _ in range(_MAX_JSON_STARTS):
        match = _OPEN.search(body, pos)
        if match is None:
            break
        start = match.start()
        end = _balanced_end(body, start)
        if end is None:
            # Every later bracket lies inside this unclosed value, so the reply is cut off.
            cut = " (max_tokens reached)" if finish_reason == "length" else ""
            error = error or f"the JSON is truncated: it ends before every bracket is closed{cut}"
            break
        try:
            # strict=False: small models put raw newlines inside strings.
            return json.loads(body[start:end], strict=False)
        except json.JSONDecodeError as exc:
            error = error or f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            pos = end  # a fragment inside a malformed value is not the answer
    raise ReplyFormatError(error or "the reply contains no JSON object")


def format_validation_error(exc: ValidationError) -> str:
    """A compact, model-readable summary of a pydantic validation error."""
    parts = []
    for err in exc.errors(include_url=False)[:_MAX_REPORTED_ERRORS]:
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    more = exc.error_count() - len(parts)
    if more > 0:
        parts.append(f"... and {more} more errors")
    return "; ".join(parts)


def parse_structured(text: str, response_model: type[T], *, finish_reason: str | None = None) -> T:
    """Parse and validate one reply into `response_model`; raises ReplyFormatError."""
    data = parse_json_reply(text, finish_reason=finish_reason)
    try:
        return response_model.model_validate(data)
    except ValidationError as exc:
        raise ReplyFormatError(f"the JSON does not match the schema: {format_validation_error(exc)}") from exc


def schema_instruction(response_model: type[BaseModel]) -> str:
    """The instruction that asks for JSON matching the model's JSON schema."""
    schema = json.dumps(response_model.model_json_schema(), separators=(",", ":"))
    return f"Reply with one JSON object only, no other text. It must match this JSON schema:\n{schema}"


def with_schema(messages: Sequence[ChatMessage], response_model: type[BaseModel]) -> list[ChatMessage]:
    """Copy `messages` with the schema instruction appended to (or added as) the system prompt."""
    instruction = schema_instruction(response_model)
    out = list(messages)
    if out and out[0].role == "system":
        out[0] = ChatMessage("system", f"{out[0].content}\n\n{instruction}")
    else:
        out.insert(0, ChatMessage("system", instruction))
    return out


def reask_messages(raw_text: str, error: str) -> list[ChatMessage]:
    """The assistant's bad reply and a user message asking for a corrected one."""
    return [
        ChatMessage("assistant", truncate(raw_text)),
        ChatMessage(
            "user",
            f"Your reply could not be used: {error}. "
            "Reply again with only the corrected JSON object, complete and matching the schema.",
        ),
    ]


class LLM(ABC):
    """A chat LLM. Backends implement `complete`; those with native structured output
    (e.g. instructor) may override `structured`."""

    name: str = "llm"

    @property
    def model_name(self) -> str:
        """The model that answers, as results report it."""
        return self.name

    @property
    def context_tokens(self) -> int | None:
        """The model's context window in tokens, when the backend knows it (a local model); None otherwise."""
        return None

    @abstractmethod
    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
    ) -> LLMResponse:
        """Return one completion. Raise LLMError for failures such as timeouts or HTTP errors."""

    def structured(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[T],
        *,
        max_retries: int = 2,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> StructuredResponse[T]:
        """Return a reply validated against `response_model`, re-asking with the error on bad output.

        The default uses JSON mode with the JSON schema in the system prompt. After `max_retries`
        failed re-asks it raises StructuredOutputError (an LLMError) with the last reply and error.
        """
        base = with_schema(messages, response_model)
        convo = base
        usage = LLMUsage()
        raw_text = ""
        error = ""
        attempts = max(0, max_retries) + 1
        for attempt in range(1, attempts + 1):
            response = self._complete_wrapped(convo, response_model, max_tokens=max_tokens, temperature=temperature)
            usage = usage + response.usage
            raw_text = response.text
            try:
                value = parse_structured(raw_text, response_model, finish_reason=response.finish_reason)
            except ReplyFormatError as exc:
                error = str(exc)
                logger.debug("%s: attempt %d/%d for %s failed: %s", self.name, attempt, attempts,
                             response_model.__name__, error)
                # Only the latest bad reply is shown: a small model's context cannot hold them all.
                convo = base + reask_messages(raw_text, error)
                continue
            logger.debug("%s: %s in %d attempt(s), usage %s", self.name, response_model.__name__,
                         attempt, usage)
            return StructuredResponse(value=value, usage=usage, attempts=attempt)
        logger.debug("%s: %s failed after %d attempts, usage %s", self.name, response_model.__name__,
                     attempts, usage)
        raise StructuredOutputError(
            f"{self.name}: no valid {response_model.__name__} after {attempts} attempts",
            raw_text=truncate(raw_text, 500),
            validation_error=error,
            attempts=attempts,
            usage=usage,
        )

    def complete_json(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[BaseModel],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResponse:
        """One JSON-mode completion meant to match `response_model`. Backends that can constrain decoding
        to the schema (a grammar, a schema-aware response_format) override this."""
        return self.complete(messages, max_tokens=max_tokens, temperature=temperature, json_mode=True)

    def _complete_wrapped(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[BaseModel],
        *,
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMResponse:
        """complete_json(); LLMErrors pass through, anything else becomes an LLMError."""
        try:
            return self.complete_json(messages, response_model, max_tokens=max_tokens, temperature=temperature)
        except LLMError:
            raise
        except Exception as exc:  # a backend bug or an unexpected client error: keep it typed
            raise as_llm_error(self.name, exc) from exc
