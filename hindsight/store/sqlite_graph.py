"""Graph reads of the SQLite store: entity candidates, entities, links and time neighbours."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from hindsight.models import Entity, EntityAlias, Link, LinkType
from hindsight.retain.entities import EntityCandidate, normalize_name
from hindsight.store.base import TimeNeighbour, UnitEntity
from hindsight.store.sqlite_util import dt as _dt
from hindsight.store.sqlite_util import marks as _marks


class GraphQueries:
    """Read queries over entities and links; mixed into SQLiteStore, which supplies `_query`."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def entity_candidates(self, bank_id: str, keys: set[str], cooccurrence_units: int) -> list[EntityCandidate]:
        if not keys:
            return []
        ks = sorted(keys)
        ids = [
            r[0]
            for r in self._query(
                f"SELECT DISTINCT entity_id FROM entity_keys WHERE bank_id=? AND key IN ({_marks(len(ks))}) LIMIT 64",
                (bank_id, *ks),
            )
        ]
        out = []
        for eid in ids:
            row = self._query("SELECT name, label, last_seen FROM entities WHERE id=?", (eid,))
            if not row:
                continue
            name, label, last_seen = row[0]
            aliases = [r[0] for r in self._query("SELECT alias FROM entity_aliases WHERE entity_id=?", (eid,))]
            co = self._query(
                "SELECT DISTINCT e2.name FROM (SELECT unit_label FROM unit_entities WHERE entity_id=? "
                "ORDER BY unit_label DESC LIMIT ?) r JOIN unit_entities ue ON ue.unit_label=r.unit_label "
                "JOIN entities e2 ON e2.id=ue.entity_id WHERE e2.id<>?",
                (eid, cooccurrence_units, eid),
            )
            out.append(EntityCandidate(eid, name, label, aliases, _dt(last_seen), {normalize_name(r[0]) for r in co}))
        return out

    def list_entities(self, bank_id: str) -> list[Entity]:
        rows = self._query(
            "SELECT e.id, e.name, e.label, e.first_seen, e.last_seen, "
            "(SELECT count(*) FROM unit_entities ue WHERE ue.entity_id=e.id) FROM entities e "
            "WHERE e.bank_id=? ORDER BY e.name",
            (bank_id,),
        )
        aliases: dict[str, list[EntityAlias]] = {}
        for eid, alias, score in self._query(
            "SELECT a.entity_id, a.alias, a.score FROM entity_aliases a JOIN entities e ON e.id=a.entity_id "
            "WHERE e.bank_id=? ORDER BY a.alias",
            (bank_id,),
        ):
            aliases.setdefault(eid, []).append(EntityAlias(alias=alias, score=score))
        return [
            Entity(
                id=r[0], bank_id=bank_id, name=r[1], label=r[2], first_seen=_dt(r[3]), last_seen=_dt(r[4]),
                mention_count=r[5], aliases=aliases.get(r[0], []),
            )
            for r in rows
        ]

    def entity_recent_units(self, bank_id: str, entity_id: str, limit: int) -> list[str]:
        rows = self._query(
            "SELECT u.id FROM unit_entities ue JOIN units u ON u.label=ue.unit_label "
            "WHERE ue.entity_id=? AND u.bank_id=? ORDER BY ue.unit_label DESC LIMIT ?",
            (entity_id, bank_id, limit),
        )
        return [r[0] for r in rows]

    def time_neighbours(self, bank_id: str, t_mid: float, limit: int) -> list[TimeNeighbour]:
        before = self._query(
            "SELECT id, t_mid FROM units WHERE bank_id=? AND t_mid<=? ORDER BY t_mid DESC, label DESC LIMIT ?",
            (bank_id, t_mid, limit),
        )
        after = self._query(
            "SELECT id, t_mid FROM units WHERE bank_id=? AND t_mid>? ORDER BY t_mid ASC, label ASC LIMIT ?",
            (bank_id, t_mid, limit),
        )
        return [TimeNeighbour(r[0], r[1]) for r in before + after]

    def _links(self, where: str, params: Sequence[Any]) -> list[Link]:
        rows = self._query(
            "SELECT s.id, d.id, l.type, l.subtype, l.weight FROM links l JOIN units s ON s.label=l.src "
            f"JOIN units d ON d.label=l.dst WHERE {where}",
            params,
        )
        return [Link(src=r[0], dst=r[1], type=LinkType(r[2]), subtype=r[3], weight=r[4]) for r in rows]

    def links_of(self, bank_id: str, unit_id: str) -> list[Link]:
        rows = self._query("SELECT label FROM units WHERE bank_id=? AND id=?", (bank_id, unit_id))
        if not rows:
            return []
        label = rows[0][0]
        return self._links("l.src=? OR l.dst=? ORDER BY l.type, l.weight DESC", (label, label))

    def all_links(self, bank_id: str) -> list[Link]:
        return self._links("l.bank_id=?", (bank_id,))

    def unit_entity_pairs(self, bank_id: str) -> list[UnitEntity]:
        rows = self._query(
            "SELECT u.id, ue.entity_id FROM unit_entities ue JOIN units u ON u.label=ue.unit_label WHERE u.bank_id=?",
            (bank_id,),
        )
        return [UnitEntity(r[0], r[1]) for r in rows]
