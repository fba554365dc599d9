"""Opinion trajectories: an opinion's confidence over time, with the evidence behind each change.

The bank does not keep a confidence history yet (opinion reinforcement is being built); until it does, a trajectory
is built from typed points, and `current_trajectories` gives each stored opinion its present confidence.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import BaseModel, Field, field_validator

from hindsight.errors import InvalidInputError
from hindsight.models import MemoryUnit, Network, as_utc

_EPS = 1e-9


class ChangeKind(str, Enum):
    """How a confidence moved between two points: the update kinds of opinion reinforcement."""

    REINFORCE = "reinforce"
    WEAKEN = "weaken"
    CONTRADICT = "contradict"
    NEUTRAL = "neutral"


class ConfidencePoint(BaseModel):
    """The confidence of an opinion at a time, and the evidence (a fact's text or id) that set it."""

    time: datetime
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: str | None = None

    @field_validator("time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)


class ConfidenceChange(BaseModel):
    """One step of a trajectory."""

    time: datetime
    before: float
    after: float
    kind: ChangeKind
    evidence: str | None


class OpinionTrajectory(BaseModel):
    """An opinion's text and its confidence points, oldest first."""

    opinion: str
    points: list[ConfidencePoint]

    @field_validator("points")
    @classmethod
    def _ordered(cls, points: list[ConfidencePoint]) -> list[ConfidencePoint]:
        if not points:
            raise ValueError("a trajectory needs at least one point")
        return sorted(points, key=lambda p: p.time)

    def changes(self, step: float = 0.1) -> list[ConfidenceChange]:
        """Each step with its kind: a drop of more than `step` (the reinforcement step a) is a contradiction."""
        if step <= 0.0:
            raise InvalidInputError("step must be > 0")
        out = []
        for before, after in zip(self.points, self.points[1:], strict=False):
            delta = after.confidence - before.confidence
            if delta > _EPS:
                kind = ChangeKind.REINFORCE
            elif delta < -step - _EPS:
                kind = ChangeKind.CONTRADICT
            elif delta < -_EPS:
                kind = ChangeKind.WEAKEN
            else:
                kind = ChangeKind.NEUTRAL
            out.append(
                ConfidenceChange(
                    time=after.time,
                    before=before.confidence,
                    after=after.confidence,
                    kind=kind,
                    evidence=after.evidence,
                )
            )
        return out


def current_trajectories(units: list[MemoryUnit]) -> list[OpinionTrajectory]:
    """One single-point trajectory per opinion unit (its present confidence at its mention time)."""
    return [
        OpinionTrajectory(opinion=u.text, points=[ConfidencePoint(time=u.mentioned_at, confidence=u.confidence)])
        for u in units
        if u.network is Network.OPINION and u.confidence is not None
    ]
