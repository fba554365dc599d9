"""Forgetting: remove units (by id, or all that mention an entity) from the store, both indexes and the graph,
and scrub what deleted rows leave behind in the files."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hindsight.errors import EntityNotFoundError, InvalidInputError, UnitNotFoundError
from hindsight.index.manager import BankIndexes
from hindsight.models import Entity
from hindsight.retain.names import normalize_name
from hindsight.store.base import MemoryStore, WriteBatch

log = logging.getLogger(__name__)


@dataclass
class ForgetResult:
    """What a forget removed: the units, and the entities no remaining unit mentions."""

    unit_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)


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
    store: MemoryStore, indexes: BankIndexes, unit_id: str | None = None, entity: str | None = None
) -> ForgetResult:
    """Forget one unit, or every unit that mentions the entity (all entities of that name or alias).

    The caller holds the bank's write lock. Raises UnitNotFoundError / EntityNotFoundError, changing nothing.
    """
    bank_id = indexes.bank_id
    if (unit_id is None) == (entity is None):
        raise InvalidInputError("forget takes exactly one of a unit id and entity=...")
    before = store.list_entities(bank_id)
    if unit_id is not None:
        if not isinstance(unit_id, str) or not store.get_units(bank_id, [unit_id]):
            raise UnitNotFoundError(f"no unit {str(unit_id)[:64]!r} in bank {bank_id!r}")
        unit_ids = [unit_id]
    else:
        if not isinstance(entity, str) or not entity.strip():
            raise InvalidInputError("entity must be a non-empty name or entity id")
        found = matching_entities(before, entity)
        if not found:
            raise EntityNotFoundError(f"no entity named {entity[:64]!r} in bank {bank_id!r}")
        unit_ids = list(
            dict.fromkeys(uid for e in found for uid in store.entity_recent_units(bank_id, e.id, e.mention_count))
        )
    store.apply(bank_id, WriteBatch(delete_unit_ids=unit_ids))
    indexes.sync()
    indexes.purge()
    store.purge()
    left = {e.id for e in store.list_entities(bank_id)}
    result = ForgetResult(unit_ids, [e.id for e in before if e.id not in left])
    log.info("forgot %d units and %d entities of bank %s", len(result.unit_ids), len(result.entity_ids), bank_id)
    return result
