"""Pydantic schemas of the LLM's reasoning output: a reflect reply and its opinions (paper appendix A.5),
assessments, observations.

Lenient where small models are sloppy (aliases, strings for lists of numbers), strict where it matters
(an opinion needs text, a verdict must be one of the four). The JSON schema the model is given (in the prompt, as a
llama.cpp grammar, as an OpenAI response format) holds only what it fills: no class docstrings, no generated titles.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, ConfigDict, Field, field_validator

from hindsight.llm.schema import LenientOutput, numbers
from hindsight.reflect.types import Assessment
from hindsight.text import has_visible

_ANSWER_ALIASES = {
    "agree": "agrees", "reinforce": "agrees", "reinforces": "agrees", "supports": "agrees", "support": "agrees",
    "doubt": "doubts", "weaken": "doubts", "weakens": "doubts", "casts doubt": "doubts",
    "disagree": "disagrees", "contradict": "disagrees", "contradicts": "disagrees",
    "neutral": "unrelated", "irrelevant": "unrelated", "none": "unrelated",
}


# A revised opinion (reinforcement) and an assessment's reason: bounded so that a small model looping in one still
# closes the JSON under constrained decoding.
_OPINION_SCHEMA: dict[str, Any] = {"maxLength": 300}


def _in_order(*fields: str) -> ConfigDict:
    """Model config whose schema requires `fields`, in this order: llama.cpp's grammar writes the required fields
    first and lets the model skip the others, so without it a reply could open with its answer and end before its
    sources."""
    return LenientOutput.model_config | {"json_schema_extra": {"required": list(fields)}}
MAX_OBSERVATION_SOURCES = 30

# The bounds of a reflect reply: with constrained decoding a model that loops in a string is stopped by its maxLength,
# and `reflect_max_tokens` covers the largest reply these bounds allow, so a valid reply is never cut off.
ANSWER_CHARS = 700
OPINION_CHARS = 200
REASONING_CHARS = 160
MAX_OPINION_SOURCES = 5
MAX_ANSWER_SOURCES = 8
# Characters of a reply outside its strings: keys, quotes, brackets, numbers and the whitespace between them.
_REPLY_FRAME_CHARS = 160
_OPINION_FRAME_CHARS = 200


def reflect_max_tokens(max_opinions: int) -> int:
    """Completion tokens that hold the largest ReflectOut with `max_opinions` opinions: two per character of its
    strings (an escaped character is two, a rare letter may be two tokens) and one per character of the rest. A local
    model's reply is also bounded by the context window its prompt leaves."""
    opinion = 2 * (OPINION_CHARS + REASONING_CHARS) + _OPINION_FRAME_CHARS
    return _REPLY_FRAME_CHARS + 6 * MAX_ANSWER_SOURCES + 2 * ANSWER_CHARS + max(0, max_opinions) * opinion


class OpinionOut(LenientOutput):
    """One opinion: a first-person judgment, the numbers of the memories it rests on and why. No confidence: the
    engine derives it from the cited memories (hindsight/reflect/opinions.py); no entities: they are the evidence's
    entities the opinion names."""

    model_config = _in_order("opinion", "sources", "reasoning")

    opinion: str = Field(min_length=3, validation_alias=AliasChoices("opinion", "text", "statement"),
                         json_schema_extra={"maxLength": OPINION_CHARS})
    # Before the reasoning: a small model that fills the reasoning up to its length bound then closes the object
    # without the fields after it.
    sources: list[int] = Field(default_factory=list,
                               validation_alias=AliasChoices("sources", "source", "citations", "memories", "evidence"),
                               json_schema_extra={"maxItems": MAX_OPINION_SOURCES})
    reasoning: str = Field("", validation_alias=AliasChoices("reasoning", "reason", "why"),
                           json_schema_extra={"maxLength": REASONING_CHARS})

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        return numbers(value)[:MAX_OPINION_SOURCES]

    @field_validator("reasoning", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value


class ReflectOut(LenientOutput):
    """One reflect reply: whether the memories answer the question, the numbers of the memories the answer uses, the
    answer in the bank's voice, and the opinions it shows. `known` and `sources` come first, so that the answer
    follows from the memories chosen (small models rarely cite inline, "[2]", though they may)."""

    model_config = _in_order("known", "sources", "answer", "opinions")

    known: bool = Field(True, validation_alias=AliasChoices("known", "answerable", "knows"))
    sources: list[int] = Field(default_factory=list,
                               validation_alias=AliasChoices("sources", "citations", "memories", "cited"),
                               json_schema_extra={"maxItems": MAX_ANSWER_SOURCES})
    answer: str = Field(min_length=1, validation_alias=AliasChoices("answer", "response", "text"),
                        json_schema_extra={"maxLength": ANSWER_CHARS})
    opinions: list[OpinionOut] = Field(default_factory=list)

    @field_validator("known", mode="before")
    @classmethod
    def _known(cls, value: Any) -> Any:
        return True if value is None else value

    @field_validator("sources", mode="before")
    @classmethod
    def _answer_sources(cls, value: Any) -> Any:
        return numbers(value)

    @field_validator("answer")
    @classmethod
    def _visible(cls, value: str) -> str:
        if not has_visible(value):
            raise ValueError("the answer has no visible text")
        return value.strip()


class AssessmentOut(LenientOutput):
    """How new facts bear on one opinion, and why; facts that show it wrong may come with the opinion rewritten. The
    verdict comes first: the order its figures were measured in (docs/DECISIONS.md, "The reinforcement question")."""

    model_config = _in_order("answer", "reason", "revised_opinion")

    answer: Assessment = Field(validation_alias=AliasChoices("answer", "verdict"))
    # Bounded for constrained decoding: a small model that loops in its reason still closes its JSON.
    reason: str = Field("", json_schema_extra={"maxLength": 200})
    revised_opinion: str | None = Field(None, validation_alias=AliasChoices("revised_opinion", "revised", "revision"),
                                        json_schema_extra=_OPINION_SCHEMA)

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, value: Any) -> Any:
        if isinstance(value, str):
            key = value.strip().lower()
            return _ANSWER_ALIASES.get(key, key)
        return value

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("revised_opinion", mode="before")
    @classmethod
    def _revised(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip().lower() in {"", "null", "none", "n/a"} else value


class ObservationOut(LenientOutput):
    model_config = _in_order("text", "sources")

    text: str = Field(min_length=3, validation_alias=AliasChoices("text", "observation"))
    sources: list[int] = Field(default_factory=list, validation_alias=AliasChoices("sources", "facts", "source"),
                               json_schema_extra={"maxItems": MAX_OBSERVATION_SOURCES})

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        return numbers(value)


class ObservationsOut(LenientOutput):
    observations: list[ObservationOut] = Field(min_length=1)


class BackgroundOut(LenientOutput):
    background: str = Field(min_length=1)
