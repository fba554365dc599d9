"""Forgetting: remove units (by id, by document, or all that mention an entity) from the store, both indexes and the
graph, together with the units that copied their text (hindsight/copied_text.py) and the memory derived from them
(hindsight/reflect/forgetting.py), and scrub what deleted rows leave behind in the files (hindsight/scrub.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from hindsight import validate
from hindsight.copied_text import ForgottenText
from hindsight.errors import DocumentNotFoundError, EntityNotFoundError, InvalidInputError, UnitNotFoundError
from hindsight.models import Entity, MemoryUnit, Network
from hindsight.names import normalize_name
from hindsight.reflect.forgetting import DerivedCleanup, Embed, Queue, cleanup_derived
from hindsight.scrub import scrub_bank
from hindsight.store.base import MemoryStore, UnitUpdate, WriteBatch
from hindsight.store.search import BankSearch

log = logging.getLogger(__name__)


@dataclass
class ForgetResult:
    """What a forget removed: the units, the entities no remaining unit mentions, the opinions and observations
    dropped because they derived from the units, and the opinions that lost them as evidence; the units removed
    because their own text copied forgotten text (`copied_ids`), and those that lost a lead or a context that
    quoted it (`rewritten_ids`)."""

    unit_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    derived_ids: list[str] = field(default_factory=list)
    revised_ids: list[str] = field(default_factory=list)
    copied_ids: list[str] = field(default_factory=list)
    rewritten_ids: list[str] = field(default_factory=list)


@dataclass
class Copies:
    """The units that copied forgotten text: removed, or rewritten without the lead or context that quoted it."""

    removed: list[MemoryUnit] = field(default_factory=list)
    rewritten: list[UnitUpdate] = field(default_factory=list)


def matching_entities(entities: list[Entity], name_or_id: str) -> list[Entity]:
    """Entities whose id is `name_or_id`, or whose name or an alias equals it up to case, accents and spacing."""
    key = normalize_name(name_or_id)
    return [
        e
        for e in entities
        if e.id == name_or_id
        or (key and (normalize_name(e.name) == key or any(normalize_name(a.alias) == key for a in e.aliases)))
    ]


def forget(
    store: MemoryStore,
    indexes: BankSearch,
    unit_id: str | None = None,
    entity: str | None = None,
    document: str | None = None,
    *,
    embed: Embed,
    queue: Queue,
) -> ForgetResult:
    """Forget one unit, every unit of a document, or every unit that mentions the entity (all entities of that name
    or alias), the units that copied their text and what was derived from them, in one transaction; then scrub the
    files. `embed` re-embeds an opinion whose revision is undone; `queue` gives the background work that regenerates
    what was dropped (as after a retain).

    The caller holds the bank's write lock. Raises UnitNotFoundError / DocumentNotFoundError / EntityNotFoundError,
    changing nothing.
    """
    bank_id = indexes.bank_id
    if sum(x is not None for x in (unit_id, entity, document)) != 1:
        raise InvalidInputError("forget takes exactly one of a unit id, document=... and entity=...")
    before = store.list_entities(bank_id)
    names: list[str] = []
    if unit_id is not None:
        if not store.get_units(bank_id, [validate.unit_id(unit_id)]):
            raise UnitNotFoundError(f"no unit {unit_id[:64]!r} in bank {bank_id!r}")
        unit_ids = [unit_id]
    elif document is not None:
        unit_ids = [u.id for u in store.document_units(bank_id, validate.identifier(document, "document"))]
        if not unit_ids:
            raise DocumentNotFoundError(f"no document {str(document)[:64]!r} in bank {bank_id!r}")
    else:
        entity = validate.identifier(entity, "entity (a name or entity id)")
        found = matching_entities(before, entity)
        if not found:
            raise EntityNotFoundError(f"no entity named {entity[:64]!r} in bank {bank_id!r}")
        unit_ids = list(
            dict.fromkeys(uid for e in found for uid in store.entity_recent_units(bank_id, e.id, e.mention_count))
        )
        names = _own_names(found, before)
    targets = store.get_units(bank_id, unit_ids)
    # What derives from the forgotten units and what copied their text depend on each other: until neither grows.
    copies = Copies()
    while True:
        derived = cleanup_derived(store, bank_id, [*targets, *copies.removed], embed, queue)
        latest = find_copies(store, bank_id, targets, names, derived)
        if {u.id for u in latest.removed} == {u.id for u in copies.removed}:
            break
        copies = latest
    copies = latest
    copied_ids = [u.id for u in copies.removed]
    store.apply(
        bank_id,
        WriteBatch(
            delete_unit_ids=[*unit_ids, *copied_ids, *derived.delete_ids],
            update_units=[*derived.updates, *copies.rewritten],
            opinion_events=[e for history in derived.histories.values() for e in history],
            history_replaced=list(derived.histories),
            pending=derived.pending,
            scrub=True,
        ),
    )
    scrub_bank(store, indexes)
    left = {e.id for e in store.list_entities(bank_id)}
    result = ForgetResult(
        unit_ids, [e.id for e in before if e.id not in left], derived.delete_ids, list(derived.histories),
        copied_ids, [u.unit_id for u in copies.rewritten],
    )
    log.info(
        "forgot %d units and %d entities of bank %s, dropped %d derived units and revised %d opinions; removed %d "
        "and rewrote %d units that copied forgotten text",
        len(result.unit_ids),
        len(result.entity_ids),
        bank_id,
        len(result.derived_ids),
        len(result.revised_ids),
        len(result.copied_ids),
        len(result.rewritten_ids),
    )
    return result


def _own_names(found: list[Entity], entities: list[Entity]) -> list[str]:
    """The names and aliases of the forgotten entities that no other entity of the bank goes by."""
    gone = {e.id for e in found}
    others = {normalize_name(n) for e in entities if e.id not in gone for n in [e.name, *(a.alias for a in e.aliases)]}
    names = [n for e in found for n in [e.name, *(a.alias for a in e.aliases)]]
    return [n for n in dict.fromkeys(names) if normalize_name(n) not in others]


def find_copies(
    store: MemoryStore, bank_id: str, targets: list[MemoryUnit], names: list[str], derived: DerivedCleanup
) -> Copies:
    """The units of the bank that copied the text of `targets` (or name one of `names`), until no new copy shows:
    a removed copy's text is forgotten in turn (copied_text.py says what a copy is). Derived units are read as
    `derived` (the cleanup of what derives from the forgotten units) leaves them; those it drops are not copies."""
    forgotten = ForgottenText()
    forgotten.add_names(names)
    forgotten.add(u.text for u in targets)
    gone = {u.id for u in targets} | set(derived.delete_ids)
    turns = {(u.source.document_id, t) for u in targets for t in u.source.turn_ids}
    candidates = _Candidates(store, bank_id)
    candidates.add(u for network in _DERIVED for u in store.list_units(bank_id, network))
    if forgotten.names:
        candidates.add(store.get_units(bank_id, [
            t.unit_id for t in store.unit_texts(bank_id)
            if forgotten.names_in(t.text) or (t.lead is not None and forgotten.names_in(t.lead))]))
    quoted: dict[str, str] = {}
    copies = Copies()
    found = True
    while found:
        found = False
        candidates.add_documents({d for d, _ in turns})
        for u in candidates.units():
            if u.network in _DERIVED and u.id not in quoted:
                quoted[u.id] = _derived_text(store, bank_id, u, derived)
            if u.id in gone or not _copies(u, forgotten, turns, quoted.get(u.id)):
                continue
            gone.add(u.id)
            copies.removed.append(u)
            forgotten.add([u.text])
            turns |= {(u.source.document_id, t) for t in u.source.turn_ids}
            found = True
    documents = {d for d, _ in turns}
    candidates.add_documents({d.document_id for d in store.documents_with_context(bank_id)
                              if forgotten.in_quote(d.context or "")})
    for u in candidates.units():
        if u.id in gone:
            continue
        drop_lead = bool(u.lead) and (forgotten.names_in(u.lead or "") or (
            u.source.document_id in documents and forgotten.in_lead(u.lead or "")))
        drop_context = bool(u.context) and forgotten.in_quote(u.context or "")
        if drop_lead or drop_context:
            copies.rewritten.append(UnitUpdate(u.id, drop_lead=drop_lead, drop_context=drop_context))
    return copies


class _Candidates:
    """The units a copy can be in, read as they become possible (a copy of a unit shares its turns, quotes it in a
    context or a derived unit, or names a forgotten entity), so a forget reads its documents, not the whole bank."""

    def __init__(self, store: MemoryStore, bank_id: str) -> None:
        self._store, self._bank_id = store, bank_id
        self._units: dict[str, MemoryUnit] = {}
        self._documents: set[str] = set()

    def add(self, units: Iterable[MemoryUnit]) -> None:
        for u in units:
            self._units.setdefault(u.id, u)

    def add_documents(self, documents: set[str]) -> None:
        for document in sorted(documents - self._documents):
            self.add(self._store.document_units(self._bank_id, document))
        self._documents |= documents

    def units(self) -> list[MemoryUnit]:
        return list(self._units.values())


_DERIVED = (Network.OPINION, Network.OBSERVATION)


def _derived_text(store: MemoryStore, bank_id: str, unit: MemoryUnit, derived: DerivedCleanup) -> str:
    """All the text an opinion or observation will hold after `derived`: its text, metadata (reasoning), history."""
    update = next((u for u in derived.updates if u.unit_id == unit.id), None)
    history = derived.histories.get(unit.id)
    if history is None:
        history = store.opinion_history(bank_id, unit.id) if unit.network is Network.OPINION else []
    text = update.text if update is not None and update.text is not None else unit.text
    metadata = update.metadata if update is not None and update.metadata is not None else unit.metadata
    return "\n".join([text, json.dumps(metadata, ensure_ascii=False), *(f"{e.text}\n{e.reason}" for e in history)])


def _copies(unit: MemoryUnit, forgotten: ForgottenText, turns: set[tuple[str, str]], quoted: str | None) -> bool:
    if forgotten.names_in(unit.text):
        return True
    if quoted is not None:
        return forgotten.in_quote(quoted)
    shares_turn = any((unit.source.document_id, t) in turns for t in unit.source.turn_ids)
    return shares_turn and forgotten.in_sibling(unit.text)
