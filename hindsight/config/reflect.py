"""The config of reflect and the reasoning after retain: answers, opinions, reinforcement, observations
(docs/ARCHITECTURE.md, Reflect)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hindsight.config.services import Section


class AnswerConfig(Section):
    """The answer of reflect: how much evidence it reads. Its length is bounded by the reply's schema, and the reply's
    max_tokens covers the largest one the schema allows."""

    budget: int = Field(2048, ge=1, description="recall budget (tokens) of the evidence handed to the answer model; "
                        "a local model reads at most a quarter of its context window")
    temperature: float = Field(0.2, ge=0, le=2, description="of the answer and of the opinions formed with it")


class OpinionsConfig(Section):
    """Opinions formed by reflect; off for an agent that should answer without forming views."""

    enabled: bool = True
    max_per_reflect: int = Field(3, ge=0, le=10, description="opinions asked for and kept per reflect call")


class ReinforceConfig(Section):
    """Opinion reinforcement after retain: `c' = min(c+a,1) | max(c-a,0) | max(c-2a,0) | c` for reinforce /
    weaken / contradict / neutral. One LLM call per new fact with candidate opinions: off saves those calls."""

    enabled: bool = True
    alpha: float = Field(0.1, gt=0, le=0.5, description="how far one piece of evidence moves a confidence (a new "
                         "opinion's too: 0.4 + alpha per cited fact, at most 0.8)")
    cosine: float = Field(0.6, ge=-1, le=1, description="opinions this close to a new fact are candidates")
    max_candidates: int = Field(5, ge=1, description="opinions assessed per new fact")
    max_facts: int = Field(5, ge=1, description="new facts shown with one opinion")
    max_tokens: int = Field(200, ge=1)


class ObservationsConfig(Section):
    """Observations: objective summaries of an entity's facts, regenerated after retain (one LLM call per
    touched entity: off saves those calls)."""

    enabled: bool = True
    min_facts: int = Field(2, ge=1, description="facts an entity needs before it is summarised")
    max_facts: int = Field(30, ge=1, description="most recent facts of the entity in the prompt")
    max_count: int = Field(7, ge=1, description="observations per entity")
    debounce_seconds: float = Field(1.0, ge=0, description="quiet time after retain before regenerating")
    max_tokens: int = Field(400, ge=1)


class WorkConfig(Section):
    """The reasoning work retain queues (reinforcement, observations); it needs an LLM."""

    # Whether the engine's job thread works the queue off after retain. auto: only when the LLM is configured
    # (llm section, HINDSIGHT_LLM_* variables or Hindsight(llm=...)), never for a local model found installed.
    # false: nothing runs until bank.process_pending(), for hosts that schedule LLM work themselves.
    background: Literal["auto"] | bool = "auto"
    batch_size: int = Field(50, ge=1, description="queued items taken per processing round")


class ProfileConfig(Section):
    """The bank's profile, whose background reflect merges new biography into."""

    max_background_chars: int = Field(1200, ge=100, description="merged backgrounds longer than this are cut")


class ReflectConfig(Section):
    """Reflect and the background reasoning."""

    answer: AnswerConfig = Field(default_factory=AnswerConfig)
    opinions: OpinionsConfig = Field(default_factory=OpinionsConfig)
    reinforce: ReinforceConfig = Field(default_factory=ReinforceConfig)
    observations: ObservationsConfig = Field(default_factory=ObservationsConfig)
    work: WorkConfig = Field(default_factory=WorkConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
