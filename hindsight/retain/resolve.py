"""Resolve the entity mentions of new facts against a bank's entities (and each other)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.models import Entity, EntityAlias, EntityCandidate, ExtractedFact
from hindsight.retain.entities import EntityResolver, Resolution, blocking_keys, clean_mention, normalize_name
from hindsight.store.base import EntityWrite, MemoryStore

_COOCCURRENCE_UNITS = 50  # recent units per candidate used for the co-occurrence signal


@dataclass
class ResolvedEntities:
    """Entity writes for the store, and each fact's canonical entity ids and names."""

    writes: list[EntityWrite]
    ids: list[list[str]] = field(default_factory=list)
    names: list[list[str]] = field(default_factory=list)
    by_mention: list[dict[str, str]] = field(default_factory=list)  # per fact: mention text -> canonical name


def resolve_entities(
    store: MemoryStore, resolver: EntityResolver, bank_id: str, facts: list[ExtractedFact]
) -> ResolvedEntities:
    """Map every mention to an existing or new entity; entities created earlier in the batch are candidates too."""
    writes: dict[str, EntityWrite] = {}
    batch_candidates: dict[str, EntityCandidate] = {}
    result = ResolvedEntities(writes=[])
    # A mention's text (lower case) -> its entity id, for the stated aliases that point back to it; one
    # document's facts are resolved together, so "Everyone calls him Skip" reaches the Walter of the turn before.
    placed: dict[str, str] = {}
    for fact in facts:
        # Recency is that of mentions: the facts of one conversation mention their entities on its date, whatever
        # time they are about ("End of the month, Marcus Bell decides" and "I met Marcus" are one chat).
        when = fact.mentioned_at
        # Co-occurrence compares canonical forms, as the store keeps them ("my brother Bob" -> "bob").
        keys_of = {m.text: normalize_name(clean_mention(m.text)) for m in fact.entities}
        context_all = set(keys_of.values()) - {""}
        ids: list[str] = []
        names: list[str] = []
        by_mention: dict[str, str] = {}
        # Stated aliases ("we call her Meg") come last: the names they belong to are placed first.
        for mention in sorted(fact.entities, key=lambda m: m.alias_of is not None):
            keys = blocking_keys(mention.text)
            if not keys:
                continue
            context = context_all - {keys_of[mention.text]}
            named = placed.get(mention.alias_of.lower()) if mention.alias_of else None
            candidates: dict[str, EntityCandidate] = {}
            if named is not None:
                entity = writes[named].entity
                res = Resolution(named, entity.name, entity.label, 1.0, 1.0, clean_mention(mention.text))
            else:
                candidates.update((c.id, c) for c in store.entity_candidates(bank_id, keys, _COOCCURRENCE_UNITS))
                for cand in batch_candidates.values():
                    if keys & blocking_keys(cand.name) or any(keys & blocking_keys(a) for a in cand.aliases):
                        candidates[cand.id] = cand
                res = resolver.resolve(mention, when, context, list(candidates.values()))
            if not res.alias:
                continue
            entity_id = res.entity_id or f"ent-{uuid.uuid4().hex[:16]}"
            write = writes.get(entity_id)
            if write is None:
                existing = candidates.get(entity_id)
                write = EntityWrite(
                    entity=Entity(
                        id=entity_id, bank_id=bank_id, name=res.name, label=res.label,
                        first_seen=when if res.entity_id is None else None, last_seen=when,
                    ),
                    is_new=res.entity_id is None,
                )
                writes[entity_id] = write
                batch_candidates[entity_id] = existing or EntityCandidate(
                    id=entity_id, name=res.name, label=res.label, aliases=[], last_seen=when, cooccurring=set()
                )
            _observe(write, batch_candidates[entity_id], res.alias, res.score, when, context)
            by_mention[mention.text] = write.entity.name
            placed[mention.text.lower()] = entity_id
            if entity_id not in ids:
                ids.append(entity_id)
                names.append(write.entity.name)
        result.ids.append(ids)
        result.names.append(names)
        result.by_mention.append(by_mention)
    result.writes = list(writes.values())
    return result


def _observe(
    write: EntityWrite, cand: EntityCandidate, alias: str, score: float, when: datetime, context: set[str]
) -> None:
    """Record one resolved mention on the pending write and the in-batch candidate."""
    # Case and accent variants of a known alias add nothing new.
    if normalize_name(alias) not in {normalize_name(a) for a in cand.aliases}:
        cand.aliases.append(alias)
        write.new_aliases.append(EntityAlias(alias=alias, score=round(score, 4)))
        write.keys |= blocking_keys(alias)
    write.keys |= blocking_keys(write.entity.name)
    cand.cooccurring |= context
    if write.entity.last_seen is None or when > write.entity.last_seen:
        write.entity.last_seen = when
    if cand.last_seen is None or when > cand.last_seen:
        cand.last_seen = when
