"""A scripted fake LLM for offline tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hindsight.llm.base import LLM, ChatMessage, LLMResponse
from hindsight.models import LLMUsage

Reply = str | LLMResponse | BaseException


def reflect_reply(answer: str, *opinions: Mapping[str, Any], known: bool = True, sources: Sequence[int] = ()) -> str:
    """A reflect reply as the model writes it: the answer, the memories it uses and its opinions in one JSON object."""
    return json.dumps({"known": known, "sources": list(sources), "answer": answer, "opinions": list(opinions)})


class FakeScriptedLLM(LLM):
    """Replays canned replies (strings, full LLMResponses, or exceptions to raise) in order.

    Each call records the messages and options it received. Usage is a deterministic estimate:
    one token per 4 characters, one call per completion.
    """

    name = "fake-scripted"

    def __init__(self, replies: Iterable[Reply]) -> None:
        self.replies: list[Reply] = list(replies)
        self.prompts: list[list[ChatMessage]] = []
        self.options: list[dict[str, object]] = []
        self.total_usage = LLMUsage()

    @property
    def remaining(self) -> int:
        return len(self.replies)

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
    ) -> LLMResponse:
        self.prompts.append(list(messages))
        self.options.append({"max_tokens": max_tokens, "temperature": temperature, "json_mode": json_mode})
        if not self.replies:
            raise AssertionError("FakeScriptedLLM: no scripted replies left")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        response = reply if isinstance(reply, LLMResponse) else LLMResponse(reply, finish_reason="stop")
        prompt_chars = sum(len(m.content) for m in messages)
        usage = LLMUsage(prompt_tokens=prompt_chars // 4 + 1, completion_tokens=len(response.text) // 4 + 1, calls=1)
        response.usage = usage
        self.total_usage = self.total_usage + usage
        return response


class SwitchLLM(LLM):
    """An engine's LLM whose script each test case replaces."""

    name = "switch"

    def __init__(self) -> None:
        self.fake = FakeScriptedLLM([])

    def script(self, *replies: Reply) -> None:
        self.fake = FakeScriptedLLM(replies)

    def complete(self, messages: Sequence[ChatMessage], **options: Any) -> LLMResponse:
        return self.fake.complete(messages, **options)
