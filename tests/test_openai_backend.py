"""The openai backend against a local HTTP server: retries, backoff, timeouts, typed errors, structured modes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from hindsight.errors import LLMError, LLMRequestError
from hindsight.llm.base import ChatMessage, StructuredOutputError
from hindsight.llm.openai_backend import OpenAICompatibleLLM, RetryPolicy
from tests.http_stub import StubReply, completion, error, stub_server

FAST = RetryPolicy(timeout_s=5.0, retries=2, backoff_s=0.01, backoff_max_s=0.02)
ASK = [ChatMessage("user", "Say hi.")]


class Opinion(BaseModel):
    statement: str
    confidence: float


def make(base_url: str, policy: RetryPolicy = FAST, **kwargs: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=base_url, model="stub-model", policy=policy, **kwargs)


def test_complete_returns_text_usage_and_finish_reason() -> None:
    with stub_server([completion("hi there", prompt_tokens=5, completion_tokens=2)]) as (url, stub):
        reply = make(url).complete(ASK, max_tokens=20, temperature=0.3)
    assert reply.text == "hi there" and reply.finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.calls) == (5, 2, 1)
    sent = stub.requests[0]
    assert sent["max_tokens"] == 20 and sent["temperature"] == 0.3 and sent["model"] == "stub-model"
    assert sent["messages"] == [{"role": "user", "content": "Say hi."}] and "response_format" not in sent


def test_json_mode_sets_response_format() -> None:
    with stub_server([completion("{}")]) as (url, stub):
        make(url).complete(ASK, json_mode=True)
    assert stub.requests[0]["response_format"] == {"type": "json_object"}


def test_server_errors_and_rate_limits_are_retried_until_success() -> None:
    with stub_server([error(500), error(429), completion("ok")]) as (url, stub):
        assert make(url).complete(ASK).text == "ok"
    assert len(stub.requests) == 3


def test_exhausted_retries_raise_a_typed_error() -> None:
    with stub_server(lambda _body: error(503, "overloaded")) as (url, stub), pytest.raises(LLMRequestError) as info:
        make(url).complete(ASK)
    assert len(stub.requests) == 3 and info.value.attempts == 3 and info.value.retryable
    assert "after 3 attempts" in str(info.value) and "503" in str(info.value)
    assert isinstance(info.value, LLMError)


def test_client_errors_are_not_retried() -> None:
    with stub_server(lambda _body: error(401, "bad key")) as (url, stub), pytest.raises(LLMRequestError) as info:
        make(url).complete(ASK)
    assert len(stub.requests) == 1 and not info.value.retryable and "401" in str(info.value)


def test_timeouts_are_retried_then_raised() -> None:
    slow = RetryPolicy(timeout_s=0.2, retries=1, backoff_s=0.01, backoff_max_s=0.01)
    with (
        stub_server(lambda _body: StubReply(body={}, delay_s=1.0)) as (url, stub),
        pytest.raises(LLMRequestError, match=r"timed out after 0\.2s"),
    ):
        make(url, policy=slow).complete(ASK)
    assert len(stub.requests) == 2


def test_a_garbage_body_is_retried() -> None:
    with stub_server(
        [StubReply(body="<html>proxy error</html>"), StubReply(body={"no": "choices"}), completion("fine")]
    ) as (url, stub):
        assert make(url).complete(ASK).text == "fine"
    assert len(stub.requests) == 3


def test_unreachable_server_raises_a_typed_error() -> None:
    with stub_server([]) as (url, _stub):
        pass  # closed: nothing listens on the port any more
    with pytest.raises(LLMRequestError, match="after 3 attempts: APIConnectionError"):
        make(url).complete(ASK)


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(backoff_s=1.0, backoff_max_s=3.0)
    for retry, base in [(1, 1.0), (2, 2.0), (3, 3.0), (6, 3.0)]:
        assert base <= policy.delay(retry) <= base * 1.25


def test_missing_model_is_taken_from_the_server() -> None:
    with stub_server([completion("hi")]) as (url, stub):
        llm = OpenAICompatibleLLM(base_url=url, policy=FAST)
        llm.complete(ASK)
    assert stub.requests[0]["path"].endswith("/models") and stub.requests[1]["model"] == "served-model"


def test_json_schema_mode_goes_through_instructor_with_reasks() -> None:
    replies = [completion("not json at all"), completion('{"statement": "Tea is good", "confidence": 0.7}')]
    with stub_server(replies) as (url, stub):
        result = make(url, structured_mode="json_schema").structured(ASK, Opinion)
    assert result.value == Opinion(statement="Tea is good", confidence=0.7)
    assert result.attempts == 2 and result.usage.calls == 2 and result.usage.prompt_tokens == 22
    assert stub.requests[0]["response_format"]["type"] == "json_schema"
    assert stub.requests[0]["response_format"]["json_schema"]["schema"]["title"] == "Opinion"


def test_json_schema_truncation_is_retried_then_surfaced() -> None:
    cut = completion('{"statement": "Tea', finish_reason="length")
    with stub_server(lambda _body: cut) as (url, stub), pytest.raises(StructuredOutputError) as info:
        make(url, structured_mode="json_schema").structured(ASK, Opinion, max_retries=1)
    assert len(stub.requests) == 2 and info.value.attempts == 2 and "truncated" in str(info.value)
    assert info.value.usage.calls == 2


def test_transport_failure_inside_instructor_keeps_its_type() -> None:
    with stub_server(lambda _body: error(503)) as (url, _stub), pytest.raises(LLMRequestError, match="503"):
        make(url, structured_mode="json_schema").structured(ASK, Opinion)


def _rejecting(status: int, message: str) -> Any:
    def script(body: dict[str, Any]) -> StubReply:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return error(status, message)
        if "schema" in fmt:
            return completion(json.dumps({"statement": "Rain is likely", "confidence": 0.4}))
        return completion("unused")

    return script


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (422, "response_format type json_schema is not supported"),
        # What llama-cpp-python's server answers (a 500, not retried: it names response_format).
        (500, "1 validation error: ('body', 'response_format', 'type') Input should be 'text' or 'json_object'"),
    ],
)
def test_auto_mode_steps_down_when_the_server_rejects_json_schema(status: int, message: str) -> None:
    with stub_server(_rejecting(status, message)) as (url, stub):
        llm = make(url)
        first = llm.structured(ASK, Opinion)
        second = llm.structured(ASK, Opinion)
    assert first.value.confidence == 0.4 and second.value.statement == "Rain is likely"
    assert llm.mode == "json_object_schema"
    types = [r["response_format"]["type"] for r in stub.requests]
    assert types == ["json_schema", "json_object", "json_object"]  # the rejected mode is not tried again
    assert stub.requests[1]["response_format"]["schema"]["title"] == "Opinion"
    system = stub.requests[1]["messages"][0]
    assert system["role"] == "system" and "JSON schema" in system["content"]


def test_auto_mode_steps_down_when_the_server_ignores_the_schema() -> None:
    def ignores_schemas(body: dict[str, Any]) -> StubReply:
        if "schema" in (body.get("response_format") or {}) or body["response_format"]["type"] == "json_schema":
            return completion("Sure! Here is my opinion: tea is good.")
        return completion('```json\n{"statement": "Tea is good", "confidence": 0.9}\n```')

    with stub_server(ignores_schemas) as (url, _stub):
        llm = make(url)
        result = llm.structured(ASK, Opinion, max_retries=0)
    assert llm.mode == "json" and result.value.confidence == 0.9
    assert result.usage.calls == 3  # the attempts of the modes that failed are counted too


def test_auto_mode_does_not_step_down_on_auth_errors() -> None:
    with stub_server(lambda _body: error(401, "bad key")) as (url, stub), pytest.raises(LLMRequestError) as info:
        make(url).structured(ASK, Opinion)
    assert info.value.status == 401 and len(stub.requests) == 1


def test_a_confirmed_mode_does_not_step_down() -> None:
    replies = [completion('{"statement": "a", "confidence": 1}'), completion("garbage")]
    with stub_server(replies) as (url, _stub):
        llm = make(url)
        llm.structured(ASK, Opinion)
        with pytest.raises(StructuredOutputError):
            llm.structured(ASK, Opinion, max_retries=0)
    assert llm.mode == "json_schema"
