"""The opinion network: forming opinions from a reflect answer and the confidence update rule (docs/ARCHITECTURE.md,
Retain: reinforcement).

An opinion is a unit of the opinion network with a confidence in [0, 1], linked to the entities it is about and to
the evidence it was formed from; every change of it is an `OpinionEvent` in its history.

Its first confidence is not the model's say (small models answer 0.9 or 1.0 for anything) but
`min(0.4 + alpha * k, 0.8)`: k is the number of distinct memories it cites that bear on it (opinion_check.py) and are
not opinions (facts, experiences, observations), and alpha is `reflect.reinforce.alpha`, so each counts as one
reinforcing fact would. One such fact makes 0.5; an opinion that cites only the bank's other opinions starts below
even odds, at 0.4. The cap keeps certainty for later: one reflect's evidence comes from one recall, and the model
may cite generously; above 0.8 an opinion has to climb by the update rule, as facts retained later reinforce it. An
opinion that restates a held one reinforces it (one step of the rule) only with cited facts the held opinion has not
weighed yet: asking the same question again is no new evidence.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from hindsight.models import MemoryUnit, Network, OpinionEvent, Verdict
from hindsight.reflect.opinion_check import CitedOpinion
from hindsight.reflect.schemas import OpinionOut
from hindsight.reflect.stage import Stage
from hindsight.reflect.types import OpinionChange
from hindsight.reflect.writer import OPINIONS_DOCUMENT, DerivedUnit
from hindsight.store.base import EntityRef, MemoryStore, UnitFilter, UnitUpdate
from hindsight.units import BankHandle

log = logging.getLogger(__name__)

# A new opinion this close to a held one is the same opinion, reinforced, not a second copy.
SAME_OPINION_COSINE = 0.9
FORMED_PRIOR = 0.4  # the first confidence before any cited fact (the module docstring)
FORMED_CAP = 0.8


def formed_confidence(sources: Sequence[MemoryUnit], alpha: float) -> float:
    """min(0.4 + alpha * k, 0.8), k the distinct cited memories that are not opinions (the module docstring)."""
    facts = {u.id for u in sources if u.network != Network.OPINION}
    return round(min(FORMED_PRIOR + alpha * len(facts), FORMED_CAP), 6)


def updated_confidence(confidence: float, verdict: Verdict, alpha: float) -> float:
    """c' = min(c+a, 1) | max(c-a, 0) | max(c-2a, 0) | c for reinforce | weaken | contradict | neutral."""
    if verdict == Verdict.REINFORCE:
        return min(confidence + alpha, 1.0)
    if verdict == Verdict.WEAKEN:
        return max(confidence - alpha, 0.0)
    if verdict == Verdict.CONTRADICT:
        return max(confidence - 2 * alpha, 0.0)
    return confidence


@dataclass
class OpinionVectors:
    """The bank's opinions with their stored embeddings (rows L2-normalized)."""

    ids: list[str]
    matrix: np.ndarray

    @classmethod
    def load(cls, store: MemoryStore, bank_id: str) -> OpinionVectors:
        labels = sorted(store.filtered_labels(bank_id, UnitFilter(networks=frozenset({Network.OPINION}))))
        rows = store.indexed_units(bank_id, labels) if labels else []
        matrix = np.stack([r.embedding for r in rows]) if rows else np.zeros((0, 0), dtype=np.float32)
        return cls([r.unit_id for r in rows], matrix)

    def similar(self, vector: np.ndarray, threshold: float) -> list[tuple[str, float]]:
        """Opinions with cosine >= threshold to `vector`, closest first."""
        if not self.ids:
            return []
        sims = self.matrix @ vector
        order = np.argsort(-sims)
        return [(self.ids[i], float(sims[i])) for i in order if sims[i] >= threshold]


class OpinionFormer(Stage):
    """Stores the opinions a reflect answer shows (paper appendix A.5), or reinforces held ones they restate."""

    def store_opinions(
        self,
        bank: BankHandle,
        opinions: Sequence[CitedOpinion],
        evidence: Sequence[MemoryUnit],
        at: datetime | None = None,
    ) -> list[OpinionChange]:
        """Store new opinions, or reinforce a held one that says the same on new evidence; all in one transaction.
        `evidence` is all the model was handed (the entities of an opinion are those of it that the opinion names).
        Their events are dated `at` (the bank's time of the reflect), default now."""
        if not opinions:
            return []
        when = at or datetime.now(timezone.utc)
        refs = self.store.unit_entities(bank.bank_id, [u.id for u in evidence])
        held = OpinionVectors.load(self.store, bank.bank_id)
        vectors, _ = self.writer.embedder.embed([o.opinion.opinion for o in opinions])
        alpha = self.config.reinforce.alpha
        add: list[DerivedUnit] = []
        updates: list[UnitUpdate] = []
        events: list[OpinionEvent] = []
        previous: dict[str, float | None] = {}
        for cited, vector in zip(opinions, vectors, strict=True):
            out, sources, reason = cited.opinion, cited.sources, cited.opinion.reasoning
            same = held.similar(vector, SAME_OPINION_COSINE)
            if same and same[0][0] in previous:
                continue  # a second restatement of one held opinion in the same answer
            if same:
                unit = self.store.get_units(bank.bank_id, [same[0][0]])[0]
                weighed = {i for e in self.store.opinion_history(bank.bank_id, unit.id) for i in e.evidence}
                new = [s for s in sources if s.network != Network.OPINION and s.id not in weighed]
                previous[unit.id] = unit.confidence
                if not new:
                    log.debug("reflect: opinion %s restated on evidence it has weighed; unchanged", unit.id)
                    continue
                confidence = updated_confidence(unit.confidence or 0.0, Verdict.REINFORCE, alpha)
                updates.append(UnitUpdate(unit.id, confidence=confidence))
                events.append(OpinionEvent(unit_id=unit.id, verdict=Verdict.REINFORCE, confidence=confidence,
                                           text=unit.text, evidence=[s.id for s in new], reason=reason, at=when))
                continue
            confidence = formed_confidence(sources, alpha)
            derived = DerivedUnit(text=out.opinion, network=Network.OPINION, document_id=OPINIONS_DOCUMENT,
                                  sources=sources, confidence=confidence, entities=_entities_of(out, evidence, refs),
                                  metadata={"reasoning": reason})
            add.append(derived)
            events.append(OpinionEvent(unit_id=derived.id, verdict=Verdict.FORMED, confidence=confidence,
                                       text=out.opinion, evidence=[s.id for s in sources], reason=reason, at=when))
        if not events:
            return []
        self.writer.write(bank, add, updates=updates, events=events)
        units = {u.id: u for u in self.store.get_units(bank.bank_id, [e.unit_id for e in events])}
        return [OpinionChange(unit=units[e.unit_id], event=e, previous_confidence=previous.get(e.unit_id))
                for e in events if e.unit_id in units]


def _entities_of(
    out: OpinionOut, evidence: Sequence[MemoryUnit], refs: dict[str, list[EntityRef]]
) -> dict[str, str]:
    """Entities of the evidence that the opinion names (in its text or its reasoning); never new ones."""
    said = f"{out.opinion} {out.reasoning}".lower()
    found: dict[str, str] = {}
    for unit in evidence:
        for ref in refs.get(unit.id, []):
            if ref.name.lower() in said:
                found[ref.id] = ref.name
    return found
