"""Opinion reinforcement (docs/ARCHITECTURE.md, Retain: reinforcement): new facts move the confidence of the opinions
they bear on.

Candidates of a new fact are the opinions that share an entity with it or whose embedding is close to it
(cosine > reinforce_cosine). Each candidate opinion is assessed once against all of its new facts; the verdict
moves its confidence by the update rule (a contradiction by the person the opinion is about, in their own words,
drops it to 0: reflect/authority.py), a contradiction may also revise its text (not into a claim of fact:
hindsight/reflect/judgment.py), and every change is recorded
in the opinion's history with the facts as evidence, dated when the facts happened (the latest `mentioned_at`).

A fact is new evidence for an opinion only if it was retained after the opinion was formed (a fact queued at retain
time may be worked off only after a later reflect formed an opinion from it, or beside it) and is not already in the
opinion's history (its formation evidence, or an earlier assessment that a crash or close kept from being marked
done).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hindsight.errors import LLMError
from hindsight.llm.base import StructuredOutputError
from hindsight.models import LLMUsage, MemoryUnit, Network, OpinionEvent, Verdict
from hindsight.reflect.authority import own_word
from hindsight.reflect.judgment import is_judgment
from hindsight.reflect.opinions import OpinionVectors, updated_confidence
from hindsight.reflect.prompts import assess_messages
from hindsight.reflect.schemas import AssessmentOut
from hindsight.reflect.stage import Stage, is_transient
from hindsight.reflect.types import OpinionChange
from hindsight.reflect.writer import Revision, SourcesForgottenError
from hindsight.store.base import UnitUpdate
from hindsight.units import BankHandle

log = logging.getLogger(__name__)

FACT_NETWORKS = {Network.WORLD, Network.EXPERIENCE}


@dataclass
class ReinforceOutcome:
    """The opinions changed by one batch of new facts, the LLM usage and how many assessments failed."""

    changes: list[OpinionChange] = field(default_factory=list)
    usage: LLMUsage = field(default_factory=LLMUsage)
    failures: int = 0
    complete: bool = True  # every candidate was assessed (or failed for good)
    error: LLMError | None = None  # the transient failure (timeout, lost connection) that stopped the batch


class Reinforcer(Stage):
    """Assesses held opinions against new facts and applies the update rule."""

    def candidates(self, bank_id: str, facts: Sequence[MemoryUnit]) -> dict[str, list[MemoryUnit]]:
        """Opinion id -> the facts it is a candidate for, in the order given (each fact: entity-sharing opinions first,
        then the closest)."""
        held = OpinionVectors.load(self.store, bank_id)
        if not held.ids or not facts:
            return {}
        refs = self.store.unit_entities(bank_id, [f.id for f in facts])
        vectors, _ = self.writer.embedder.embed([f.text for f in facts])
        out: dict[str, list[MemoryUnit]] = {}
        k = self.config.reinforce.max_candidates
        for fact, vector in zip(facts, vectors, strict=True):
            sharing = self.store.units_of_entities(bank_id, [r.id for r in refs.get(fact.id, [])],
                                                   {Network.OPINION}, k)
            close = [oid for oid, _ in held.similar(vector, self.config.reinforce.cosine)]
            for oid in list(dict.fromkeys([*sharing, *close]))[:k]:
                out.setdefault(oid, []).append(fact)
        return out

    def process(self, bank: BankHandle, fact_ids: Sequence[str], should_stop: Callable[[], bool]) -> ReinforceOutcome:
        """Assess every candidate opinion of the new facts; one transaction per changed opinion. Stops before the
        next opinion when `should_stop()` or on a transient LLM failure (`complete` is then False)."""
        outcome = ReinforceOutcome()
        facts = [u for u in self.store.get_units(bank.bank_id, list(fact_ids)) if u.network in FACT_NETWORKS]
        for opinion_id, evidence in self.candidates(bank.bank_id, facts).items():
            if should_stop():
                outcome.complete = False
                return outcome
            found = self.store.get_units(bank.bank_id, [opinion_id])
            evidence = self._new_evidence(bank.bank_id, found[0], evidence) if found else []
            if not evidence:
                continue  # forgotten meanwhile, or no fact is new to it
            try:
                change = self._assess(bank, found[0], evidence, outcome)
            except SourcesForgottenError as exc:
                log.info("bank %s: opinion %s not updated: %s", bank.bank_id, opinion_id, exc)
                continue
            except LLMError as exc:
                if is_transient(exc):
                    outcome.complete, outcome.error = False, exc
                    return outcome
                outcome.failures += 1
                log.warning("bank %s: assessing opinion %s against facts %s failed, skipped: %s", bank.bank_id,
                            opinion_id, [f.id for f in evidence], exc)
                continue
            if change is not None:
                outcome.changes.append(change)
        return outcome

    def _new_evidence(self, bank_id: str, opinion: MemoryUnit, facts: list[MemoryUnit]) -> list[MemoryUnit]:
        """The first `reinforce_max_facts` facts that were retained after the opinion was formed and that it has not
        weighed yet (see the module docstring)."""
        weighed = {i for e in self.store.opinion_history(bank_id, opinion.id) for i in e.evidence}
        new = [f for f in facts if f.created_at > opinion.created_at and f.id not in weighed]
        return new[: self.config.reinforce.max_facts]

    def _assess(
        self, bank: BankHandle, opinion: MemoryUnit, evidence: list[MemoryUnit], outcome: ReinforceOutcome
    ) -> OpinionChange | None:
        try:
            reply = self.llm.structured(assess_messages(opinion, evidence), AssessmentOut,
                                        max_retries=self.max_retries, max_tokens=self.config.reinforce.max_tokens,
                                        temperature=0.0)
        except StructuredOutputError as exc:
            outcome.usage = outcome.usage + exc.usage
            raise
        outcome.usage = outcome.usage + reply.usage
        verdict = reply.value.answer.verdict
        if verdict == Verdict.NEUTRAL:
            return None
        before = opinion.confidence if opinion.confidence is not None else 0.5
        confidence = updated_confidence(before, verdict, self.config.reinforce.alpha)
        reason = reply.value.reason
        own = own_word(opinion.entities, evidence) if verdict == Verdict.CONTRADICT else []
        if own:  # the person it is about says otherwise (reflect/authority.py)
            confidence = 0.0
            reason = f"{reason} [contradicted by the person's own word: {', '.join(f.id for f in own)}]"
        revised = reply.value.revised_opinion if verdict == Verdict.CONTRADICT else None
        text = revised.strip() if revised and revised.strip() else opinion.text
        if text != opinion.text and not is_judgment(text):
            log.info("bank %s: the revision of opinion %s is a claim of fact; the opinion keeps its text",
                     bank.bank_id, opinion.id)
            text = opinion.text
        event = OpinionEvent(unit_id=opinion.id, verdict=verdict, confidence=confidence, text=text,
                             evidence=[f.id for f in evidence], reason=reason,
                             at=max(f.mentioned_at for f in evidence))
        if text != opinion.text:
            self.writer.write(bank, revisions=[Revision(opinion.id, text, confidence)], events=[event])
        else:
            self.writer.write(bank, updates=[UnitUpdate(opinion.id, confidence=confidence)], events=[event])
        unit = self.store.get_units(bank.bank_id, [opinion.id])[0]
        return OpinionChange(unit=unit, event=event, previous_confidence=opinion.confidence,
                             previous_text=opinion.text if text != opinion.text else None)
