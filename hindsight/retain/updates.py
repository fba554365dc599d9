"""Knowledge updates at retain: the state claims of new units (hindsight/claims/), their subjects resolved to
subject keys, and the update links from each newer unit to the older one whose claim it supersedes.

A relative the speaker names ("my mom Yuko") is stored as a binding (claims/kin.py): the claims about "my mom" are
then keyed as Yuko's, and Yuko's newer claims are compared with what was said of "my mom" before she was named."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from hindsight.claims.extract import SPEAKER, Claim, claims_in
from hindsight.claims.kin import KIN, MAX_BINDINGS, NAME_LIKE, bound_names, named_relatives, relation
from hindsight.claims.supersede import TimedClaim, family, supersessions
from hindsight.claims.topics import topics_in
from hindsight.models import Document, ExtractedFact, Link, LinkType, Turn, is_assistant_role
from hindsight.names import clean_mention, normalize_name, person_key
from hindsight.store.base import ClaimRecord, MemoryStore

_EXISTING_PER_KEY = 32  # the latest claims per subject and attribute that a new claim is compared with


@dataclass
class NewFactUnit:
    """A new unit as update detection sees it: its id, fact, and its mentions' canonical entity ids."""

    unit_id: str
    fact: ExtractedFact
    canonical: dict[str, str]  # mention text -> the canonical name of its entity


@dataclass
class Updates:
    """What a retain writes for knowledge updates: the new units' claims and the update links."""

    claims: list[ClaimRecord]
    links: list[Link]


def detect_updates(store: MemoryStore, bank_id: str, doc: Document, units: Sequence[NewFactUnit]) -> Updates:
    """Claims and topics of the new units, and the supersessions the claims bring among themselves and with the
    bank's claims."""
    bindings = [r for u in units for r in _unit_bindings(doc, u)]
    records = [r for u in units for r in _unit_claims(doc, u)]
    named = _named(store, bank_id, records, bindings)
    records = [replace(r, subject=named.get(r.subject, r.subject)) for r in records]
    claims = [r for r in records if not r.topic]
    if not claims:
        return Updates(records + bindings, [])
    keys = list(dict.fromkeys((r.subject, family(r.attribute)) for r in claims))
    # What was said of a relative before they were named ("my mom", then "my mom Yuko").
    keys += [(rel, attribute) for rel, person in named.items() for s, attribute in list(keys) if s == person]
    new_ids = {u.unit_id for u in units}
    existing = [replace(c, subject=named.get(c.subject, c.subject))
                for c in store.claims_about(bank_id, keys, _EXISTING_PER_KEY) if c.unit_id not in new_ids]
    attributes: dict[tuple[str, str], list[str]] = {}
    for s in supersessions([_timed(r) for r in claims], [_timed(c) for c in existing]):
        attributes.setdefault((s.newer, s.older), []).append(s.attribute)
    # One link per pair of units: its subtype lists the attributes the newer unit updates.
    links = [Link(src=newer, dst=older, type=LinkType.UPDATE, weight=1.0, subtype=",".join(sorted(set(names))))
             for (newer, older), names in attributes.items()]
    return Updates(records + bindings, links)


def _named(store: MemoryStore, bank_id: str, records: list[ClaimRecord], new: list[ClaimRecord]
           ) -> dict[str, str]:
    """Relation key -> the person key it is bound to, for the subjects of these records, by the new bindings and
    those the bank holds."""
    subjects = {r.subject for r in records} | {r.subject for r in new}
    stored = store.claims_about(bank_id, [(s, KIN) for s in subjects], MAX_BINDINGS)
    # A person's relation key may be bound to someone else too: read its bindings in full.
    rel_keys = {r.value for r in stored if "/" not in r.subject} - subjects
    stored += store.claims_about(bank_id, [(k, KIN) for k in rel_keys], MAX_BINDINGS)
    pairs = [(r.subject, r.value) if "/" in r.subject else (r.value, r.subject) for r in [*stored, *new]]
    return bound_names(pairs)


def _timed(record: ClaimRecord) -> TimedClaim:
    return TimedClaim(record.unit_id, record.subject, record.attribute, record.value, record.ended,
                      record.said.timestamp(), record.additional)


def _unit_claims(doc: Document, unit: NewFactUnit) -> list[ClaimRecord]:
    """The claims and topics of one unit: of each person's turn it holds verbatim, else of its own (narrative)
    text. A topic that a claim of the same subject already covers is left out."""
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
        found += [(c, said) for c in _said(said.text, others)]
    if not verbatim and people:
        speakers = {t.speaker or t.role for t in people}
        sole = people[0] if len(speakers) == 1 else None
        found += [(c, sole) for c in _said(fact.text, persons)]
    out: list[ClaimRecord] = []
    for claim, turn in found:
        subject = _subject_key(claim.subject, turn, unit.canonical)
        if subject is not None:
            out.append(ClaimRecord(unit.unit_id, subject, claim.attribute, claim.value, claim.ended,
                                   fact.mentioned_at, claim.additional, claim.topic))
    covered = {(r.subject, family(r.attribute)) for r in out if not r.topic}
    return [r for r in out if not (r.topic and (r.subject, family(r.attribute)) in covered)]


def _unit_bindings(doc: Document, unit: NewFactUnit) -> list[ClaimRecord]:
    """The relatives the unit's person turns name, each as two rows (see claims/kin.py): under the relation key with
    the person key as value, and the other way round."""
    if doc.document_id.startswith("_"):
        return []
    turn_ids = set(unit.fact.source.turn_ids)
    out: list[ClaimRecord] = []
    for turn in doc.turns:
        if turn.turn_id not in turn_ids or is_assistant_role(turn.role):
            continue
        speaker = _speaker_key(turn, unit.canonical)
        for rel, name in named_relatives(turn.text):
            rel_key, person = f"{speaker}/{rel}", _person(name, unit.canonical)
            out += [ClaimRecord(unit.unit_id, a, KIN, b, False, unit.fact.mentioned_at)
                    for a, b in ((rel_key, person), (person, rel_key))]
    return out


def _said(text: str, people: list[str]) -> list[Claim]:
    return [*claims_in(text, people), *topics_in(text, people)]


def _subject_key(subject: str, turn: Turn | None, canonical: dict[str, str]) -> str | None:
    """The key claims of one subject share. A person is keyed by the formal form of their canonical entity's first
    name, so the aliases entity resolution merged ("Meg", "we all call her Meg" of Margaret) and nicknames the
    resolver kept apart ("Danny" in one session, "Daniel" in another) are one subject. The speaker of a chat
    that names no one is keyed by their role. "Dad" is the speaker's father."""
    if subject.lower() in NAME_LIKE:
        subject = f"rel:{subject.lower()}"
    if subject == SPEAKER or subject.startswith("rel:"):
        if turn is None:
            return None
        speaker = _speaker_key(turn, canonical)
        return speaker if subject == SPEAKER else f"{speaker}/{relation(subject[4:])}"
    return _person(subject, canonical)


def _speaker_key(turn: Turn, canonical: dict[str, str]) -> str:
    return _person(turn.speaker, canonical) if turn.speaker else f"speaker:{normalize_name(turn.role or '')}"


def _person(name: str, canonical: dict[str, str]) -> str:
    """"person:<formal first name>" of the canonical entity this name was resolved to (or of the name)."""
    norm = normalize_name(clean_mention(name))
    resolved = canonical.get(name) or next(
        (c for mention, c in canonical.items() if normalize_name(clean_mention(mention)) == norm), name)
    return f"person:{person_key(resolved) or person_key(name)}"
