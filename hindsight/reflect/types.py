"""Typed results of reflect, opinion updates and observation regeneration."""

from __future__ import annotations

from collections import Counter
from enum import Enum

from pydantic import BaseModel, Field

from hindsight.models import LLMUsage, MemoryUnit, OpinionEvent, Verdict


class Assessment(str, Enum):
    """The answers the LLM may give when it weighs new facts against an opinion, in the plain words it is asked in
    (small local models tell "agrees"/"disagrees" apart where they do not tell "reinforce"/"contradict" apart)."""

    AGREES = "agrees"
    DOUBTS = "doubts"
    DISAGREES = "disagrees"
    UNRELATED = "unrelated"

    @property
    def verdict(self) -> Verdict:
        """The verdict of the confidence update rule (docs/ARCHITECTURE.md, Retain)."""
        return _VERDICTS[self]


_VERDICTS = {Assessment.AGREES: Verdict.REINFORCE, Assessment.DOUBTS: Verdict.WEAKEN,
             Assessment.DISAGREES: Verdict.CONTRADICT, Assessment.UNRELATED: Verdict.NEUTRAL}


class RejectReason(str, Enum):
    """Why an opinion candidate is not an opinion (hindsight/reflect/opinion_check.py says what each means)."""

    NOT_KNOWING = "not_knowing"
    QUESTION = "question"
    EMPTY = "empty"
    COPIES_EVIDENCE = "copies_evidence"
    NOT_FIRST_PERSON = "not_first_person"
    FACTUAL_CLAIM = "factual_claim"
    UNCITED = "uncited"
    UNSUPPORTED = "unsupported"


class RejectedOpinion(BaseModel):
    """An opinion candidate of a reflect answer that was not stored, and why."""

    text: str
    reason: RejectReason


class OpinionChange(BaseModel):
    """An opinion formed or updated: the unit as it is now and the event that changed it."""

    unit: MemoryUnit
    event: OpinionEvent
    previous_confidence: float | None = None
    previous_text: str | None = None


class Usage(BaseModel):
    """LLM token usage of one operation, summed over its calls (failed attempts included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @classmethod
    def of(cls, usage: LLMUsage) -> Usage:
        return cls(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens, calls=usage.calls)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ReflectResult(BaseModel):
    """The answer of one reflect call, the evidence it was given (cited by unit id), the opinions it formed, and
    what it cost."""

    query: str
    answer: str
    evidence: list[MemoryUnit]
    cited: list[str] = Field(default_factory=list)  # evidence unit ids the answer names explicitly
    known: bool = True  # False: the model says the memories do not answer the question
    weak: str | None = None  # why the answer is not grounded in its memories (hindsight/reflect/grounding.py)
    retried: bool = False  # the first answer was not grounded and the model was asked once more
    opinions: list[OpinionChange] = Field(default_factory=list)
    rejected_opinions: list[RejectedOpinion] = Field(default_factory=list)  # candidates that are not opinions
    opinion_error: str | None = None  # why no opinions were formed (a refusal, no answer, evidence forgotten)
    model: str = ""  # the LLM that answered
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0  # wall time of the whole reflect, recall included

    @property
    def rejected_by_reason(self) -> dict[RejectReason, int]:
        """How many opinion candidates were rejected for each reason."""
        return dict(Counter(r.reason for r in self.rejected_opinions))


class PendingProgress(BaseModel):
    """How far a `process_pending` call is: the items it has done, and those plus the items still queued."""

    done: int
    total: int


class PendingReport(BaseModel):
    """What one `process_pending` call did."""

    reinforced: list[OpinionChange] = Field(default_factory=list)
    observations_regenerated: dict[str, list[str]] = Field(default_factory=dict)  # entity id -> observation ids
    failures: int = 0
    interrupted: bool = False  # stopped early (close, or the LLM unreachable): what is left stays queued
    usage: Usage = Field(default_factory=Usage)

    def add_usage(self, usage: LLMUsage) -> None:
        self.usage = Usage(
            prompt_tokens=self.usage.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens + usage.completion_tokens,
            calls=self.usage.calls + usage.calls,
        )
