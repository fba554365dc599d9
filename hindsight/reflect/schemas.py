"""Pydantic schemas of the LLM's reasoning output: opinions (paper appendix A.5), assessments, observations.

Lenient where small models are sloppy (aliases, strings for lists of names or numbers), strict where it matters
(an opinion needs text, a verdict must be one of the four). The JSON schema the model is given (in the prompt, as a
llama.cpp grammar, as an OpenAI response format) holds only what it fills: no class docstrings, no generated titles.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator

from hindsight.llm.schema import LenientOutput, numbers
from hindsight.reflect.types import Assessment

_ANSWER_ALIASES = {
    "agree": "agrees", "reinforce": "agrees", "reinforces": "agrees", "supports": "agrees", "support": "agrees",
    "doubt": "doubts", "weaken": "doubts", "weakens": "doubts", "casts doubt": "doubts",
    "disagree": "disagrees", "contradict": "disagrees", "contradicts": "disagrees",
    "neutral": "unrelated", "irrelevant": "unrelated", "none": "unrelated",
}


# Shown in the schema, not enforced: qwen-0.5b once listed one entity until max_tokens ran out.
MAX_OPINION_ENTITIES = 10
# An opinion's text and reasoning, and a revised opinion: bounded so that a small model looping in one still
# closes the JSON under constrained decoding.
_OPINION_SCHEMA: dict[str, Any] = {"maxLength": 300}
MAX_OBSERVATION_SOURCES = 30
MAX_OPINION_SOURCES = 10  # shown in the schema, like MAX_OPINION_ENTITIES


def _names(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    return value


class OpinionOut(LenientOutput):
    """One opinion: a first-person judgment, its reasoning and the numbers of the memories it rests on. No
    confidence: the engine derives it from the cited memories (hindsight/reflect/opinions.py)."""

    opinion: str = Field(min_length=3, validation_alias=AliasChoices("opinion", "text", "statement"),
                         json_schema_extra=_OPINION_SCHEMA)
    # Before the reasoning: a small model that fills the reasoning up to its length bound then closes the object
    # without the fields after it.
    sources: list[int] = Field(default_factory=list,
                               validation_alias=AliasChoices("sources", "source", "citations", "memories", "evidence"),
                               json_schema_extra={"maxItems": MAX_OPINION_SOURCES})
    reasoning: str = Field("", validation_alias=AliasChoices("reasoning", "reason", "why"),
                           json_schema_extra=_OPINION_SCHEMA)
    entities: list[str] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_OPINION_ENTITIES})

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        return numbers(value)

    @field_validator("entities", mode="before")
    @classmethod
    def _ents(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("reasoning", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value


class OpinionsOut(LenientOutput):
    opinions: list[OpinionOut] = Field(default_factory=list)


class AssessmentOut(LenientOutput):
    """How new facts bear on one opinion; facts that show it wrong may come with the opinion rewritten. The reason
    comes first, so that the model's answer follows from it."""

    # Bounded for constrained decoding: a small model that loops in its reason still reaches its answer.
    reason: str = Field("", json_schema_extra={"maxLength": 200})
    answer: Assessment = Field(validation_alias=AliasChoices("answer", "verdict"))
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
