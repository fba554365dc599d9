"""Entity observations (paper appendix A.3): objective third-person summaries of what the facts say about an entity.

An entity's observations are units of the observation network in the pseudo-document `_observations:<entity id>`,
linked to the entity and to the facts each one cites. Regeneration replaces them all in one transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hindsight.llm.schema import with_max_items
from hindsight.models import LLMUsage, MemoryUnit, Network
from hindsight.reflect.prompts import observation_messages
from hindsight.reflect.reinforce import FACT_NETWORKS
from hindsight.reflect.schemas import ObservationsOut
from hindsight.reflect.stage import Stage
from hindsight.reflect.writer import DerivedUnit, observations_document
from hindsight.units import BankHandle

log = logging.getLogger(__name__)

MIN_OBSERVATIONS = 3


@dataclass
class ObservationOutcome:
    """The observations written for one entity (empty when it has too few facts) and the LLM usage."""

    entity_id: str
    units: list[MemoryUnit] = field(default_factory=list)
    removed: int = 0
    usage: LLMUsage = field(default_factory=LLMUsage)


class ObservationBuilder(Stage):
    """Regenerates the observations of one entity from its most recent facts."""

    def regenerate(self, bank: BankHandle, entity_id: str) -> ObservationOutcome:
        """Replace the entity's observations; raises LLMError (leaving the old ones) when the model fails."""
        outcome = ObservationOutcome(entity_id)
        old = [u.id for u in self.store.document_units(bank.bank_id, observations_document(entity_id))]
        ids = self.store.units_of_entities(bank.bank_id, [entity_id], FACT_NETWORKS, self.config.observations.max_facts)
        facts = sorted(self.store.get_units(bank.bank_id, ids), key=lambda u: (u.occurred_start or u.mentioned_at))
        name = self._name(bank.bank_id, entity_id, ids)
        if name is None or len(facts) < self.config.observations.min_facts:
            if old and not facts:  # the entity's facts were forgotten: so are its observations
                self.writer.write(bank, delete_ids=old)
                outcome.removed = len(old)
            return outcome
        high = self.config.observations.max_count
        messages = observation_messages(name, facts, min(MIN_OBSERVATIONS, high), high, bank.zone)
        schema = with_max_items(ObservationsOut, "observations", high)
        reply = self.llm.structured(messages, schema, max_retries=self.max_retries,
                                    max_tokens=self.config.observations.max_tokens, temperature=0.0)
        outcome.usage = reply.usage
        add = []
        for obs in reply.value.observations[:high]:
            cited = [facts[n - 1] for n in dict.fromkeys(obs.sources) if 1 <= n <= len(facts)]
            if not cited:
                log.debug("observation of %s cites no valid fact; citing all %d facts", name, len(facts))
            add.append(DerivedUnit(text=obs.text.strip(), network=Network.OBSERVATION,
                                   document_id=observations_document(entity_id), sources=cited or facts,
                                   entities={entity_id: name}, metadata={"entity_id": entity_id}))
        outcome.units = self.writer.write(bank, add, delete_ids=old)
        outcome.removed = len(old)
        return outcome

    def _name(self, bank_id: str, entity_id: str, fact_ids: list[str]) -> str | None:
        """The entity's canonical name, read off one of its facts (None when it has none)."""
        refs = self.store.unit_entities(bank_id, fact_ids[:1]).get(fact_ids[0], []) if fact_ids else []
        return next((r.name for r in refs if r.id == entity_id), None)
