"""Resolve the entity mentions of new facts against a bank's entities (and each other)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.models import Entity, EntityAlias, EntityCandidate, ExtractedFact
from hindsight.retain.entities import (
    EntityResolver,
    Resolution,
    blocking_keys,
    clean_mention,
    naming_score,
    normalize_name,
)
from hindsight.retain.ner import NameRun, name_runs
from hindsight.store.base import EntityWrite, MemoryStore

_COOCCURRENCE_UNITS = 50  # recent units per candidate used for the co-occurrence signal


@dataclass
class ResolvedEntities:
    """Entity writes for the store, and each fact's canonical entity ids and names."""

    writes: list[EntityWrite]
    ids: list[list[str]] = field(default_factory=list)
    names: list[list[str]] = field(default_factory=list)
    by_mention: list[dict[str, str]] = field(default_factory=list)  # per fact: mention text -> canonical name


@dataclass
class _Linked:
    """One fact's entities, in order of mention, and the canonical name of each mention."""

    ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    by_mention: dict[str, str] = field(default_factory=dict)

    def add(self, text: str, write: EntityWrite) -> None:
        self.by_mention[text] = write.entity.name
        if write.entity.id not in self.ids:
            self.ids.append(write.entity.id)
            self.names.append(write.entity.name)


class _Batch:
    """The entities one call resolves to: pending writes, and candidates that include those made in the batch."""

    def __init__(self, store: MemoryStore, bank_id: str) -> None:
        self.store, self.bank_id = store, bank_id
        self.writes: dict[str, EntityWrite] = {}
        self.made: dict[str, EntityCandidate] = {}
        # The store does not change during the batch, and names recur from turn to turn.
        self.stored: dict[frozenset[str], list[EntityCandidate]] = {}
        self.cooccurrence: dict[str, set[str]] = {}  # entity id -> stored co-occurrence, read when first needed

    def candidates(self, keys: set[str]) -> dict[str, EntityCandidate]:
        """Stored and in-batch candidates, without the stored co-occurrence (see `read_cooccurrence`)."""
        frozen = frozenset(keys)
        stored = self.stored.get(frozen)
        if stored is None:
            stored = self.stored[frozen] = self.store.entity_candidates(self.bank_id, keys)
        found = {c.id: c for c in stored}
        # The batch's own copy of an entity, with the aliases it gained (the store indexes the older ones).
        for entity_id, cand in self.made.items():
            if entity_id in found or not keys.isdisjoint(self.writes[entity_id].keys):
                found[entity_id] = cand
        return found

    def read_cooccurrence(self, candidates: list[EntityCandidate]) -> None:
        """Add the stored co-occurrence to these candidates: only the resolver's scoring uses it, and reading it
        for every candidate was most of a retain's entity work."""
        unread = [c.id for c in candidates if c.id not in self.cooccurrence]
        if unread:
            found = self.store.entity_cooccurrence(self.bank_id, unread, _COOCCURRENCE_UNITS)
            self.cooccurrence.update((i, found.get(i, set())) for i in unread)
        for c in candidates:
            c.cooccurring |= self.cooccurrence[c.id]

    def place(
        self, res: Resolution, candidates: dict[str, EntityCandidate], when: datetime, context: set[str]
    ) -> EntityWrite:
        """Record a resolved mention on its entity's write, made on first use; returns the write."""
        entity_id = res.entity_id or f"ent-{uuid.uuid4().hex[:16]}"
        write = self.writes.get(entity_id)
        if write is None:
            write = EntityWrite(
                entity=Entity(
                    id=entity_id, bank_id=self.bank_id, name=res.name, label=res.label,
                    first_seen=when if res.entity_id is None else None, last_seen=when,
                ),
                is_new=res.entity_id is None,
            )
            self.writes[entity_id] = write
            self.made[entity_id] = candidates.get(entity_id) or EntityCandidate(
                id=entity_id, name=res.name, label=res.label, aliases=[], last_seen=when, cooccurring=set()
            )
        _observe(write, self.made[entity_id], res.alias, res.score, when, context)
        return write


def resolve_entities(
    store: MemoryStore, resolver: EntityResolver, bank_id: str, facts: list[ExtractedFact]
) -> ResolvedEntities:
    """Map every mention to an existing or new entity; entities created earlier in the batch are candidates too.
    Then the known names NER passed over in a fact's text are mentions too ("Is Halcyon still remote?" after
    "Halcyon Robotics Inc. hired me")."""
    batch = _Batch(store, bank_id)
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
        linked = _Linked()
        # Stated aliases ("we call her Meg") come last: the names they belong to are placed first.
        for mention in sorted(fact.entities, key=lambda m: m.alias_of is not None):
            keys = blocking_keys(mention.text)
            if not keys:
                continue
            context = context_all - {keys_of[mention.text]}
            named = placed.get(mention.alias_of.lower()) if mention.alias_of else None
            candidates: dict[str, EntityCandidate] = {}
            if named is not None:
                entity = batch.writes[named].entity
                res = Resolution(named, entity.name, entity.label, 1.0, 1.0, clean_mention(mention.text))
            else:
                candidates = batch.candidates(keys)
                proposed = list(candidates.values())
                if context:  # sim_co is 0 without other entities in the fact
                    batch.read_cooccurrence(resolver.plausible(mention, proposed))
                res = resolver.resolve(mention, when, context, proposed)
            if res.alias:
                write = batch.place(res, candidates, when, context)
                linked.add(mention.text, write)
                placed[mention.text.lower()] = write.entity.id
        for run in name_runs(_unmentioned(fact)):
            if (known := _known_name(run, batch)) is not None:
                text, cand, score = known
                res = Resolution(cand.id, cand.name, cand.label, score, score, clean_mention(text))
                linked.add(text, batch.place(res, {cand.id: cand}, when, context_all))
        result.ids.append(linked.ids)
        result.names.append(linked.names)
        result.by_mention.append(linked.by_mention)
    result.writes = list(batch.writes.values())
    return result


def _unmentioned(fact: ExtractedFact) -> str:
    """The fact's text with its mentions blanked out."""
    text = fact.text
    for m in fact.entities:
        if name := m.text.strip():
            text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", lambda found: "#" * len(found.group()), text)
    return text


def _known_name(run: NameRun, batch: _Batch) -> tuple[str, EntityCandidate, float] | None:
    """The one known entity that a run of words names (see `naming_score`), with the words and how surely; a run
    that opens a sentence may do so without its first word ("Ask Kevin"). A company called by the first words of its
    full name does not open a sentence or a line, where common words are capitalized too: "Summit" at the head of a
    list is not "Summit Partners LLC"."""
    pieces = [run.words] + ([run.words[1:]] if run.opens and len(run.words) > 1 else [])
    candidates = list(batch.candidates(set().union(*(blocking_keys(" ".join(p)) for p in pieces))).values())
    for i, piece in enumerate(pieces):
        text = " ".join(piece)
        scored = [(s, c) for c in candidates if (s := naming_score(text, c))]
        if scored:
            top = max(s for s, _ in scored)
            best = [c for s, c in scored if s == top]
            # A name two entities share says nothing of which one is meant.
            return (text, best[0], top) if len(best) == 1 and (top >= 1.0 or i or not run.opens) else None
    return None


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
