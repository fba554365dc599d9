"""Writes units the engine derives itself (opinions, observations) the way retain writes facts.

A derived unit is embedded, linked to existing entities (it never creates one) and to the units it was derived from,
and committed in one transaction with any deletions, in-place updates and opinion events of the same step. The link
to a source unit is a causal `caused_by` link (weight 1.0): the opinion or observation exists because of that fact.
Its provenance (`source.turn_ids`) is the union of its sources' turns, so it stays traceable to the input.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from hindsight.config import HindsightConfig
from hindsight.embed.base import CachedEmbedder
from hindsight.errors import HindsightError
from hindsight.links import CausalTarget, LinkBuilder, LinkInput
from hindsight.models import CausalKind, ExtractedFact, MemoryUnit, Network, OpinionEvent, Source
from hindsight.store.base import MemoryStore, NewUnit, UnitUpdate, WriteBatch
from hindsight.units import DERIVED_DOCUMENT_PREFIX, BankHandle, unit_hash


class SourcesForgottenError(HindsightError):
    """A unit that derived memory would cite was forgotten while it was being derived; nothing was written."""


# In the namespace retain refuses for user documents.
OPINIONS_DOCUMENT = f"{DERIVED_DOCUMENT_PREFIX}opinions"
OBSERVATIONS_DOCUMENT = f"{DERIVED_DOCUMENT_PREFIX}observations:"  # + entity id


def observations_document(entity_id: str) -> str:
    return f"{OBSERVATIONS_DOCUMENT}{entity_id}"


@dataclass
class DerivedUnit:
    """A unit to add: its text, network, pseudo-document, sources and the existing entities it is about."""

    text: str
    network: Network
    document_id: str
    sources: list[MemoryUnit]
    confidence: float | None = None
    entities: dict[str, str] = field(default_factory=dict)  # entity id -> canonical name
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class Revision:
    """An opinion whose text changed: the new text is re-embedded and re-indexed in place."""

    unit_id: str
    text: str
    confidence: float


class UnitWriter:
    """Embeds, links and commits derived units, revisions and opinion events for one bank at a time."""

    def __init__(self, config: HindsightConfig, store: MemoryStore, embedder: CachedEmbedder) -> None:
        self.store = store
        self.embedder = embedder
        self.links = LinkBuilder(store, config.retain.links)

    def write(
        self,
        bank: BankHandle,
        add: Sequence[DerivedUnit] = (),
        *,
        delete_ids: Sequence[str] = (),
        updates: Sequence[UnitUpdate] = (),
        revisions: Sequence[Revision] = (),
        events: Sequence[OpinionEvent] = (),
    ) -> list[MemoryUnit]:
        """Commit everything in one transaction; returns the added units."""
        now = datetime.now(timezone.utc)
        facts = [self._fact(d, now) for d in add]
        texts = [d.text for d in add]  # no date: an opinion or a summary is not an event
        to_embed = [*texts, *(r.text for r in revisions)]
        vectors, hashes = self.embedder.embed(to_embed) if to_embed else (np.zeros((0, 0)), [])
        all_updates = list(updates) + [
            UnitUpdate(r.unit_id, confidence=r.confidence, text=r.text, embed_text=r.text,
                       embed_hash=hashes[len(texts) + i], embedding=vectors[len(texts) + i])
            for i, r in enumerate(revisions)
        ]
        with bank.lock, self.store.writing(bank.bank_id):
            self._check_sources(bank.bank_id, add, events)
            new_units: list[NewUnit] = []
            inputs: list[LinkInput] = []
            for i, (d, f) in enumerate(zip(add, facts, strict=True)):
                ids = list(d.entities)
                unit = MemoryUnit(
                    id=d.id, bank_id=bank.bank_id, text=d.text, network=d.network, occurred_start=None,
                    occurred_end=None, mentioned_at=now, confidence=d.confidence, entities=list(d.entities.values()),
                    source=f.source,
                    content_hash=unit_hash(f, texts[i]), metadata=f.metadata, created_at=now,
                )
                new_units.append(NewUnit(unit, texts[i], hashes[i], vectors[i], ids))
                inputs.append(LinkInput(unit_id=d.id, embedding=vectors[i], t_mid=now.timestamp(), entity_ids=ids,
                                        causal=[CausalTarget(s.id, CausalKind.CAUSED_BY, 1.0) for s in d.sources]))
            batch = WriteBatch(
                add_units=new_units, delete_unit_ids=list(delete_ids),
                links=self.links.build(bank.bank_id, inputs, bank.indexes), update_units=all_updates,
                opinion_events=list(events),
            )
            self.store.apply(bank.bank_id, batch)
            bank.indexes.sync()
        return [n.unit for n in new_units]

    def _check_sources(self, bank_id: str, add: Sequence[DerivedUnit], events: Sequence[OpinionEvent]) -> None:
        """Under the bank's lock: a forget that ran while the LLM worked must not be undone by citing its units."""
        cited = {s.id for d in add for s in d.sources} | {i for e in events for i in e.evidence}
        if not cited:
            return
        missing = cited - {u.id for u in self.store.get_units(bank_id, sorted(cited))}
        if missing:
            raise SourcesForgottenError(f"bank {bank_id}: {len(missing)} source units were forgotten meanwhile")

    @staticmethod
    def _fact(d: DerivedUnit, now: datetime) -> ExtractedFact:
        turns = list(dict.fromkeys(t for s in d.sources for t in s.source.turn_ids))
        metadata = {**d.metadata, "source_units": [s.id for s in d.sources]}
        return ExtractedFact(
            text=d.text, network=d.network, mentioned_at=now, confidence=d.confidence,
            source=Source(document_id=d.document_id, turn_ids=turns), metadata=metadata,
        )
