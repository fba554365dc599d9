"""Knowledge updates at retain: the state claims of new units (hindsight/claims/), their subjects resolved to
entities, and the update links from each newer unit to the older one whose claim it supersedes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hindsight.claims.extract import SPEAKER, Claim, claims_in
from hindsight.claims.supersede import TimedClaim, supersessions
from hindsight.models import Document, ExtractedFact, Link, LinkType, Turn, is_assistant_role
from hindsight.names import blocking_keys, clean_mention, normalize_name
from hindsight.nicknames import NICKNAMES
from hindsight.store.base import ClaimRecord, MemoryStore

_EXISTING_PER_KEY = 32  # the latest claims per subject and attribute that a new claim is compared with


@dataclass
class NewFactUnit:
    """A new unit as update detection sees it: its id, fact, and its mentions' canonical entity ids."""

    unit_id: str
    fact: ExtractedFact
    entity_of: dict[str, str]  # mention text -> entity id


@dataclass
class Updates:
    """What a retain writes for knowledge updates: the new units' claims and the update links."""

    claims: list[ClaimRecord]
    links: list[Link]


def detect_updates(store: MemoryStore, bank_id: str, doc: Document, units: Sequence[NewFactUnit]) -> Updates:
    """Claims of the new units, and the supersessions they bring among themselves and with the bank's claims."""
    records = [r for u in units for r in _unit_claims(doc, u)]
    if not records:
        return Updates([], [])
    keys = list(dict.fromkeys((r.subject, r.attribute) for r in records))
    new_ids = {u.unit_id for u in units}
    existing = [c for c in store.claims_about(bank_id, keys, _EXISTING_PER_KEY) if c.unit_id not in new_ids]
    attributes: dict[tuple[str, str], list[str]] = {}
    for s in supersessions([_timed(r) for r in records], [_timed(c) for c in existing]):
        attributes.setdefault((s.newer, s.older), []).append(s.attribute)
    # One link per pair of units: its subtype lists the attributes the newer unit updates.
    links = [Link(src=newer, dst=older, type=LinkType.UPDATE, weight=1.0, subtype=",".join(sorted(set(names))))
             for (newer, older), names in attributes.items()]
    return Updates(records, links)


def _timed(record: ClaimRecord) -> TimedClaim:
    return TimedClaim(record.unit_id, record.subject, record.attribute, record.value, record.ended,
                      record.said.timestamp())


def _unit_claims(doc: Document, unit: NewFactUnit) -> list[ClaimRecord]:
    """The claims of one unit: of each person's turn it holds verbatim, else of its own (narrative) text."""
    fact = unit.fact
    if doc.document_id.startswith("_"):  # memory the engine derived: opinions, observations
        return []
    turn_ids = set(fact.source.turn_ids)
    people = [t for t in doc.turns if t.turn_id in turn_ids and not is_assistant_role(t.role)]
    persons = [m.text for m in fact.entities if m.label == "PERSON"]
    found: list[tuple[Claim, Turn | None]] = []
    verbatim = [t for t in people if t.text.strip() and t.text.strip() in fact.text]
    for said in verbatim:
        others = [p for p in persons if p != said.speaker]
        found += [(c, said) for c in claims_in(said.text, others)]
    if not verbatim and people:
        speakers = {t.speaker or t.role for t in people}
        sole = people[0] if len(speakers) == 1 else None
        found += [(c, sole) for c in claims_in(fact.text, persons)]
    out: list[ClaimRecord] = []
    for claim, turn in found:
        subject = _subject_key(claim.subject, turn, unit.entity_of)
        if subject is not None:
            out.append(ClaimRecord(unit.unit_id, subject, claim.attribute, claim.value, claim.ended,
                                   fact.mentioned_at))
    return out


def _subject_key(subject: str, turn: Turn | None, entity_of: dict[str, str]) -> str | None:
    """The key claims of one subject share: a canonical entity id when the subject is one of the unit's entities
    (so "Danny" and "Daniel", resolved to one entity, share it), else a key of the name or the speaker."""
    if subject == SPEAKER or subject.startswith("rel:"):
        if turn is None:
            return None
        who = turn.speaker or turn.role or ""
        speaker = _entity(who, entity_of) or f"speaker:{normalize_name(who)}"
        return speaker if subject == SPEAKER else f"{speaker}/{subject[4:]}"
    return _entity(subject, entity_of) or f"name:{_formal(subject)}"


def _entity(name: str, entity_of: dict[str, str]) -> str | None:
    """The entity of the mention that is this name, or failing that the one sharing a name key with it."""
    if not name:
        return None
    if name in entity_of:
        return entity_of[name]
    norm = normalize_name(clean_mention(name))
    for mention, entity_id in entity_of.items():
        if normalize_name(clean_mention(mention)) == norm:
            return entity_id
    keys = blocking_keys(name)
    matches = {e for mention, e in entity_of.items() if keys & blocking_keys(mention)}
    return matches.pop() if len(matches) == 1 else None


def _formal(name: str) -> str:
    """A name's key with a nickname read as its formal name ("danny" -> "daniel")."""
    tokens = normalize_name(clean_mention(name)).split()
    if tokens and tokens[0] in NICKNAMES:
        tokens[0] = min(NICKNAMES[tokens[0]])
    return " ".join(tokens)
