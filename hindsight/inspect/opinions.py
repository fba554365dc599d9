"""Opinion trajectories: each opinion's confidence over time, with the evidence behind every change.

Built on the bank's opinion history (`Bank.opinion_history`): one point per recorded event (formed, reinforce,
weaken, contradict), with the verdict the LLM gave, the confidence after it, the opinion's text then (a contradiction
may revise it), the LLM's reason, and the evidence units read back from the bank. Points keep the order the events
were applied in; their times are the bank's time (`OpinionEvent.at`: when the evidence was said, or the reflect's
query time), so an imported or backfilled history still reads as a trajectory over the story it tells.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from hindsight.errors import InvalidInputError, UnitNotFoundError
from hindsight.models import MemoryUnit, Network, OpinionEvent, Verdict

if TYPE_CHECKING:
    from hindsight.bank import Bank

OpinionOrder = Literal["changes", "confidence", "recent"]


class EvidenceUnit(BaseModel):
    """A unit cited as evidence for an opinion event; `text` is None when the unit was forgotten since."""

    id: str
    text: str | None = None
    network: Network | None = None
    mentioned_at: datetime | None = None


class TrajectoryPoint(BaseModel):
    """One event of an opinion: the confidence after it (and before it, unless the opinion was formed here)."""

    time: datetime
    verdict: Verdict
    confidence: float = Field(ge=0.0, le=1.0)
    before: float | None = None
    text: str
    reason: str = ""
    evidence: list[EvidenceUnit] = Field(default_factory=list)

    @property
    def delta(self) -> float:
        """The confidence change of this event (0 when the opinion was formed)."""
        return 0.0 if self.before is None else self.confidence - self.before


class OpinionTrajectory(BaseModel):
    """An opinion as it is now (text, confidence) and its events, oldest first."""

    unit_id: str
    opinion: str
    confidence: float
    points: list[TrajectoryPoint] = Field(min_length=1)

    def changes(self) -> list[TrajectoryPoint]:
        """The events after the opinion was formed (reinforce, weaken, contradict)."""
        return [p for p in self.points if p.verdict is not Verdict.FORMED]

    @property
    def latest(self) -> TrajectoryPoint:
        return self.points[-1]


class OpinionSummary(BaseModel):
    """The opinion network at a glance: how many opinions and recorded changes, the most confident opinions, and
    the opinion that changed last (its `latest` point is that change)."""

    count: int
    changes: int
    most_confident: list[OpinionTrajectory]
    latest_change: OpinionTrajectory | None


@dataclass
class _Held:
    """An opinion unit with its recorded history (no evidence read yet)."""

    unit: MemoryUnit
    history: list[OpinionEvent]

    @property
    def changes(self) -> int:
        return sum(1 for e in self.history if e.verdict is not Verdict.FORMED)

    @property
    def last(self) -> datetime:
        return self.history[-1].at if self.history else self.unit.mentioned_at


def _held(bank: Bank) -> list[_Held]:
    return [_Held(u, bank.opinion_history(u.id)) for u in bank.units(Network.OPINION)]


def _ranked(held: list[_Held], by: OpinionOrder) -> list[_Held]:
    """Most changes (then most recent) first, most confident first, or most recently changed (in the bank's time)
    first."""
    if by == "changes":
        return sorted(held, key=lambda h: (h.changes, h.last), reverse=True)
    if by == "confidence":
        return sorted(held, key=lambda h: (h.unit.confidence or 0.0, h.last), reverse=True)
    if by == "recent":
        return sorted(held, key=lambda h: h.last, reverse=True)
    raise InvalidInputError(f"unknown order {by!r}; expected changes, confidence or recent")


def _trajectory(bank: Bank, held: _Held, found: dict[str, MemoryUnit | None]) -> OpinionTrajectory:
    """The trajectory of one opinion; `found` caches evidence units across opinions (None: forgotten)."""

    def evidence(unit_id: str) -> EvidenceUnit:
        if unit_id not in found:
            try:
                found[unit_id] = bank.get_unit(unit_id)
            except UnitNotFoundError:
                found[unit_id] = None
        unit = found[unit_id]
        if unit is None:
            return EvidenceUnit(id=unit_id)
        return EvidenceUnit(id=unit_id, text=unit.text, network=unit.network, mentioned_at=unit.mentioned_at)

    points: list[TrajectoryPoint] = []
    for event in held.history:
        before = points[-1].confidence if points else None
        points.append(
            TrajectoryPoint(
                time=event.at,
                verdict=event.verdict,
                confidence=event.confidence,
                before=before,
                text=event.text,
                reason=event.reason,
                evidence=[evidence(i) for i in event.evidence],
            )
        )
    unit = held.unit
    confidence = unit.confidence if unit.confidence is not None else 0.0
    if not points:  # every stored opinion has a history; should one not, it shows as formed when it was written
        points.append(
            TrajectoryPoint(time=unit.mentioned_at, verdict=Verdict.FORMED, confidence=confidence, text=unit.text)
        )
    return OpinionTrajectory(unit_id=unit.id, opinion=unit.text, confidence=confidence, points=points)


def opinion_trajectory(bank: Bank, unit_id: str) -> OpinionTrajectory:
    """The trajectory of one opinion unit, with its evidence texts."""
    unit = bank.get_unit(unit_id)
    if unit.network is not Network.OPINION:
        raise InvalidInputError(f"unit {unit_id!r} is a {unit.network.value} unit, not an opinion")
    return _trajectory(bank, _Held(unit, bank.opinion_history(unit_id)), {})


def opinion_trajectories(bank: Bank, top_k: int | None = None, by: OpinionOrder = "changes") -> list[OpinionTrajectory]:
    """The bank's opinion trajectories, with their evidence texts: the `top_k` (default all) with the most changes,
    the highest confidence, or the most recent change first (`by`)."""
    if top_k is not None and top_k < 1:
        raise InvalidInputError("top_k must be >= 1")
    ranked = _ranked(_held(bank), by)[:top_k]
    found: dict[str, MemoryUnit | None] = {}
    return [_trajectory(bank, h, found) for h in ranked]


def opinion_summary(bank: Bank, top: int = 3) -> OpinionSummary:
    """Counts, the `top` most confident opinions and the latest change; evidence is read only for those shown."""
    if top < 1:
        raise InvalidInputError("top must be >= 1")
    held = _held(bank)
    found: dict[str, MemoryUnit | None] = {}
    changed = [h for h in held if h.changes]
    latest = max(changed, key=lambda h: h.last, default=None)
    return OpinionSummary(
        count=len(held),
        changes=sum(h.changes for h in held),
        most_confident=[_trajectory(bank, h, found) for h in _ranked(held, "confidence")[:top]],
        latest_change=None if latest is None else _trajectory(bank, latest, found),
    )
