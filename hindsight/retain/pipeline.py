"""The retain pipeline: normalize, extract, embed, resolve entities, link, and commit in one transaction."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo

import numpy as np

from hindsight.config import HindsightConfig
from hindsight.embed.base import CachedEmbedder
from hindsight.jobs import JobQueue, RetainEvent
from hindsight.links import CausalTarget, LinkBuilder, LinkInput
from hindsight.models import Content, Document, ExtractedFact, MemoryUnit, RetainResult, TimeArg
from hindsight.retain.entities import EntityResolver
from hindsight.retain.extractor import Extractor
from hindsight.retain.normalize import content_hash, normalize
from hindsight.retain.resolve import resolve_entities
from hindsight.retain.updates import NewFactUnit, detect_updates
from hindsight.store.base import DocumentRecord, MemoryStore, NewUnit, PendingItem, WriteBatch
from hindsight.temporal.expressions import format_date
from hindsight.temporal.values import time_zone
from hindsight.units import BankHandle, unit_hash

log = logging.getLogger(__name__)


@dataclass
class RetainRequest:
    """The arguments of one retain call, for retain_many."""

    content: Content
    timestamp: TimeArg | None = None
    context: str | None = None
    document_id: str | None = None


@dataclass
class _Prepared:
    """A validated, extracted document waiting for its embeddings."""

    doc: Document
    digest: str
    facts: list[ExtractedFact]
    texts: list[str]
    hashes: list[str]
    to_embed: list[str]  # distinct texts (and segments) of the units the document does not hold yet
    unchanged: RetainResult | None = None



def describe_time(fact: ExtractedFact) -> str:
    """The human-readable time reference appended to embedded text."""
    said = format_date(fact.mentioned_at)
    start, end = fact.occurred_start, fact.occurred_end
    if start is None or fact.metadata.get("time_source") == "mention":
        return f"on {said}"
    about = format_date(start) if end is None or end.date() == start.date() else (
        f"{format_date(start)} to {format_date(end)}"
    )
    return f"on {said}" if about == said else f"on {said}, about {about}"


def embed_text(fact: ExtractedFact) -> str:
    date = format_date(fact.occurred_start or fact.mentioned_at)
    return fact.text if date in fact.text else f"{fact.text} ({describe_time(fact)})"



class RetainPipeline:
    """Runs retain for any bank; extraction and embedding happen outside the bank's write lock."""

    def __init__(
        self,
        config: HindsightConfig,
        store: MemoryStore,
        embedder: CachedEmbedder,
        extractor: Extractor,
        jobs: JobQueue,
        queue: Callable[[list[str], list[str]], list[PendingItem]] = lambda facts, entities: [],
    ) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.jobs = jobs
        self.queue = queue  # (new facts, touched entities) -> the background work committed with the retain
        self.zone = time_zone(config.retain.timezone)  # of a bank whose profile names none, or not yet created
        self.resolver = EntityResolver(config.retain.entities)
        self.links = LinkBuilder(store, config.retain.links)

    def retain(
        self, bank: BankHandle, content: Content, *, timestamp: TimeArg | None = None, context: str | None = None,
        document_id: str | None = None,
    ) -> RetainResult:
        [prepared] = self._prepare(bank, [RetainRequest(content, timestamp, context, document_id)])
        if prepared.unchanged is not None:
            return prepared.unchanged
        vectors, _ = self.embedder.embed(prepared.to_embed)
        return self._commit(bank, prepared, dict(zip(prepared.to_embed, vectors, strict=True)))

    def retain_many(self, bank: BankHandle, requests: list[RetainRequest]) -> list[RetainResult]:
        """Retain several documents: all are validated first, extracted and their new units embedded together,
        then each document is committed atomically, in order."""
        prepared = self._prepare(bank, requests)
        texts = list(dict.fromkeys(t for p in prepared for t in p.to_embed))
        vectors, _ = self.embedder.embed(texts)
        by_text = dict(zip(texts, vectors, strict=True))
        return [p.unchanged or self._commit(bank, p, by_text) for p in prepared]

    def validate(self, requests: list[RetainRequest], zone: tzinfo | None = None) -> list[Document]:
        """The requests' documents, normalized, naive times read in `zone` (the bank's time zone; default
        `retain.timezone`, the zone of a bank not yet created); the first invalid request raises its
        InvalidInputError. Reads and writes nothing, so a caller can refuse bad input before it creates a bank."""
        return [
            normalize(
                r.content, timestamp=r.timestamp, context=r.context, document_id=r.document_id,
                limits=self.config.limits, max_unit_chars=self.config.retain.extract.max_unit_chars,
                zone=zone or self.zone, private_marker=self.config.retain.private_marker,
            )
            for r in requests
        ]

    def _prepare(self, bank: BankHandle, requests: list[RetainRequest]) -> list[_Prepared]:
        """Validate all, skip unchanged documents, extract (in one batch) and hash; nothing is written."""
        bank_id = bank.bank_id
        docs = self.validate(requests, bank.zone)
        digests = [content_hash(d.turns, d.context) for d in docs]
        unchanged = [self._unchanged(bank_id, d.document_id, h) for d, h in zip(docs, digests, strict=True)]
        todo = [d for d, u in zip(docs, unchanged, strict=True) if u is None and d.turns]
        extracted = dict(zip((id(d) for d in todo), self.extractor.extract_many(todo), strict=True))
        out: list[_Prepared] = []
        for doc, digest, same in zip(docs, digests, unchanged, strict=True):
            if same is not None:
                out.append(_Prepared(doc, digest, [], [], [], [], same))
                continue
            facts = extracted.get(id(doc), [])
            texts = [embed_text(f) for f in facts]
            hashes = [unit_hash(f, t) for f, t in zip(facts, texts, strict=True)]
            stored = {u.content_hash for u in self.store.document_units(bank_id, doc.document_id)}
            new = [i for i, h in enumerate(hashes) if h not in stored]
            to_embed = list(dict.fromkeys(t for i in new for t in [texts[i], *facts[i].segments]))
            out.append(_Prepared(doc, digest, facts, texts, hashes, to_embed))
        return out

    def _commit(self, bank: BankHandle, p: _Prepared, vectors: dict[str, np.ndarray]) -> RetainResult:
        """Resolve entities, build links and write one document in one transaction (vectors by text)."""
        doc, facts, texts, hashes = p.doc, p.facts, p.texts, p.hashes
        with bank.lock, self.store.writing(bank.bank_id):
            again = self._unchanged(bank.bank_id, doc.document_id, p.digest)
            if again is not None:  # an identical concurrent retain won the race
                return again
            existing = {u.content_hash: u for u in self.store.document_units(bank.bank_id, doc.document_id)}
            kept = {h: existing[h] for h in hashes if h in existing}
            removed = [u.id for h, u in existing.items() if h not in kept]
            new_idx = [i for i, h in enumerate(hashes) if h not in kept]
            missing = list(dict.fromkeys(t for i in new_idx for t in [texts[i], *facts[i].segments]
                                         if t not in vectors))
            if missing:  # only when a concurrent retain changed the document since _prepare
                extra, _ = self.embedder.embed(missing)
                vectors = {**vectors, **dict(zip(missing, extra, strict=True))}
            now = datetime.now(timezone.utc)
            unit_ids = [kept[h].id if h in kept else uuid.uuid4().hex for h in hashes]
            resolved = resolve_entities(self.store, self.resolver, bank.bank_id, [facts[i] for i in new_idx])
            new_units: list[NewUnit] = []
            link_inputs: list[LinkInput] = []
            for j, i in enumerate(new_idx):
                f, vector = facts[i], vectors[texts[i]]
                unit = MemoryUnit(
                    id=unit_ids[i], bank_id=bank.bank_id, text=f.text, network=f.network,
                    occurred_start=f.occurred_start, occurred_end=f.occurred_end, mentioned_at=f.mentioned_at,
                    confidence=f.confidence, entities=resolved.names[j], source=f.source, context=doc.context,
                    content_hash=hashes[i], metadata=f.metadata, created_at=now, lead=f.lead,
                )
                segments = np.stack([vectors[s] for s in f.segments]) if f.segments else None
                new_units.append(NewUnit(unit, texts[i], self.embedder.hash(texts[i]), vector, resolved.ids[j],
                                         segments))
                start, end = f.occurred_start or f.mentioned_at, f.occurred_end or f.mentioned_at
                link_inputs.append(LinkInput(
                    unit_id=unit.id, embedding=vector, t_mid=(start.timestamp() + end.timestamp()) / 2,
                    entity_ids=resolved.ids[j],
                    causal=[CausalTarget(unit_ids[r.target_index], r.kind, r.strength)
                            for r in f.causal if r.target_index < len(unit_ids)],
                    answers=unit_ids[f.answers] if f.answers is not None and f.answers < len(unit_ids) else None,
                ))
            updates = detect_updates(self.store, bank.bank_id, doc, [
                NewFactUnit(unit_ids[i], facts[i], resolved.by_mention[j]) for j, i in enumerate(new_idx)
            ])
            event = RetainEvent(
                bank_id=bank.bank_id, document_id=doc.document_id, unit_ids=[n.unit.id for n in new_units],
                entity_ids=[w.entity.id for w in resolved.writes], removed_unit_ids=removed,
            )
            batch = WriteBatch(
                document=DocumentRecord(doc.document_id, p.digest, doc.context, now),
                add_units=new_units, delete_unit_ids=removed, entities=resolved.writes,
                links=[*self.links.build(bank.bank_id, link_inputs, bank.indexes), *updates.links],
                claims=updates.claims,
                pending=self.queue(event.unit_ids, event.entity_ids),
            )
            self.store.apply(bank.bank_id, batch)
            bank.indexes.sync()
        units = [u.unit for u in new_units]
        by_id = {u.id: u for u in [*kept.values(), *units]}
        pending = self.jobs.submit(event)
        log.debug("retained %s into %s: %d new, %d kept, %d removed", doc.document_id, bank.bank_id,
                  len(units), len(kept), len(removed))
        return RetainResult(
            document_id=doc.document_id, units=[by_id[i] for i in dict.fromkeys(unit_ids)], created=len(units),
            unchanged=len(kept), removed=len(removed), pending_jobs=pending,
        )

    def _unchanged(self, bank_id: str, document_id: str, digest: str) -> RetainResult | None:
        record = self.store.get_document(bank_id, document_id)
        if record is None or record.content_hash != digest:
            return None
        units = self.store.document_units(bank_id, document_id)
        return RetainResult(document_id=document_id, units=units, unchanged=len(units))
