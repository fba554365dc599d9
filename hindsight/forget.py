"""Forgetting: remove units (by id, or all that mention an entity) from the store, both indexes and the graph,
together with the memory derived from them (hindsight/reflect/forgetting.py), and scrub what deleted rows leave
behind in the files."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hindsight import validate
from hindsight.errors import EntityNotFoundError, InvalidInputError, UnitNotFoundError
from hindsight.index.manager import BankIndexes
from hindsight.models import Entity
from hindsight.names import normalize_name
from hindsight.reflect.forgetting import Embed, Queue, cleanup_derived
from hindsight.store.base import MemoryStore, WriteBatch

log = logging.getLogger(__name__)


@dataclass
class ForgetResult:
    """What a forget removed: the units, the entities no remaining unit mentions, the opinions and observations
    dropped because they derived from the units, and the opinions that lost them as evidence."""

    unit_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    derived_ids: list[str] = field(default_factory=list)
    revised_ids: list[str] = field(default_factory=list)


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
    indexes: BankIndexes,
    unit_id: str | None = None,
    entity: str | None = None,
    *,
    embed: Embed,
    queue: Queue,
) -> ForgetResult:
    """Forget one unit, or every unit that mentions the entity (all entities of that name or alias), and what was
    derived from them, in one transaction. `embed` re-embeds an opinion whose revision is undone; `queue` gives the
    background work that regenerates what was dropped (as after a retain).

    The caller holds the bank's write lock. Raises UnitNotFoundError / EntityNotFoundError, changing nothing.
    """
    bank_id = indexes.bank_id
    if (unit_id is None) == (entity is None):
        raise InvalidInputError("forget takes exactly one of a unit id and entity=...")
    before = store.list_entities(bank_id)
    if unit_id is not None:
        if not store.get_units(bank_id, [validate.unit_id(unit_id)]):
            raise UnitNotFoundError(f"no unit {unit_id[:64]!r} in bank {bank_id!r}")
        unit_ids = [unit_id]
    else:
        entity = validate.identifier(entity, "entity (a name or entity id)")
        found = matching_entities(before, entity)
        if not found:
            raise EntityNotFoundError(f"no entity named {entity[:64]!r} in bank {bank_id!r}")
        unit_ids = list(
            dict.fromkeys(uid for e in found for uid in store.entity_recent_units(bank_id, e.id, e.mention_count))
        )
    derived = cleanup_derived(store, bank_id, store.get_units(bank_id, unit_ids), embed, queue)
    store.apply(
        bank_id,
        WriteBatch(
            delete_unit_ids=[*unit_ids, *derived.delete_ids],
            update_units=derived.updates,
            opinion_events=[e for history in derived.histories.values() for e in history],
            history_replaced=list(derived.histories),
            pending=derived.pending,
        ),
    )
    indexes.sync()
    indexes.purge()
    store.purge()
    left = {e.id for e in store.list_entities(bank_id)}
    result = ForgetResult(
        unit_ids, [e.id for e in before if e.id not in left], derived.delete_ids, list(derived.histories)
    )
    log.info(
        "forgot %d units and %d entities of bank %s, dropped %d derived units and revised %d opinions",
        len(result.unit_ids),
        len(result.entity_ids),
        bank_id,
        len(result.derived_ids),
        len(result.revised_ids),
    )
    return result
